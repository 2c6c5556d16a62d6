/*
 * syncagg.c - synchronous gradient aggregation (syncagg.h).
 */
#include "ps/syncagg.h"

#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tensor payloads are little-endian; a big-endian port must byte-swap here"
#endif

int tfj_syncagg_init(struct tfj_syncagg *a, size_t n, uint32_t k, uint32_t nreplicas,
		     int64_t step)
{
	memset(a, 0, sizeof(*a));
	if (n == 0 || k == 0 || nreplicas == 0 || k > nreplicas || nreplicas > 65536 || step < 0)
		return tfj_err_set(TFJ_EINVAL, "syncagg: bad sizes n=%zu k=%u replicas=%u", n, k,
				   nreplicas);
	a->sum = calloc(n, sizeof(float));
	a->seen = calloc(nreplicas, 1);
	if (!a->sum || !a->seen) {
		tfj_syncagg_free(a);
		return tfj_err_set(TFJ_ENOMEM, "syncagg: out of memory");
	}
	a->n = n;
	a->k = k;
	a->nrep = nreplicas;
	a->step = step;
	return 0;
}

enum tfj_syncagg_verdict tfj_syncagg_check(struct tfj_syncagg *a, int64_t step,
					   uint32_t replica)
{
	if (step != a->step) {
		a->dropped_stale++;
		return TFJ_SYNCAGG_STALE;
	}
	if (replica >= a->nrep || a->seen[replica]) {
		a->dropped_dup++;
		return TFJ_SYNCAGG_DUPLICATE;
	}
	return TFJ_SYNCAGG_ACCEPT;
}

void tfj_syncagg_add(struct tfj_syncagg *a, size_t off, const uint8_t *bytes, size_t count)
{
	float *dst = a->sum + off;
	size_t i;

	for (i = 0; i < count; i++) {
		float g;

		memcpy(&g, bytes + i * sizeof(float), sizeof(float));
		dst[i] += g;
	}
}

int tfj_syncagg_commit(struct tfj_syncagg *a, uint32_t replica)
{
	if (replica < a->nrep && !a->seen[replica]) {
		a->seen[replica] = 1;
		a->count++;
	}
	return a->count >= a->k;
}

const float *tfj_syncagg_mean(struct tfj_syncagg *a)
{
	size_t i;

	if (a->count > 1) {
		float inv = 1.0f / (float)a->count;

		for (i = 0; i < a->n; i++)
			a->sum[i] *= inv;
	}
	return a->sum;
}

void tfj_syncagg_reset(struct tfj_syncagg *a, int64_t step)
{
	memset(a->sum, 0, a->n * sizeof(float));
	memset(a->seen, 0, a->nrep);
	a->count = 0;
	a->step = step;
}

void tfj_syncagg_free(struct tfj_syncagg *a)
{
	if (!a)
		return;
	free(a->sum);
	free(a->seen);
	a->sum = NULL;
	a->seen = NULL;
}
