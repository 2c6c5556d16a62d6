/*
 * test_syncagg.c - synchronous aggregation: stale gradients dropped,
 * duplicates dropped, k of n (backup workers), the mean applied once per
 * step; and the same rules end to end through a ps shard.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/grpc.h>
#include <grpc/slice.h>

#include <tfj/err.h>

#include "task/layout.h"
#include "task/rtconfig.h"
#include "rx_util.h"
#include "ps/shard.h"
#include "ps/syncagg.h"
#include "tfj_test.h"
#include "wire/wire.h"

static void add_const(struct tfj_syncagg *a, float v)
{
	float buf[4] = { v, v, v, v };

	tfj_syncagg_add(a, 0, (const uint8_t *)buf, 4);
}

static void test_aggregator(void)
{
	struct tfj_syncagg a;
	const float *m;

	TFJ_CHECK_INT(tfj_syncagg_init(&a, 4, 2, 3, 5), 0);
	TFJ_CHECK_INT(tfj_syncagg_check(&a, 4, 0), TFJ_SYNCAGG_STALE);
	TFJ_CHECK_INT(tfj_syncagg_check(&a, 6, 0), TFJ_SYNCAGG_STALE);
	TFJ_CHECK_INT(tfj_syncagg_check(&a, 5, 3), TFJ_SYNCAGG_DUPLICATE); /* no such replica */
	TFJ_CHECK_INT(tfj_syncagg_check(&a, 5, 1), TFJ_SYNCAGG_ACCEPT);
	add_const(&a, 1.0f);
	TFJ_CHECK_INT(tfj_syncagg_commit(&a, 1), 0);
	TFJ_CHECK_INT(tfj_syncagg_check(&a, 5, 1), TFJ_SYNCAGG_DUPLICATE);
	TFJ_CHECK_INT(tfj_syncagg_check(&a, 5, 2), TFJ_SYNCAGG_ACCEPT);
	add_const(&a, 3.0f);
	TFJ_CHECK_INT(tfj_syncagg_commit(&a, 2), 1); /* 2 of 3: replica 0 is the backup */
	m = tfj_syncagg_mean(&a);
	TFJ_CHECK_LT(fabsf(m[0] - 2.0f), 1e-6f);
	TFJ_CHECK_LT(fabsf(m[3] - 2.0f), 1e-6f);
	tfj_syncagg_reset(&a, 6);
	/* The backup's late gradient for step 5 is stale now. */
	TFJ_CHECK_INT(tfj_syncagg_check(&a, 5, 0), TFJ_SYNCAGG_STALE);
	TFJ_CHECK_INT(tfj_syncagg_check(&a, 6, 1), TFJ_SYNCAGG_ACCEPT);
	TFJ_CHECK_INT(a.count, 0);
	TFJ_CHECK(a.sum[0] == 0.0f);
	TFJ_CHECK_INT(a.dropped_stale, 3);
	tfj_syncagg_free(&a);
	TFJ_CHECK_LT(tfj_syncagg_init(&a, 4, 4, 3, 0), 0);
	TFJ_CHECK_LT(tfj_syncagg_init(&a, 0, 1, 1, 0), 0);
}

/* A softmax model on 2 ps, 3 replicas, sync with 2 to aggregate, SGD lr 1. */
struct fixture {
	struct tfj_rtconfig cfg;
	struct tfj_layout layout;
	struct tfj_shard shard;
};

static int fixture_init(struct fixture *f, const char *sync)
{
	char *argv[] = { "--job_name", "ps", "--ps_hosts", "p:1,p:2", "--worker_hosts",
			 "w:1,w:2,w:3", "--optimizer", "sgd", "--learning_rate", "1",
			 (char *)sync, "--replicas_to_aggregate", "2" };
	int argc = sync ? 13 : 10;

	memset(f, 0, sizeof(*f));
	if (tfj_rtconfig_parse(&f->cfg, argc, argv, NULL) != 0)
		return -1;
	if (tfj_layout_build(&f->layout, &f->cfg) != 0)
		return -1;
	return tfj_shard_init(&f->shard, &f->layout, &f->cfg, 0);
}

