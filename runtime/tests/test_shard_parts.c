/*
 * test_shard_parts.c - a step's push in parts (PushRequest.more, the ps
 * side of --overlap push).
 *
 * For SGD, momentum and Adam, an MLP on one ps is trained three steps with
 * whole pushes and, from the same start, with every step pushed in three
 * parts, last variables first as a backward pass makes them: the
 * parameters must be bitwise the same (each part sees the step's rate and
 * Adam's t) and the step must count once per step, with the parts that
 * had more to come counted apart. A part with more false ends the step
 * whichever run it carries. Refused, with nothing changed: parts in sync
 * training, a part whose slices are not one run of the table, a part
 * holding NaN.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <tfj/err.h>

#include "shard.h"
#include "shard_util.h"
#include "tfj_test.h"

static const char *const mlp[] = { "--model", "mlp", "--hidden", "8,6", NULL };
static const char *const mlp_sync[] = { "--model", "mlp", "--hidden", "8,6", "--sync", NULL };

/* Pushes g to shard s in runs [cut[i], cut[i-1]), cuts descending to 0. */
static int push_parts(struct tfj_shard *s, float **g, const size_t *cut, size_t ncut)
{
	Tfj__Runtime__V1__PushResult res;
	size_t hi = s->nslices, i;
	int rc = 0;

	for (i = 0; i < ncut && rc == 0; i++) {
		rc = push_run(s, g, cut[i], hi - cut[i], cut[i] > 0, &res);
		if (rc == 0 && res != TFJ__RUNTIME__V1__PUSH_RESULT__PUSH_APPLIED)
			rc = -1;
		hi = cut[i];
	}
	return rc;
}

static void check_parts_equal_whole(const char *optim)
{
	struct job whole, parts;
	float **v = NULL, **g = NULL;
	size_t cut[3], n;
	int t;

	printf("%s\n", optim);
	TFJ_CHECK_INT(job_init_with(&whole, optim, "p:1", 1, mlp), 0);
	TFJ_CHECK_INT(job_init_with(&parts, optim, "p:1", 1, mlp), 0);
	v = vars_new(&whole.plan, 0);
	g = vars_new(&whole.plan, 0);
	n = whole.sh[0].nslices;
	/* dense_0, dense_1 and logits, kernel and bias each: 6 slices, min_slice 1. */
	TFJ_CHECK_INT((long long)n, 6);
	if (!v || !g || n != 6)
		goto out;
	fill_grad(&whole.plan, v, 99);
	TFJ_CHECK_INT(load_all(&whole, v), 0);
	TFJ_CHECK_INT(load_all(&parts, v), 0);
	cut[0] = 4;
	cut[1] = 2;
	cut[2] = 0;
	for (t = 0; t < 3; t++) {
		fill_grad(&whole.plan, g, t);
		TFJ_CHECK_INT(push_all(&whole, g), 0);
		TFJ_CHECK_INT(push_parts(&parts.sh[0], g, cut, 3), 0);
	}
	TFJ_CHECK_INT(parts.sh[0].step, 3);
	TFJ_CHECK_INT(whole.sh[0].step, 3);
	TFJ_CHECK_INT((long long)parts.sh[0].applied, 3);
	TFJ_CHECK_INT((long long)parts.sh[0].parts, 6);
	TFJ_CHECK_INT((long long)whole.sh[0].parts, 0);
	TFJ_CHECK_INT(parts.sh[0].opt_t, whole.sh[0].opt_t);
	TFJ_CHECK(memcmp(parts.sh[0].param, whole.sh[0].param,
			 whole.sh[0].n * sizeof(float)) == 0);
	if (whole.sh[0].state)
		TFJ_CHECK(memcmp(parts.sh[0].state, whole.sh[0].state,
				 whole.sh[0].state_off[n] * sizeof(float)) == 0);
out:
	vars_free(&whole.plan, v);
	vars_free(&whole.plan, g);
	job_free(&whole);
	job_free(&parts);
}

static void test_sgd(void)
{
	check_parts_equal_whole("sgd");
}

static void test_momentum(void)
{
	check_parts_equal_whole("momentum");
}

static void test_adam(void)
{
	check_parts_equal_whole("adam");
}

