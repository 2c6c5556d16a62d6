/*
 * test_shard_state.c - optimizer state in checkpoints and Init messages.
 *
 * For momentum and Adam a model split over two ps shards is trained a few
 * steps; its parameters and optimizer state are saved as a checkpoint
 * (assembled per variable, as the chief does from PullResponse.state) and
 * restored onto two fresh shards and onto one shard holding the whole model
 * (another placement). The next update must then be bitwise the update of
 * the shards that never stopped. The same state sent in an InitRequest
 * (split-decoded from 1001-byte slices, as the ps receives it) must do the
 * same. A checkpoint of another optimizer, or without state, starts the
 * state afresh; a restore without state visibly changes the next update
 * (so the comparison can fail); bad state is refused before anything
 * changes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <grpc/slice.h>

#include <tfj/err.h>

#include "data/checkpoint.h"
#include "task/layout.h"
#include "task/rtconfig.h"
#include "rx_util.h"
#include "ps/shard.h"
#include "shard_util.h"
#include "tfj_test.h"
#include "tfj_testutil.h"
#include "wire/wire.h"

/*
 * Gathers the job's values and state per variable (state: k blocks of the
 * variable's count), as the chief assembles them from its pulls.
 */
static void gather(const struct job *j, float **val, float **st)
{
	size_t i, k, b;

	for (i = 0; i < j->nps; i++) {
		const struct tfj_shard *s = &j->sh[i];

		k = tfj_shard_state_k(s);
		for (size_t q = 0; q < s->nslices; q++) {
			const struct tfj_place_slice *sl = s->slices[q];
			size_t vc = j->layout.counts[sl->var];

			memcpy(val[sl->var] + sl->offset, s->param + sl->shard_off,
			       sl->count * sizeof(float));
			for (b = 0; st && b < k; b++)
				memcpy(st[sl->var] + b * vc + sl->offset,
				       s->state + s->state_off[q] + b * sl->count,
				       sl->count * sizeof(float));
		}
	}
}

static int save_ckpt(const char *dir, const struct job *j, float **val, float **st,
		     uint32_t kind, int64_t optim_steps, char *path)
{
	struct tfj_ckpt ck = { 0 };
	struct tfj_ckpt_var *v = calloc(j->layout.nvars, sizeof(*v));
	size_t i, k = tfj_shard_state_k(&j->sh[0]);
	int rc;

	for (i = 0; i < j->layout.nvars; i++) {
		snprintf(v[i].name, sizeof(v[i].name), "%s", j->layout.vars[i].name);
		v[i].rank = (uint32_t)j->layout.vars[i].rank;
		v[i].shape[0] = j->layout.vars[i].shape[0];
		v[i].shape[1] = j->layout.vars[i].rank > 1 ? j->layout.vars[i].shape[1] : 0;
		v[i].count = j->layout.counts[i];
		v[i].value = val[i];
		v[i].state = st ? st[i] : NULL;
		v[i].state_count = st ? k * j->layout.counts[i] : 0;
	}
	ck.global_step = j->sh[0].step;
	ck.optim_kind = kind;
	ck.optim_steps = optim_steps;
	ck.n_vars = j->layout.nvars;
	ck.vars = v;
	rc = tfj_ckpt_save(dir, "model", &ck, path, 512);
	free(v);
	return rc;
}

static int restore_all(struct job *j, const char *path, int *with_state)
{
	struct tfj_ckpt ck = { 0 };
	size_t i;
	int rc = tfj_ckpt_load(&ck, path), ws = 1;

	for (i = 0; rc == 0 && i < j->nps; i++) {
		int w = 0;

		rc = tfj_shard_restore(&w, &j->sh[i], &ck);
		ws &= w;
	}
	tfj_ckpt_free(&ck);
	*with_state = ws;
	return rc;
}

/* Bitwise comparison of two jobs' parameters, per variable. */
static size_t diff_params(const struct job *a, const struct job *b)
{
	float **va = vars_new(&a->layout, 1), **vb = vars_new(&b->layout, 1);
	size_t i, bad = 0;

	gather(a, va, NULL);
	gather(b, vb, NULL);
	for (i = 0; i < a->layout.nvars; i++)
		if (memcmp(va[i], vb[i], a->layout.counts[i] * sizeof(float)) != 0)
			bad++;
	vars_free(&a->layout, va);
	vars_free(&b->layout, vb);
	return bad;
}