static void fixture_free(struct fixture *f)
{
	tfj_shard_free(&f->shard);
	tfj_layout_free(&f->layout);
	tfj_rtconfig_free(&f->cfg);
}

/* A push of constant gradient g for every slice of the shard. */
struct push {
	Tfj__Runtime__V1__PushRequest req;
	Tfj__Runtime__V1__Slice *msgs, **ptrs;
	float *vals;
};

static void make_push(struct push *p, const struct tfj_shard *s, int64_t step, uint32_t rep,
		      float g)
{
	size_t i;

	p->vals = malloc(s->n * sizeof(float));
	p->msgs = calloc(s->nslices, sizeof(*p->msgs));
	p->ptrs = calloc(s->nslices, sizeof(*p->ptrs));
	for (i = 0; i < s->n; i++)
		p->vals[i] = g;
	tfj_shard_describe(s, p->msgs, p->ptrs, p->vals);
	tfj__runtime__v1__push_request__init(&p->req);
	p->req.step = step;
	p->req.replica = rep;
	p->req.n_slices = s->nslices;
	p->req.slices = p->ptrs;
}

static void free_push(struct push *p)
{
	free(p->vals);
	free(p->msgs);
	free(p->ptrs);
}

static int push_msg(struct tfj_shard *s, struct push *p, Tfj__Runtime__V1__PushResult *res)
{
	struct rx x;
	int rc = rx_decode(&x, &p->req.base);

	if (rc == 0)
		rc = tfj_shard_push(s, (Tfj__Runtime__V1__PushRequest *)x.m.head, x.m.t, x.m.nt, res);
	rx_free(&x);
	return rc;
}

static int push(struct tfj_shard *s, int64_t step, uint32_t rep, float g,
		Tfj__Runtime__V1__PushResult *res)
{
	struct push p;
	int rc;

	make_push(&p, s, step, rep, g);
	rc = push_msg(s, &p, res);
	free_push(&p);
	return rc;
}

static int load_const(struct tfj_shard *s, int64_t step, float v)
{
	Tfj__Runtime__V1__InitRequest q = TFJ__RUNTIME__V1__INIT_REQUEST__INIT;
	struct push p;
	struct rx x;
	int rc;

	make_push(&p, s, 0, 0, v);
	q.step = step;
	q.n_slices = p.req.n_slices;
	q.slices = p.req.slices;
	rc = rx_decode(&x, &q.base);
	if (rc == 0)
		rc = tfj_shard_load(s, x.m.t, x.m.nt, step, NULL, 0, 0);
	rx_free(&x);
	free_push(&p);
	return rc;
}

static void load_zero(struct tfj_shard *s, int64_t step)
{
	TFJ_CHECK_INT(load_const(s, step, 0.0f), 0);
}