/* The step counts at the part with more false, and only there. */
static void test_step_counts_at_last_part(void)
{
	Tfj__Runtime__V1__PushResult res;
	struct job j;
	float **g = NULL;
	struct tfj_shard *s = &j.sh[0];
	uint64_t version;

	TFJ_CHECK_INT(job_init_with(&j, "sgd", "p:1", 1, mlp), 0);
	g = vars_new(&j.plan, 0);
	if (!g)
		goto out;
	fill_grad(&j.plan, g, 1);
	TFJ_CHECK_INT(load_all(&j, g), 0);
	version = s->version;
	TFJ_CHECK_INT(push_run(s, g, 2, 4, 1, &res), 0);
	TFJ_CHECK_INT(s->step, 0);
	TFJ_CHECK(s->version != version);
	/* The last part may be any run: here the first two slices. */
	TFJ_CHECK_INT(push_run(s, g, 0, 2, 0, &res), 0);
	TFJ_CHECK_INT(s->step, 1);
	/* A part of a single slice with more false is a (small) step of its own. */
	TFJ_CHECK_INT(push_run(s, g, 5, 1, 0, &res), 0);
	TFJ_CHECK_INT(s->step, 2);
	TFJ_CHECK_INT((long long)s->parts, 1);
out:
	vars_free(&j.plan, g);
	job_free(&j);
}

static void test_refused(void)
{
	Tfj__Runtime__V1__PushResult res;
	struct job j, sj;
	float **g = NULL;
	struct tfj_shard *s = &j.sh[0];
	uint64_t version;
	int64_t step;

	TFJ_CHECK_INT(job_init_with(&j, "momentum", "p:1", 1, mlp), 0);
	TFJ_CHECK_INT(job_init_with(&sj, "sgd", "p:1", 1, mlp_sync), 0);
	g = vars_new(&j.plan, 0);
	if (!g)
		goto out;
	fill_grad(&j.plan, g, 2);
	TFJ_CHECK_INT(load_all(&j, g), 0);
	version = s->version;
	step = s->step;
	{
		Tfj__Runtime__V1__PushRequest q = TFJ__RUNTIME__V1__PUSH_REQUEST__INIT;
		Tfj__Runtime__V1__Slice m[6], *p[6];
		struct rx x;

		/* Slices 1 and 3: not one run. */
		point(s, m, p, g);
		p[2] = p[3];
		q.n_slices = 2;
		q.slices = p + 1;
		q.more = 1;
		TFJ_CHECK_INT(rx_decode(&x, &q.base), 0);
		TFJ_CHECK_INT(tfj_shard_push(s, (Tfj__Runtime__V1__PushRequest *)x.m.head, x.m.t,
					     x.m.nt, &res), TFJ_EINVAL);
		printf("refused: %s\n", tfj_err_detail());
		rx_free(&x);
		/* A slice that starts off the table's slice boundaries. */
		point(s, m, p, g);
		m[2].offset = 1;
		m[2].count--;
		m[2].data.len -= sizeof(float);
		q.n_slices = 1;
		q.slices = p + 2;
		TFJ_CHECK_INT(rx_decode(&x, &q.base), 0);
		TFJ_CHECK_INT(tfj_shard_push(s, (Tfj__Runtime__V1__PushRequest *)x.m.head, x.m.t,
					     x.m.nt, &res), TFJ_EINVAL);
		printf("refused: %s\n", tfj_err_detail());
		rx_free(&x);
	}
	TFJ_CHECK(s->version == version);
	/* NaN in a part: refused before anything of that part changes. */
	g[3][0] = NAN;
	TFJ_CHECK_INT(push_run(s, g, 2, 2, 1, &res), TFJ_ENUMERIC);
	TFJ_CHECK(s->version == version);
	TFJ_CHECK_INT(s->step, step);
	g[3][0] = 0.5f;
	/* Sync training takes whole pushes only. */
	fill_grad(&sj.plan, g, 3);
	TFJ_CHECK_INT(load_all(&sj, g), 0);
	version = sj.sh[0].version;
	TFJ_CHECK_INT(push_run(&sj.sh[0], g, 2, 1, 1, &res), TFJ_EINVAL);
	printf("sync: %s\n", tfj_err_detail());
	TFJ_CHECK(strstr(tfj_err_detail(), "sync") != NULL);
	TFJ_CHECK_INT(push_run(&sj.sh[0], g, 0, 3, 0, &res), TFJ_EINVAL);
	TFJ_CHECK(sj.sh[0].version == version);
	TFJ_CHECK_INT(sj.sh[0].step, 0);
out:
	vars_free(&j.plan, g);
	job_free(&j);
	job_free(&sj);
}

int main(void)
{
	TFJ_RUN(test_sgd);
	TFJ_RUN(test_momentum);
	TFJ_RUN(test_adam);
	TFJ_RUN(test_step_counts_at_last_part);
	TFJ_RUN(test_refused);
	return tfj_test_finish();
}
