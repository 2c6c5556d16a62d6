/*
 * test_shard_parts.c - a step's push in parts (PushRequest.more, the ps
 * side of --overlap push).
 *
 * For SGD, momentum and Adam, an MLP on one ps is trained three steps with
 * whole pushes and, from the same start, with every step pushed in three
 * parts, last variables first as a backward pass makes them: the
 * parameters must be bitwise the same (each part sees the step's rate and
 * Adam's t) and the step must count once per step, with the parts that
 * had more to come counted apart. The same with parts cut at any element
 * by pushparts.c (the client's cut of a large push): pieces of slices,
 * parts of 1, 7, 100 and 1000 floats, on one ps and on two. A part with
 * more false ends the step whichever run it carries. Refused, with nothing
 * changed: parts in sync training, a part whose slices are not one run of
 * the buffer (slices apart, a piece that runs past its slice, a gap
 * between two pieces, an element the shard does not hold), a part holding
 * NaN.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <tfj/err.h>

#include "worker/pushparts.h"
#include "ps/shard.h"
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
	v = vars_new(&whole.layout, 0);
	g = vars_new(&whole.layout, 0);
	n = whole.sh[0].nslices;
	/* dense_0, dense_1 and logits, kernel and bias each: 6 slices, min_slice 1. */
	TFJ_CHECK_INT((long long)n, 6);
	if (!v || !g || n != 6)
		goto out;
	fill_grad(&whole.layout, v, 99);
	TFJ_CHECK_INT(load_all(&whole, v), 0);
	TFJ_CHECK_INT(load_all(&parts, v), 0);
	cut[0] = 4;
	cut[1] = 2;
	cut[2] = 0;
	for (t = 0; t < 3; t++) {
		fill_grad(&whole.layout, g, t);
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
	vars_free(&whole.layout, v);
	vars_free(&whole.layout, g);
	job_free(&whole);
	job_free(&parts);
}

/*
 * Pushes g to every shard of j as the client does with --push-part-kib: the
 * whole slice list cut into parts of part_elems floats (pushparts.c), sent
 * one after the other. Returns the parts sent over all shards, or -1.
 */
static long push_cut(struct job *j, float **g, size_t part_elems)
{
	long sent = 0;
	size_t i, k;

	for (i = 0; i < j->nps; i++) {
		struct tfj_shard *s = &j->sh[i];
		Tfj__Runtime__V1__PushRequest head = TFJ__RUNTIME__V1__PUSH_REQUEST__INIT;
		Tfj__Runtime__V1__Slice *m = calloc(s->nslices, sizeof(*m));
		Tfj__Runtime__V1__Slice **p = calloc(s->nslices, sizeof(*p));
		struct tfj_pushparts pp;
		int rc = -1;

		if (m && p && tfj_pushparts_init(&pp, s->n, s->nslices, part_elems) == 0) {
			point(s, m, p, g);
			head.step = s->step;
			head.max_steps = 100;
			rc = tfj_pushparts_cut(&pp, &head, p, s->nslices);
			for (k = 0; rc == 0 && k < pp.n; k++) {
				Tfj__Runtime__V1__PushResult res;
				struct rx x;

				rc = rx_decode(&x, pp.list[k]);
				if (rc == 0)
					rc = tfj_shard_push(s, (Tfj__Runtime__V1__PushRequest *)x.m.head,
							    x.m.t, x.m.nt, &res);
				if (rc == 0 && res != TFJ__RUNTIME__V1__PUSH_RESULT__PUSH_APPLIED)
					rc = -1;
				rx_free(&x);
				sent++;
			}
			tfj_pushparts_free(&pp);
		}
		free(m);
		free(p);
		if (rc)
			return -1;
	}
	return sent;
}

/* Parts cut anywhere (pieces of slices) give bitwise the whole push's update. */
static void check_cut_equal_whole(const char *optim, size_t nps)
{
	static const size_t sizes[] = { 1, 7, 100, 1000 };
	struct job whole, parts;
	float **v = NULL, **g = NULL;
	size_t z, i;
	int t;

	for (z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		const char *hosts = nps == 1 ? "p:1" : "p:1,q:1";
		long sent = 0;

		printf("%s, %zu ps, parts of %zu floats\n", optim, nps, sizes[z]);
		TFJ_CHECK_INT(job_init_with(&whole, optim, hosts, nps, mlp), 0);
		TFJ_CHECK_INT(job_init_with(&parts, optim, hosts, nps, mlp), 0);
		v = vars_new(&whole.layout, 0);
		g = vars_new(&whole.layout, 0);
		if (!v || !g)
			goto next;
		fill_grad(&whole.layout, v, 98);
		TFJ_CHECK_INT(load_all(&whole, v), 0);
		TFJ_CHECK_INT(load_all(&parts, v), 0);
		for (t = 0; t < 3; t++) {
			long k;

			fill_grad(&whole.layout, g, t);
			TFJ_CHECK_INT(push_all(&whole, g), 0);
			k = push_cut(&parts, g, sizes[z]);
			TFJ_CHECK_GT(k, 0);
			sent += k;
		}
		/* 8x784 + 8 + 8x6 + 6 + 6x10 + 10 = 6404 floats, every shard cut the same way. */
		if (sizes[z] == 1000 && nps == 1)
			TFJ_CHECK_INT(sent, 3 * 7);
		for (i = 0; i < nps; i++) {
			struct tfj_shard *a = &whole.sh[i], *b = &parts.sh[i];

			TFJ_CHECK_INT(b->step, 3);
			TFJ_CHECK_INT(b->opt_t, a->opt_t);
			TFJ_CHECK_INT((long long)b->applied, 3);
			TFJ_CHECK(memcmp(a->param, b->param, a->n * sizeof(float)) == 0);
			if (a->state)
				TFJ_CHECK(memcmp(a->state, b->state,
						 a->state_off[a->nslices] * sizeof(float)) == 0);
		}
		TFJ_CHECK_INT((long long)(parts.sh[0].parts + (nps > 1 ? parts.sh[1].parts : 0)),
			      sent - 3 * (long)nps);
next:
		vars_free(&whole.layout, v);
		vars_free(&whole.layout, g);
		v = g = NULL;
		job_free(&whole);
		job_free(&parts);
	}
}

