/*
 * shard_util.h - a model split over parameter-server shards, driven
 * directly (no transport) for the shard tests: config and layout from
 * flags, per-variable arrays, Slice messages pointing into them, Init and
 * pushes as the ps receives them (rx_util.h). Header-only (static).
 */
#ifndef TFJ_SHARD_UTIL_H
#define TFJ_SHARD_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "task/layout.h"
#include "task/rtconfig.h"
#include "rx_util.h"
#include "ps/shard.h"

#define MAX_PS 2

struct job {
	struct tfj_rtconfig cfg;
	struct tfj_layout layout;
	struct tfj_shard sh[MAX_PS];
	size_t nps;
};

#define JOB_MAX_EXTRA 6

/*
 * Every shard of a job of nps ps; extra: up to JOB_MAX_EXTRA more flags,
 * NULL-terminated (NULL for none), e.g. { "--sync", NULL }.
 */
static inline int job_init_with(struct job *j, const char *optim, const char *ps_hosts,
				size_t nps, const char *const *extra)
{
	char *argv[12 + JOB_MAX_EXTRA] = { "--job_name", "ps", "--ps_hosts", (char *)ps_hosts,
					   "--worker_hosts", "w:1", "--optimizer", (char *)optim,
					   "--learning_rate", "0.01", "--min_slice", "1" };
	int argc = 12;
	size_t i;

	memset(j, 0, sizeof(*j));
	j->nps = nps;
	for (i = 0; extra && extra[i]; i++) {
		if (i == JOB_MAX_EXTRA)
			return -1;
		argv[argc++] = (char *)extra[i];
	}
	if (tfj_rtconfig_parse(&j->cfg, argc, argv, NULL) || tfj_layout_build(&j->layout, &j->cfg))
		return -1;
	for (i = 0; i < nps; i++)
		if (tfj_shard_init(&j->sh[i], &j->layout, &j->cfg, (uint32_t)i))
			return -1;
	return 0;
}

static inline int job_init(struct job *j, const char *optim, const char *ps_hosts, size_t nps)
{
	return job_init_with(j, optim, ps_hosts, nps, NULL);
}

static inline void job_free(struct job *j)
{
	size_t i;

	for (i = 0; i < j->nps; i++)
		tfj_shard_free(&j->sh[i]);
	tfj_layout_free(&j->layout);
	tfj_rtconfig_free(&j->cfg);
}

/* Per-variable arrays of the model (values or gradients). */
static inline float **vars_new(const struct tfj_layout *p, size_t k)
{
	float **v = calloc(p->nvars, sizeof(*v));
	size_t i;

	for (i = 0; v && i < p->nvars; i++)
		v[i] = calloc(p->counts[i] * (k ? k : 1), sizeof(float));
	return v;
}

static inline void vars_free(const struct tfj_layout *p, float **v)
{
	size_t i;

	for (i = 0; v && i < p->nvars; i++)
		free(v[i]);
	free(v);
}

/* Slice messages of shard s pointing into the per-variable arrays v. */
static inline void point(const struct tfj_shard *s, Tfj__Runtime__V1__Slice *m,
		  Tfj__Runtime__V1__Slice **p, float **v)
{
	size_t i;

	for (i = 0; i < s->nslices; i++) {
		const struct tfj_place_slice *sl = s->slices[i];

		tfj__runtime__v1__slice__init(&m[i]);
		m[i].var = sl->var;
		m[i].offset = sl->offset;
		m[i].count = sl->count;
		m[i].data.data = (uint8_t *)(v[sl->var] + sl->offset);
		m[i].data.len = sl->count * sizeof(float);
		p[i] = &m[i];
	}
}

/* Init (no state) of every shard with the per-variable values v. */
static inline int load_all(struct job *j, float **v)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < j->nps && rc == 0; i++) {
		struct tfj_shard *s = &j->sh[i];
		Tfj__Runtime__V1__InitRequest q = TFJ__RUNTIME__V1__INIT_REQUEST__INIT;
		Tfj__Runtime__V1__Slice *m = calloc(s->nslices, sizeof(*m));
		Tfj__Runtime__V1__Slice **p = calloc(s->nslices, sizeof(*p));
		struct rx x;

		point(s, m, p, v);
		q.n_slices = s->nslices;
		q.slices = p;
		rc = rx_decode(&x, &q.base);
		if (rc == 0)
			rc = tfj_shard_load(s, x.m.t, x.m.nt, 0, x.m.st, x.m.nst, 0);
		rx_free(&x);
		free(m);
		free(p);
	}
	return rc;
}

/*
 * Pushes the gradient of shard s's slices [first, first + n) from the
 * per-variable arrays g, as one push with PushRequest.more = `more`.
 */
static inline int push_run(struct tfj_shard *s, float **g, size_t first, size_t n, int more,
		    Tfj__Runtime__V1__PushResult *res)
{
	Tfj__Runtime__V1__PushRequest q = TFJ__RUNTIME__V1__PUSH_REQUEST__INIT;
	Tfj__Runtime__V1__Slice *m = calloc(s->nslices, sizeof(*m));
	Tfj__Runtime__V1__Slice **p = calloc(s->nslices, sizeof(*p));
	struct rx x;
	int rc = -1;

	if (m && p) {
		point(s, m, p, g);
		q.step = s->step;
		q.n_slices = n;
		q.slices = p + first;
		q.max_steps = 100;
		q.more = more;
		rc = rx_decode(&x, &q.base);
		if (rc == 0)
			rc = tfj_shard_push(s, (Tfj__Runtime__V1__PushRequest *)x.m.head, x.m.t,
					    x.m.nt, res);
		rx_free(&x);
	}
	free(m);
	free(p);
	return rc;
}

/* Pushes the per-variable gradient g to every shard whole (async: applied). */
static inline int push_all(struct job *j, float **g)
{
	Tfj__Runtime__V1__PushResult res;
	size_t i;
	int rc = 0;

	for (i = 0; i < j->nps && rc == 0; i++)
		rc = push_run(&j->sh[i], g, 0, j->sh[i].nslices, 0, &res);
	return rc;
}

/* Deterministic, varied gradient for step t. */
static inline void fill_grad(const struct tfj_layout *p, float **g, int t)
{
	size_t i, e;

	for (i = 0; i < p->nvars; i++)
		for (e = 0; e < p->counts[i]; e++)
			g[i][e] = 0.01f * (float)((int)((e * 7919u + (size_t)t * 104729u + i) % 201) - 100);
}

#endif
