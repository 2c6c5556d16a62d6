/*
 * test_pushparts.c - cutting a shard's push into parts (pushparts.h).
 *
 * Three slices of 5, 3 and 10 floats cut into parts of 4: five parts, two
 * of them made of pieces of two slices, each piece pointing into the
 * gradient where its elements are (no copy), every part a copy of the
 * header but for its slices, `more` set on all but the last, which keeps
 * the header's. A part size at least the run's gives the run itself.
 * Refused: parts of 0 floats, an empty run, a run larger than the room
 * made at init. Over the tries of one push, the parts a try got applied
 * are not listed for the next (pending/record), and a new push forgets
 * them. (That parts cut anywhere update a shard exactly as the
 * whole push does is test_shard_parts.c's.)
 */
#include <stdio.h>
#include <string.h>

#include <tfj/err.h>

#include "worker/pushparts.h"
#include "tfj_test.h"

static float grad[18];
static Tfj__Runtime__V1__Slice msgs[3];
static Tfj__Runtime__V1__Slice *src[3];

/* Slices of variables 4, 5, 6 (offsets 100, 0, 7) laid end to end in grad. */
static void setup(void)
{
	static const size_t count[3] = { 5, 3, 10 };
	size_t i, at = 0;

	for (i = 0; i < 18; i++)
		grad[i] = (float)i;
	for (i = 0; i < 3; i++) {
		tfj__runtime__v1__slice__init(&msgs[i]);
		msgs[i].var = (uint32_t)(4 + i);
		msgs[i].offset = i == 0 ? 100 : i == 1 ? 0 : 7;
		msgs[i].count = count[i];
		msgs[i].data.data = (uint8_t *)(grad + at);
		msgs[i].data.len = count[i] * sizeof(float);
		src[i] = &msgs[i];
		at += count[i];
	}
}

/* Checks piece j of part k: variable, offset, count, and where its data is. */
static void check_piece(const struct tfj_pushparts *pp, size_t k, size_t j, uint32_t var,
			uint64_t offset, uint64_t count, size_t grad_at)
{
	const Tfj__Runtime__V1__Slice *m = pp->reqs[k].slices[j];

	TFJ_CHECK_INT(m->var, var);
	TFJ_CHECK_INT((long long)m->offset, (long long)offset);
	TFJ_CHECK_INT((long long)m->count, (long long)count);
	TFJ_CHECK(m->data.data == (uint8_t *)(grad + grad_at));
	TFJ_CHECK_INT((long long)m->data.len, (long long)(count * sizeof(float)));
}

static void test_cut(void)
{
	Tfj__Runtime__V1__PushRequest head = TFJ__RUNTIME__V1__PUSH_REQUEST__INIT;
	struct tfj_pushparts pp;
	size_t k;

	setup();
	TFJ_CHECK_INT((long long)tfj_pushparts_count(18, 4), 5);
	TFJ_CHECK_INT((long long)tfj_pushparts_count(16, 4), 4);
	TFJ_CHECK_INT((long long)tfj_pushparts_count(0, 4), 0);
	TFJ_CHECK_OK(tfj_pushparts_init(&pp, 18, 3, 4));
	head.layout_hash = 0xfeedULL;
	head.step = 41;
	head.replica = 2;
	head.max_steps = 900;
	TFJ_CHECK_OK(tfj_pushparts_cut(&pp, &head, src, 3));
	TFJ_CHECK_INT((long long)pp.n, 5);
	if (pp.n != 5)
		goto out;
	/* [v4 100-104) | [v4 104-105) [v5 0-3) | [v6 7-11) | [v6 11-15) | [v6 15-17) */
	TFJ_CHECK_INT((long long)pp.reqs[0].n_slices, 1);
	check_piece(&pp, 0, 0, 4, 100, 4, 0);
	TFJ_CHECK_INT((long long)pp.reqs[1].n_slices, 2);
	check_piece(&pp, 1, 0, 4, 104, 1, 4);
	check_piece(&pp, 1, 1, 5, 0, 3, 5);
	TFJ_CHECK_INT((long long)pp.reqs[2].n_slices, 1);
	check_piece(&pp, 2, 0, 6, 7, 4, 8);
	check_piece(&pp, 3, 0, 6, 11, 4, 12);
	TFJ_CHECK_INT((long long)pp.reqs[4].n_slices, 1);
	check_piece(&pp, 4, 0, 6, 15, 2, 16);
	for (k = 0; k < pp.n; k++) {
		TFJ_CHECK(pp.list[k] == &pp.reqs[k].base);
		TFJ_CHECK_INT((long long)pp.reqs[k].layout_hash, 0xfeed);
		TFJ_CHECK_INT(pp.reqs[k].step, 41);
		TFJ_CHECK_INT(pp.reqs[k].replica, 2);
		TFJ_CHECK_INT(pp.reqs[k].max_steps, 900);
		TFJ_CHECK_INT(pp.reqs[k].more, k + 1 < pp.n);
	}
	/* The header's more (a part of --overlap=push with more to come) stays on the last. */
	head.more = 1;
	TFJ_CHECK_OK(tfj_pushparts_cut(&pp, &head, src, 3));
	TFJ_CHECK_INT(pp.reqs[pp.n - 1].more, 1);
	/* A shorter run (the last two slices) in the same room. */
	head.more = 0;
	TFJ_CHECK_OK(tfj_pushparts_cut(&pp, &head, src + 1, 2));
	TFJ_CHECK_INT((long long)pp.n, 4);
	check_piece(&pp, 0, 0, 5, 0, 3, 5);
	check_piece(&pp, 0, 1, 6, 7, 1, 8);
	check_piece(&pp, 3, 0, 6, 16, 1, 17);
out:
	tfj_pushparts_free(&pp);
	tfj_pushparts_free(&pp); /* freed twice: the second is a no-op */
}