static void test_cut_anywhere(void)
{
	check_cut_equal_whole("sgd", 1);
	check_cut_equal_whole("momentum", 2);
	check_cut_equal_whole("adam", 1);
	check_cut_equal_whole("adam", 2);
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
	g = vars_new(&j.layout, 0);
	if (!g)
		goto out;
	fill_grad(&j.layout, g, 1);
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
	vars_free(&j.layout, g);
	job_free(&j);
}

/* q, as the ps receives it, is refused as invalid (TFJ_EINVAL). */
static void expect_refused(struct tfj_shard *s, const Tfj__Runtime__V1__PushRequest *q)
{
	Tfj__Runtime__V1__PushResult res;
	struct rx x;

	TFJ_CHECK_INT(rx_decode(&x, &q->base), 0);
	TFJ_CHECK_INT(tfj_shard_push(s, (Tfj__Runtime__V1__PushRequest *)x.m.head, x.m.t, x.m.nt,
				     &res), TFJ_EINVAL);
	printf("refused: %s\n", tfj_err_detail());
	rx_free(&x);
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
	g = vars_new(&j.layout, 0);
	if (!g)
		goto out;
	fill_grad(&j.layout, g, 2);
	TFJ_CHECK_INT(load_all(&j, g), 0);
	version = s->version;
	step = s->step;
	{
		Tfj__Runtime__V1__PushRequest q = TFJ__RUNTIME__V1__PUSH_REQUEST__INIT;
		Tfj__Runtime__V1__Slice m[6], *p[6];

		/* Slices 1 and 3: not one run. */
		point(s, m, p, g);
		p[2] = p[3];
		q.n_slices = 2;
		q.slices = p + 1;
		q.more = 1;
		expect_refused(s, &q);
		/* A piece that starts inside slice 2 and runs past its end. */
		point(s, m, p, g);
		m[2].offset = 1;
		q.n_slices = 1;
		q.slices = p + 2;
		expect_refused(s, &q);
		/* Two pieces of slice 2 with a gap between them (elements 0-1, then 3-). */
		point(s, m, p, g);
		m[1] = m[2];
		m[1].count = 2;
		m[1].data.len = 2 * sizeof(float);
		m[2].offset += 3;
		m[2].count -= 3;
		m[2].data.len -= 3 * sizeof(float);
		q.n_slices = 2;
		q.slices = p + 1;
		expect_refused(s, &q);
		/* A piece of a variable past its last element, and a variable it does not hold. */
		point(s, m, p, g);
		m[5].offset = m[5].count;
		m[5].count = 1;
		m[5].data.len = sizeof(float);
		q.n_slices = 1;
		q.slices = p + 5;
		expect_refused(s, &q);
		m[5].var = 6;
		m[5].offset = 0;
		expect_refused(s, &q);
		/* A piece whose bytes do not match its count. */
		point(s, m, p, g);
		m[2].count--;
		q.n_slices = 1;
		q.slices = p + 2;
		expect_refused(s, &q);
	}
	TFJ_CHECK(s->version == version);
	/* NaN in a part: refused before anything of that part changes. */
	g[3][0] = NAN;
	TFJ_CHECK_INT(push_run(s, g, 2, 2, 1, &res), TFJ_ENUMERIC);
	TFJ_CHECK(s->version == version);
	TFJ_CHECK_INT(s->step, step);
	g[3][0] = 0.5f;
	/* Sync training takes whole pushes only. */
	fill_grad(&sj.layout, g, 3);
	TFJ_CHECK_INT(load_all(&sj, g), 0);
	version = sj.sh[0].version;
	TFJ_CHECK_INT(push_run(&sj.sh[0], g, 2, 1, 1, &res), TFJ_EINVAL);
	printf("sync: %s\n", tfj_err_detail());
	TFJ_CHECK(strstr(tfj_err_detail(), "sync") != NULL);
	TFJ_CHECK_INT(push_run(&sj.sh[0], g, 0, 3, 0, &res), TFJ_EINVAL);
	TFJ_CHECK(sj.sh[0].version == version);
	TFJ_CHECK_INT(sj.sh[0].step, 0);
out:
	vars_free(&j.layout, g);
	job_free(&j);
	job_free(&sj);
}

int main(void)
{
	TFJ_RUN(test_sgd);
	TFJ_RUN(test_momentum);
	TFJ_RUN(test_adam);
	TFJ_RUN(test_cut_anywhere);
	TFJ_RUN(test_step_counts_at_last_part);
	TFJ_RUN(test_refused);
	return tfj_test_finish();
}