static void test_shard_sync(void)
{
	struct fixture f;
	Tfj__Runtime__V1__PushResult r;

	TFJ_CHECK_INT(fixture_init(&f, "--sync"), 0);
	TFJ_CHECK_INT(push(&f.shard, 0, 0, 1.0f, &r), TFJ_EUNAVAIL); /* not initialised */
	load_zero(&f.shard, 10);
	TFJ_CHECK_INT(push(&f.shard, 10, 0, 1.0f, &r), 0);
	TFJ_CHECK_INT(r, TFJ__RUNTIME__V1__PUSH_RESULT__PUSH_AGGREGATED);
	TFJ_CHECK_INT(f.shard.step, 10);
	TFJ_CHECK(f.shard.param[0] == 0.0f); /* nothing applied before k gradients */
	TFJ_CHECK_INT(push(&f.shard, 10, 0, 5.0f, &r), 0);
	TFJ_CHECK_INT(r, TFJ__RUNTIME__V1__PUSH_RESULT__PUSH_DUPLICATE);
	TFJ_CHECK_INT(push(&f.shard, 9, 1, 5.0f, &r), 0);
	TFJ_CHECK_INT(r, TFJ__RUNTIME__V1__PUSH_RESULT__PUSH_STALE);
	TFJ_CHECK_INT(push(&f.shard, 10, 2, 3.0f, &r), 0);
	TFJ_CHECK_INT(r, TFJ__RUNTIME__V1__PUSH_RESULT__PUSH_AGGREGATED);
	/* Mean of 1 and 3, SGD lr 1: every parameter moved by -2. */
	TFJ_CHECK_INT(f.shard.step, 11);
	TFJ_CHECK_LT(fabsf(f.shard.param[0] + 2.0f), 1e-6f);
	TFJ_CHECK_LT(fabsf(f.shard.param[f.shard.n - 1] + 2.0f), 1e-6f);
	/* Replica 1 was the backup worker: its step-10 gradient is dropped. */
	TFJ_CHECK_INT(push(&f.shard, 10, 1, 100.0f, &r), 0);
	TFJ_CHECK_INT(r, TFJ__RUNTIME__V1__PUSH_RESULT__PUSH_STALE);
	TFJ_CHECK_LT(fabsf(f.shard.param[0] + 2.0f), 1e-6f);
	TFJ_CHECK_INT(f.shard.stale, 2);
	TFJ_CHECK_INT(f.shard.duplicate, 1);
	/* NaN is refused and leaves the accumulator untouched. */
	TFJ_CHECK_INT(push(&f.shard, 11, 1, NAN, &r), TFJ_ENUMERIC);
	TFJ_CHECK_INT(push(&f.shard, 11, 1, 1.0f, &r), 0);
	TFJ_CHECK_INT(push(&f.shard, 11, 0, 1.0f, &r), 0);
	TFJ_CHECK_INT(f.shard.step, 12);
	TFJ_CHECK_LT(fabsf(f.shard.param[0] + 3.0f), 1e-6f);
	/* Unknown replica index. */
	TFJ_CHECK_INT(push(&f.shard, 12, 7, 1.0f, &r), TFJ_EINVAL);
	/* After Finish nothing is applied. */
	f.shard.finished = 1;
	TFJ_CHECK_INT(push(&f.shard, 12, 0, 1.0f, &r), 0);
	TFJ_CHECK_INT(r, TFJ__RUNTIME__V1__PUSH_RESULT__PUSH_FINISHED);
	fixture_free(&f);
}

static void test_shard_async_and_bad_slices(void)
{
	struct fixture f;
	Tfj__Runtime__V1__PushResult r;
	struct push p;

	TFJ_CHECK_INT(fixture_init(&f, NULL), 0);
	load_zero(&f.shard, 0);
	TFJ_CHECK_INT(push(&f.shard, 0, 0, 1.0f, &r), 0);
	TFJ_CHECK_INT(r, TFJ__RUNTIME__V1__PUSH_RESULT__PUSH_APPLIED);
	TFJ_CHECK_INT(push(&f.shard, 0, 1, 1.0f, &r), 0); /* old step: async applies anyway */
	TFJ_CHECK_INT(f.shard.step, 2);
	TFJ_CHECK_LT(fabsf(f.shard.param[0] + 2.0f), 1e-6f);
	/* Slices that do not match the placement are refused. */
	make_push(&p, &f.shard, 2, 0, 1.0f);
	p.msgs[0].count--;
	TFJ_CHECK_INT(push_msg(&f.shard, &p, &r), TFJ_EINVAL);
	p.msgs[0].count++;
	p.msgs[0].data.len -= 4;
	TFJ_CHECK_INT(push_msg(&f.shard, &p, &r), TFJ_EINVAL);
	p.msgs[0].data.len += 4;
	p.req.n_slices = 0;
	TFJ_CHECK_INT(push_msg(&f.shard, &p, &r), TFJ_EINVAL);
	p.req.n_slices = f.shard.nslices;
	/* One Inf in the last chunk: refused, and nothing was applied. */
	p.vals[f.shard.n - 1] = INFINITY;
	TFJ_CHECK_INT(push_msg(&f.shard, &p, &r), TFJ_ENUMERIC);
	TFJ_CHECK_LT(fabsf(f.shard.param[0] + 2.0f), 1e-6f);
	TFJ_CHECK_LT(fabsf(f.shard.param[f.shard.n - 1] + 2.0f), 1e-6f);
	free_push(&p);
	TFJ_CHECK_INT(f.shard.step, 2);
	/* A non-finite Init value leaves the parameters as they were. */
	TFJ_CHECK_INT(load_const(&f.shard, 5, NAN), TFJ_ENUMERIC);
	TFJ_CHECK_LT(fabsf(f.shard.param[0] + 2.0f), 1e-6f);
	TFJ_CHECK_INT(f.shard.step, 2);
	fixture_free(&f);
}