static void check_kind(const char *optim, uint32_t kind)
{
	struct job a, c, d, e, f;
	float **val, **st, **g, **st2, **val2;
	char dir[64], path[512];
	size_t i, k;
	int t, ws = -1;

	TFJ_CHECK_INT(tfj_testutil_tmpdir(dir, sizeof(dir), "tfj-shardstate"), 0);
	TFJ_CHECK_INT(job_init(&a, optim, "p:1,p:2", 2), 0);
	TFJ_CHECK_GE(a.sh[0].nslices, 1);
	TFJ_CHECK_GE(a.sh[1].nslices, 1);
	k = tfj_shard_state_k(&a.sh[0]);
	TFJ_CHECK(k == (kind == 2 ? 2u : 1u));
	val = vars_new(&a.layout, 1);
	g = vars_new(&a.layout, 1);
	st = vars_new(&a.layout, k);
	for (i = 0; i < a.layout.nvars; i++)
		for (size_t q = 0; q < a.layout.counts[i]; q++)
			val[i][q] = 0.001f * (float)((q * 31 + i) % 97);
	TFJ_CHECK_INT(load_all(&a, val), 0);
	for (t = 0; t < 5; t++) {
		fill_grad(&a.layout, g, t);
		TFJ_CHECK_INT(push_all(&a, g), 0);
	}
	TFJ_CHECK_INT(a.sh[0].opt_t, 5);

	/* Checkpoint (per variable, placement-free), then restore on 2 and on 1 shard. */
	gather(&a, val, st);
	TFJ_CHECK_INT(save_ckpt(dir, &a, val, st, kind, a.sh[0].opt_t, path), 0);
	TFJ_CHECK_INT(job_init(&c, optim, "p:1,p:2", 2), 0);
	TFJ_CHECK_INT(restore_all(&c, path, &ws), 0);
	TFJ_CHECK_INT(ws, 1);
	TFJ_CHECK_INT(c.sh[1].opt_t, 5);
	TFJ_CHECK_INT(c.sh[1].step, 5);
	for (i = 0; i < 2; i++)
		TFJ_CHECK(memcmp(c.sh[i].state, a.sh[i].state,
				 c.sh[i].state_off[c.sh[i].nslices] * sizeof(float)) == 0);
	TFJ_CHECK_INT(job_init(&d, optim, "p:1", 1), 0);
	TFJ_CHECK_INT(restore_all(&d, path, &ws), 0);
	TFJ_CHECK_INT(ws, 1);

	/* The same state through an InitRequest (what the chief sends). */
	TFJ_CHECK_INT(job_init(&e, optim, "p:1,p:2", 2), 0);
	for (i = 0; i < 2; i++) {
		struct tfj_shard *s = &a.sh[i];
		Tfj__Runtime__V1__InitRequest q = TFJ__RUNTIME__V1__INIT_REQUEST__INIT;
		Tfj__Runtime__V1__Slice *m = calloc(s->nslices, sizeof(*m));
		Tfj__Runtime__V1__Slice **p = calloc(s->nslices, sizeof(*p));
		Tfj__Runtime__V1__Slice *sm = calloc(s->nslices, sizeof(*sm));
		Tfj__Runtime__V1__Slice **sp = calloc(s->nslices, sizeof(*sp));
		struct rx x;

		tfj_shard_describe(s, m, p, s->param);
		q.step = s->step;
		q.n_slices = s->nslices;
		q.slices = p;
		q.n_state = tfj_shard_describe_state(s, sm, sp);
		q.state = sp;
		q.optim_steps = s->opt_t;
		TFJ_CHECK_INT(q.n_state, s->nslices);
		TFJ_CHECK_INT(rx_decode(&x, &q.base), 0);
		TFJ_CHECK_INT(x.m.nst, s->nslices);
		TFJ_CHECK_INT(tfj_shard_load(&e.sh[i], x.m.t, x.m.nt, q.step, x.m.st, x.m.nst,
					     q.optim_steps), 0);
		rx_free(&x);
		free(m);
		free(p);
		free(sm);
		free(sp);
	}

	/* Control: the same checkpoint without state restores parameters only. */
	TFJ_CHECK_INT(save_ckpt(dir, &a, val, NULL, kind, 0, path), 0);
	TFJ_CHECK_INT(job_init(&f, optim, "p:1,p:2", 2), 0);
	TFJ_CHECK_INT(restore_all(&f, path, &ws), 0);
	TFJ_CHECK_INT(ws, 0);
	TFJ_CHECK_INT(f.sh[0].opt_t, 0);
	TFJ_CHECK_INT(diff_params(&a, &f), 0); /* same parameters before the next step */

	/* One more step everywhere: state restored = never stopped, bit for bit. */
	fill_grad(&a.layout, g, 5);
	TFJ_CHECK_INT(push_all(&a, g), 0);
	TFJ_CHECK_INT(push_all(&c, g), 0);
	TFJ_CHECK_INT(push_all(&d, g), 0);
	TFJ_CHECK_INT(push_all(&e, g), 0);
	TFJ_CHECK_INT(push_all(&f, g), 0);
	TFJ_CHECK_INT(diff_params(&a, &c), 0);
	TFJ_CHECK_INT(diff_params(&a, &d), 0);
	TFJ_CHECK_INT(diff_params(&a, &e), 0);
	TFJ_CHECK_GT(diff_params(&a, &f), 0); /* without state the update differs */
	st2 = vars_new(&a.layout, k);
	val2 = vars_new(&a.layout, 1);
	gather(&a, val, st);
	gather(&d, val2, st2);
	for (i = 0; i < a.layout.nvars; i++)
		TFJ_CHECK(memcmp(st[i], st2[i], k * a.layout.counts[i] * sizeof(float)) == 0);
	printf("  %s: 2 ps -> 2 ps, 2 ps -> 1 ps, Init with state: identical next update\n",
	       optim);

	/* Another optimizer's checkpoint: parameters restored, state afresh. */
	TFJ_CHECK_INT(save_ckpt(dir, &a, val, st, kind == 1 ? 2 : 1, 6, path), 0);
	TFJ_CHECK_INT(restore_all(&f, path, &ws), 0);
	TFJ_CHECK_INT(ws, 0);
	TFJ_CHECK(f.sh[0].state[0] == 0.0f && f.sh[0].opt_t == 0);
	TFJ_CHECK_INT(diff_params(&a, &f), 0);

	vars_free(&a.layout, val);
	vars_free(&a.layout, val2);
	vars_free(&a.layout, g);
	vars_free(&a.layout, st);
	vars_free(&a.layout, st2);
	job_free(&a);
	job_free(&c);
	job_free(&d);
	job_free(&e);
	job_free(&f);
	unlink(path);
	rmdir(dir);
}

