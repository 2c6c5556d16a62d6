/*
 * placement.c - round-robin and balanced variable placement (placement.h).
 */
#include "task/placement.h"

#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

int tfj_placement_parse(enum tfj_place_kind *out, const char *s)
{
	if (!s)
		return tfj_err_set(TFJ_EINVAL, "placement: missing value");
	if (strcmp(s, "balanced") == 0) {
		*out = TFJ_PLACE_BALANCED;
		return 0;
	}
	if (strcmp(s, "round_robin") == 0 || strcmp(s, "round-robin") == 0 ||
	    strcmp(s, "rr") == 0) {
		*out = TFJ_PLACE_ROUND_ROBIN;
		return 0;
	}
	return tfj_err_set(TFJ_EINVAL, "placement: unknown strategy \"%.32s\" "
			   "(want balanced or round_robin)", s);
}

const char *tfj_placement_name(enum tfj_place_kind kind)
{
	return kind == TFJ_PLACE_ROUND_ROBIN ? "round_robin" : "balanced";
}

static int push_slice(struct tfj_placement *p, size_t *cap, uint32_t var, size_t off,
		      size_t count, uint32_t ps)
{
	if (p->nslices == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		struct tfj_place_slice *n;

		if (ncap > SIZE_MAX / sizeof(*n))
			return tfj_err_set(TFJ_ENOMEM, "placement: too many slices");
		n = realloc(p->slices, ncap * sizeof(*n));
		if (!n)
			return tfj_err_set(TFJ_ENOMEM, "placement: out of memory");
		p->slices = n;
		*cap = ncap;
	}
	p->slices[p->nslices].var = var;
	p->slices[p->nslices].offset = off;
	p->slices[p->nslices].count = count;
	p->slices[p->nslices].ps = ps;
	p->slices[p->nslices].shard_off = p->ps_size[ps];
	p->ps_size[ps] += count;
	p->nslices++;
	return 0;
}

/*
 * Balanced: cut the concatenation of all variables at j * total / nps. A cut
 * that falls within min_slice of a variable boundary moves onto it, so the
 * pieces of a split tensor are never tiny; loads then differ by at most
 * about min_slice elements.
 */
static int build_balanced(struct tfj_placement *p, size_t *cap, const size_t *counts,
			  size_t nvars, size_t total, size_t min_slice)
{
	size_t *cuts = NULL, *bounds = NULL;
	size_t nps = p->nps, j, v, pos;
	int rc = 0;

	cuts = calloc(nps + 1, sizeof(*cuts));
	bounds = calloc(nvars + 1, sizeof(*bounds));
	if (!cuts || !bounds) {
		rc = tfj_err_set(TFJ_ENOMEM, "placement: out of memory");
		goto out;
	}
	for (v = 0; v < nvars; v++)
		bounds[v + 1] = bounds[v] + counts[v];
	cuts[0] = 0;
	cuts[nps] = total;
	for (j = 1; j < nps; j++) {
		/* j * total / nps without overflow: total < 2^48 is checked by the caller. */
		size_t c = (size_t)(((unsigned long long)total * j) / nps);
		size_t best = c, bestd = (size_t)-1;

		for (v = 0; v <= nvars; v++) {
			size_t d = bounds[v] > c ? bounds[v] - c : c - bounds[v];
			if (d <= min_slice && d < bestd) {
				best = bounds[v];
				bestd = d;
			}
		}
		if (best < cuts[j - 1])
			best = cuts[j - 1];
		cuts[j] = best;
	}
	/* Walk the variables and emit the pieces between consecutive cuts. */
	pos = 0;
	j = 0;
	for (v = 0; v < nvars; v++) {
		size_t start = bounds[v], end = bounds[v + 1];

		pos = start;
		while (pos < end) {
			size_t stop;

			while (j < nps - 1 && cuts[j + 1] <= pos)
				j++;
			stop = cuts[j + 1] < end ? cuts[j + 1] : end;
			if (stop <= pos)
				stop = end; /* cannot happen with sorted cuts; keeps the loop finite */
			rc = push_slice(p, cap, (uint32_t)v, pos - start, stop - pos, (uint32_t)j);
			if (rc)
				goto out;
			pos = stop;
		}
	}
out:
	free(cuts);
	free(bounds);
	return rc;
}

int tfj_placement_build(struct tfj_placement *out, const size_t *counts, size_t nvars,
			size_t nps, enum tfj_place_kind kind, size_t min_slice)
{
	struct tfj_placement p = { 0 };
	size_t cap = 0, total = 0, v;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (nps < 1 || nps > TFJ_PLACE_MAX_PS)
		return tfj_err_set(TFJ_EINVAL, "placement: %zu ps tasks (want 1..%d)", nps,
				   TFJ_PLACE_MAX_PS);
	if (nvars < 1 || nvars > TFJ_PLACE_MAX_VARS || !counts)
		return tfj_err_set(TFJ_EINVAL, "placement: %zu variables", nvars);
	for (v = 0; v < nvars; v++) {
		if (counts[v] == 0)
			return tfj_err_set(TFJ_EINVAL, "placement: variable %zu is empty", v);
		if (counts[v] > ((size_t)1 << 40) || total > ((size_t)1 << 47))
			return tfj_err_set(TFJ_ETOOBIG, "placement: variables too large");
		total += counts[v];
	}
	p.nps = nps;
	p.ps_size = calloc(nps, sizeof(*p.ps_size));
	if (!p.ps_size)
		return tfj_err_set(TFJ_ENOMEM, "placement: out of memory");
	if (kind == TFJ_PLACE_ROUND_ROBIN) {
		for (v = 0; v < nvars && !rc; v++)
			rc = push_slice(&p, &cap, (uint32_t)v, 0, counts[v], (uint32_t)(v % nps));
	} else {
		rc = build_balanced(&p, &cap, counts, nvars, total, min_slice);
	}
	if (rc) {
		tfj_placement_free(&p);
		return rc;
	}
	*out = p;
	return 0;
}

double tfj_placement_imbalance(const struct tfj_placement *p)
{
	size_t j, max = 0, total = 0;

	if (!p || !p->nps)
		return 0.0;
	for (j = 0; j < p->nps; j++) {
		total += p->ps_size[j];
		if (p->ps_size[j] > max)
			max = p->ps_size[j];
	}
	return total ? (double)max * (double)p->nps / (double)total : 0.0;
}

static uint64_t fnv(uint64_t h, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++) {
		h ^= (v >> (8 * i)) & 0xff;
		h *= 1099511628211ULL;
	}
	return h;
}

uint64_t tfj_placement_hash(const struct tfj_placement *p, uint64_t seed)
{
	uint64_t h = 14695981039346656037ULL ^ seed;
	size_t i;

	h = fnv(h, p->nps);
	for (i = 0; i < p->nslices; i++) {
		h = fnv(h, p->slices[i].var);
		h = fnv(h, p->slices[i].offset);
		h = fnv(h, p->slices[i].count);
		h = fnv(h, p->slices[i].ps);
	}
	return h;
}

void tfj_placement_free(struct tfj_placement *p)
{
	if (!p)
		return;
	free(p->slices);
	free(p->ps_size);
	memset(p, 0, sizeof(*p));
}