/*
 * Distinct per-element gradients, larger than one chunk, through slices that
 * cut floats in half: every element gets exactly its own update.
 */
static void test_shard_chunked_apply(void)
{
	struct fixture f;
	Tfj__Runtime__V1__PushResult r;
	struct push p;
	size_t i, bad = 0;

	char *argv[] = { "--job_name", "ps", "--ps_hosts", "p:1,p:2", "--worker_hosts", "w:1",
			 "--optimizer", "sgd", "--learning_rate", "1", "--model", "mlp",
			 "--hidden", "64" };

	memset(&f, 0, sizeof(f));
	TFJ_CHECK_INT(tfj_rtconfig_parse(&f.cfg, 14, argv, NULL), 0);
	TFJ_CHECK_INT(tfj_layout_build(&f.layout, &f.cfg), 0);
	TFJ_CHECK_INT(tfj_shard_init(&f.shard, &f.layout, &f.cfg, 0), 0);
	TFJ_CHECK_GT(f.shard.n, 2 * TFJ_SHARD_CHUNK);
	load_zero(&f.shard, 0);
	make_push(&p, &f.shard, 0, 0, 0.0f);
	for (i = 0; i < f.shard.n; i++)
		p.vals[i] = (float)(i % 1000) * 0.25f;
	TFJ_CHECK_INT(push_msg(&f.shard, &p, &r), 0);
	TFJ_CHECK_INT(r, TFJ__RUNTIME__V1__PUSH_RESULT__PUSH_APPLIED);
	for (i = 0; i < f.shard.n; i++)
		if (f.shard.param[i] != -(float)(i % 1000) * 0.25f)
			bad++;
	TFJ_CHECK_INT(bad, 0);
	free_push(&p);
	fixture_free(&f);
}

/* The prewrite hook runs before every change and may swap the buffer. */
static float *swapped;
static int hook_calls;

static int swap_hook(struct tfj_shard *s, void *ud)
{
	(void)ud;
	hook_calls++;
	memcpy(swapped, s->param, s->n * sizeof(float));
	s->param = swapped;
	return 0;
}

static int refuse_hook(struct tfj_shard *s, void *ud)
{
	(void)s;
	(void)ud;
	return tfj_err_set(TFJ_EUNAVAIL, "busy");
}

static void test_shard_prewrite(void)
{
	struct fixture f;
	Tfj__Runtime__V1__PushResult r;
	float *orig;

	TFJ_CHECK_INT(fixture_init(&f, NULL), 0);
	load_zero(&f.shard, 0);
	orig = f.shard.param;
	swapped = calloc(f.shard.n, sizeof(float));
	TFJ_CHECK(swapped != NULL);
	f.shard.prewrite = swap_hook;
	TFJ_CHECK_INT(push(&f.shard, 0, 0, 1.0f, &r), 0);
	TFJ_CHECK_INT(hook_calls, 1);
	TFJ_CHECK(f.shard.param == swapped && orig[0] == 0.0f && swapped[0] == -1.0f);
	f.shard.prewrite = refuse_hook;
	TFJ_CHECK_INT(push(&f.shard, 1, 0, 1.0f, &r), TFJ_EUNAVAIL);
	TFJ_CHECK_INT(f.shard.step, 1);
	TFJ_CHECK(swapped[0] == -1.0f);
	/* The hook's buffer is the caller's to free (see shard.h). */
	f.shard.param = orig;
	f.shard.prewrite = NULL;
	free(swapped);
	fixture_free(&f);
}

int main(void)
{
	TFJ_RUN(test_aggregator);
	TFJ_RUN(test_shard_sync);
	TFJ_RUN(test_shard_async_and_bad_slices);
	TFJ_RUN(test_shard_chunked_apply);
	TFJ_RUN(test_shard_prewrite);
	return tfj_test_finish();
}