static void test_momentum(void)
{
	check_kind("momentum", 1);
}

static void test_adam(void)
{
	check_kind("adam", 2);
}

/* An Init whose state is bad changes nothing. */
static void test_bad_state(void)
{
	struct job j;
	struct tfj_shard *s;
	Tfj__Runtime__V1__InitRequest q = TFJ__RUNTIME__V1__INIT_REQUEST__INIT;
	Tfj__Runtime__V1__Slice *m, **p, *sm, **sp;
	float *vals, *st, before;
	struct rx x;
	size_t ns, stn;

	TFJ_CHECK_INT(job_init(&j, "adam", "p:1", 1), 0);
	s = &j.sh[0];
	ns = s->nslices;
	stn = s->state_off[ns];
	vals = calloc(s->n, sizeof(float));
	st = calloc(stn, sizeof(float));
	m = calloc(ns, sizeof(*m));
	p = calloc(ns, sizeof(*p));
	sm = calloc(ns, sizeof(*sm));
	sp = calloc(ns, sizeof(*sp));
	for (size_t i = 0; i < s->n; i++)
		vals[i] = 0.5f;
	tfj_shard_describe(s, m, p, vals);
	q.n_slices = ns;
	q.slices = p;
	TFJ_CHECK_INT(tfj_shard_describe_state(s, sm, sp), ns);
	for (size_t i = 0; i < ns; i++)
		sm[i].data.data = (uint8_t *)(st + s->state_off[i]);
	q.n_state = ns;
	q.state = sp;
	before = s->param[0];

	/* NaN in m. */
	st[3] = NAN;
	TFJ_CHECK_INT(rx_decode(&x, &q.base), 0);
	TFJ_CHECK_INT(tfj_shard_load(s, x.m.t, x.m.nt, 0, x.m.st, x.m.nst, 1), TFJ_ENUMERIC);
	rx_free(&x);
	TFJ_CHECK(!s->initialized && s->param[0] == before);
	st[3] = 0.0f;
	/* Negative second moment (the last slice's v block). */
	st[stn - 1] = -1.0f;
	TFJ_CHECK_INT(rx_decode(&x, &q.base), 0);
	TFJ_CHECK_INT(tfj_shard_load(s, x.m.t, x.m.nt, 0, x.m.st, x.m.nst, 1), TFJ_ENUMERIC);
	rx_free(&x);
	st[stn - 1] = -0.0f; /* negative zero is zero */
	/* Wrong length. */
	sm[0].data.len -= 4;
	TFJ_CHECK_INT(rx_decode(&x, &q.base), 0);
	TFJ_CHECK_INT(tfj_shard_load(s, x.m.t, x.m.nt, 0, x.m.st, x.m.nst, 1), TFJ_EINVAL);
	rx_free(&x);
	sm[0].data.len += 4;
	TFJ_CHECK(!s->initialized);
	/* Good state: loaded. */
	st[0] = 0.25f;
	TFJ_CHECK_INT(rx_decode(&x, &q.base), 0);
	TFJ_CHECK_INT(tfj_shard_load(s, x.m.t, x.m.nt, 7, x.m.st, x.m.nst, 7), 0);
	rx_free(&x);
	TFJ_CHECK(s->initialized && s->state[0] == 0.25f && s->opt_t == 7 && s->param[0] == 0.5f);
	/* Too few state slices. */
	q.n_state = ns - 1;
	TFJ_CHECK_INT(rx_decode(&x, &q.base), 0);
	TFJ_CHECK_INT(tfj_shard_load(s, x.m.t, x.m.nt, 0, x.m.st, x.m.nst, 1),
		      ns > 1 ? TFJ_EINVAL : 0);
	rx_free(&x);
	free(vals);
	free(st);
	free(m);
	free(p);
	free(sm);
	free(sp);
	job_free(&j);
}

int main(void)
{
	TFJ_RUN(test_momentum);
	TFJ_RUN(test_adam);
	TFJ_RUN(test_bad_state);
	return tfj_test_finish();
}