static void test_one_part(void)
{
	Tfj__Runtime__V1__PushRequest head = TFJ__RUNTIME__V1__PUSH_REQUEST__INIT;
	struct tfj_pushparts pp;
	size_t j;

	setup();
	TFJ_CHECK_OK(tfj_pushparts_init(&pp, 18, 3, 18));
	TFJ_CHECK_OK(tfj_pushparts_cut(&pp, &head, src, 3));
	TFJ_CHECK_INT((long long)pp.n, 1);
	TFJ_CHECK_INT((long long)pp.reqs[0].n_slices, 3);
	TFJ_CHECK_INT(pp.reqs[0].more, 0);
	for (j = 0; j < 3 && pp.reqs[0].n_slices == 3; j++) {
		TFJ_CHECK_INT((long long)pp.reqs[0].slices[j]->count, (long long)msgs[j].count);
		TFJ_CHECK(pp.reqs[0].slices[j]->data.data == msgs[j].data.data);
	}
	tfj_pushparts_free(&pp);
}

static void test_refused(void)
{
	Tfj__Runtime__V1__PushRequest head = TFJ__RUNTIME__V1__PUSH_REQUEST__INIT;
	struct tfj_pushparts pp;

	setup();
	TFJ_CHECK_INT(tfj_pushparts_init(&pp, 18, 3, 0), TFJ_EINVAL);
	tfj_pushparts_free(&pp);
	/* Room for 8 floats in 2 slices: the whole 18 do not fit. */
	TFJ_CHECK_OK(tfj_pushparts_init(&pp, 8, 2, 4));
	TFJ_CHECK_INT(tfj_pushparts_cut(&pp, &head, src, 3), TFJ_ERANGE);
	printf("refused: %s\n", tfj_err_detail());
	TFJ_CHECK_INT((long long)pp.n, 0);
	TFJ_CHECK_INT(tfj_pushparts_cut(&pp, &head, src, 0), TFJ_EINVAL);
	/* The first two slices (8 floats) fit. */
	TFJ_CHECK_OK(tfj_pushparts_cut(&pp, &head, src, 2));
	TFJ_CHECK_INT((long long)pp.n, 2);
	tfj_pushparts_free(&pp);
}

static void test_tries(void)
{
	Tfj__Runtime__V1__PushRequest head = TFJ__RUNTIME__V1__PUSH_REQUEST__INIT;
	struct tfj_pushparts pp;

	setup();
	TFJ_CHECK_OK(tfj_pushparts_init(&pp, 18, 3, 4));
	TFJ_CHECK_OK(tfj_pushparts_cut(&pp, &head, src, 3));
	tfj_pushparts_forget(&pp);
	/* First try: everything goes; the ps answers parts 0, 1 and 3 OK (2 refused, 4 lost). */
	TFJ_CHECK_INT((long long)tfj_pushparts_pending(&pp), 5);
	TFJ_CHECK(pp.send[2] == pp.list[2]);
	pp.now[0] = pp.now[1] = pp.now[3] = 1;
	tfj_pushparts_record(&pp);
	/* The retry cuts the same parts and sends 2 and 4 only. */
	TFJ_CHECK_OK(tfj_pushparts_cut(&pp, &head, src, 3));
	TFJ_CHECK_INT((long long)tfj_pushparts_pending(&pp), 2);
	TFJ_CHECK(pp.send[0] == pp.list[2] && pp.send[1] == pp.list[4]);
	TFJ_CHECK_INT((long long)pp.idx[0], 2);
	TFJ_CHECK_INT((long long)pp.idx[1], 4);
	TFJ_CHECK_INT(pp.now[0] + pp.now[1], 0);
	/* Its answer for part 4 (send[1]) came OK: only part 2 is left. */
	pp.now[1] = 1;
	tfj_pushparts_record(&pp);
	TFJ_CHECK_INT((long long)tfj_pushparts_pending(&pp), 1);
	TFJ_CHECK(pp.send[0] == pp.list[2]);
	pp.now[0] = 1;
	tfj_pushparts_record(&pp);
	TFJ_CHECK_INT((long long)tfj_pushparts_pending(&pp), 0);
	/* The next push starts over. */
	tfj_pushparts_forget(&pp);
	TFJ_CHECK_INT((long long)tfj_pushparts_pending(&pp), 5);
	tfj_pushparts_free(&pp);
}

int main(void)
{
	TFJ_RUN(test_cut);
	TFJ_RUN(test_one_part);
	TFJ_RUN(test_refused);
	TFJ_RUN(test_tries);
	return tfj_test_finish();
}
