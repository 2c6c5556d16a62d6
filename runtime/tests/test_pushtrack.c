/*
 * test_pushtrack.c - following one push to every shard over its tries
 * (pushtrack.h), without a cluster: the answers are built here.
 *
 * Three shards; a try where shard 0 answered OK, shard 1 answered stale
 * and shard 2 failed: 0 and 1 are done (a retry leaves them out), the
 * stale answer is counted once however often the same answers are taken,
 * and a later try's answer from shard 2 completes the push. A shard left
 * out of a try, or one without an answer, is not done. A finished answer
 * is kept. A new push (begin) forgets it all. With parts, init makes one
 * cut per shard with room for its elements.
 * (Sending through psclient is itest_pushparts's.)
 */
#include <stdio.h>
#include <string.h>

#include <tfj/err.h>

#include "worker/pushtrack.h"
#include "tfj_test.h"

#define N 3

static Tfj__Runtime__V1__PushRequest q[N];
static Tfj__Runtime__V1__PushResponse r[N];
static const ProtobufCMessage *reqs[N];
static ProtobufCMessage *resps[N];

/* Every shard sent, shard j's answer given by `res` (-1: it failed). */
static void try_with(const int res[N])
{
	size_t j;

	for (j = 0; j < N; j++) {
		tfj__runtime__v1__push_request__init(&q[j]);
		tfj__runtime__v1__push_response__init(&r[j]);
		reqs[j] = &q[j].base;
		resps[j] = NULL;
		if (res[j] >= 0) {
			r[j].result = (Tfj__Runtime__V1__PushResult)res[j];
			resps[j] = &r[j].base;
		}
	}
}

static void test_tries(void)
{
	static const size_t elems[N] = { 10, 10, 10 };
	static const size_t slices[N + 1] = { 0, 1, 2, 3 };
	const int first[N] = { TFJ__RUNTIME__V1__PUSH_RESULT__PUSH_APPLIED,
			       TFJ__RUNTIME__V1__PUSH_RESULT__PUSH_STALE, -1 };
	const int second[N] = { -1, -1, TFJ__RUNTIME__V1__PUSH_RESULT__PUSH_APPLIED };
	struct tfj_pushtrack t;

	TFJ_CHECK_OK(tfj_pushtrack_init(&t, N, elems, slices, 0));
	TFJ_CHECK(t.pparts == NULL);
	tfj_pushtrack_begin(&t);
	try_with(first);
	tfj_pushtrack_take(&t, reqs, resps);
	tfj_pushtrack_take(&t, reqs, resps);
	TFJ_CHECK(tfj_pushtrack_done(&t, 0));
	TFJ_CHECK(tfj_pushtrack_done(&t, 1));
	TFJ_CHECK(!tfj_pushtrack_done(&t, 2));
	TFJ_CHECK_INT(t.stale, 1);
	TFJ_CHECK_INT(t.finished, 0);
	/* The retry sends shard 2 only; its answer completes the push. */
	try_with(second);
	reqs[0] = reqs[1] = NULL;
	r[2].finished = 1;
	tfj_pushtrack_take(&t, reqs, resps);
	TFJ_CHECK(tfj_pushtrack_done(&t, 2));
	TFJ_CHECK_INT(t.stale, 1);
	TFJ_CHECK_INT(t.finished, 1);
	/* An answer for a shard left out of the try does not count. */
	tfj_pushtrack_begin(&t);
	try_with(first);
	reqs[0] = NULL;
	tfj_pushtrack_take(&t, reqs, resps);
	TFJ_CHECK(!tfj_pushtrack_done(&t, 0));
	TFJ_CHECK(tfj_pushtrack_done(&t, 1));
	/* A new push forgets the last one. */
	tfj_pushtrack_begin(&t);
	TFJ_CHECK(!tfj_pushtrack_done(&t, 1));
	TFJ_CHECK_INT(t.stale, 0);
	TFJ_CHECK_INT(t.finished, 0);
	tfj_pushtrack_free(&t);
	tfj_pushtrack_free(&t);
}

static void test_parts(void)
{
	static const size_t elems[2] = { 10, 3 };
	static const size_t slices[3] = { 0, 2, 3 };
	struct tfj_pushtrack t;

	TFJ_CHECK_OK(tfj_pushtrack_init(&t, 2, elems, slices, 4));
	TFJ_CHECK(t.pparts != NULL);
	if (t.pparts) {
		TFJ_CHECK_INT((long long)t.pparts[0].cap, 3);
		TFJ_CHECK_INT((long long)t.pparts[1].cap, 1);
		TFJ_CHECK(t.now[0] == NULL);
	}
	tfj_pushtrack_free(&t);
}

int main(void)
{
	TFJ_RUN(test_tries);
	TFJ_RUN(test_parts);
	return tfj_test_finish();
}
