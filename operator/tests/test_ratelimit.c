/*
 * test_ratelimit.c - token bucket arithmetic (pure, explicit time).
 */
#include <tfj/clock.h>

#include "kube/ratelimit.h"
#include "tfj_test.h"

#define MS 1000000ull

static void test_burst_then_rate(void)
{
	struct tfj_ratelimit rl;
	uint64_t t = 1000 * MS;

	tfj_ratelimit_init(&rl, 10, 3);  /* 10/s: one token per 100 ms */
	TFJ_CHECK_INT(tfj_ratelimit_reserve(&rl, t), 0);
	TFJ_CHECK_INT(tfj_ratelimit_reserve(&rl, t), 0);
	TFJ_CHECK_INT(tfj_ratelimit_reserve(&rl, t), 0);
	/* Bucket empty: reservations queue up 100 ms apart. */
	TFJ_CHECK_INT(tfj_ratelimit_reserve(&rl, t) / MS, 100);
	TFJ_CHECK_INT(tfj_ratelimit_reserve(&rl, t) / MS, 200);
	/* 500 ms later the debt (2 tokens) is repaid and 3 more accrued (capped at burst 3). */
	t += 500 * MS;
	TFJ_CHECK_INT(tfj_ratelimit_reserve(&rl, t), 0);
	TFJ_CHECK_INT(tfj_ratelimit_reserve(&rl, t), 0);
	TFJ_CHECK_INT(tfj_ratelimit_reserve(&rl, t), 0);
	TFJ_CHECK_GT(tfj_ratelimit_reserve(&rl, t), 0);
	tfj_ratelimit_destroy(&rl);
}

static void test_refill_capped(void)
{
	struct tfj_ratelimit rl;
	uint64_t t = 5 * MS;
	int free_tokens = 0;

	tfj_ratelimit_init(&rl, 100, 5);
	for (int i = 0; i < 5; i++)
		tfj_ratelimit_reserve(&rl, t);
	t += 3600ull * 1000 * MS; /* an hour idle refills only up to the burst */
	for (int i = 0; i < 10; i++)
		if (tfj_ratelimit_reserve(&rl, t) == 0)
			free_tokens++;
	TFJ_CHECK_INT(free_tokens, 5);
	tfj_ratelimit_destroy(&rl);
}

static void test_unlimited_and_clamps(void)
{
	struct tfj_ratelimit rl;
	tfj_ratelimit_init(&rl, 0, 0);
	for (int i = 0; i < 1000; i++)
		TFJ_CHECK_INT(tfj_ratelimit_reserve(&rl, 1), 0);
	tfj_ratelimit_destroy(&rl);
	tfj_ratelimit_init(&rl, 1, -5); /* burst clamps to 1 */
	TFJ_CHECK_INT(tfj_ratelimit_reserve(&rl, MS), 0);
	TFJ_CHECK_INT(tfj_ratelimit_reserve(&rl, MS) / MS, 1000);
	tfj_ratelimit_destroy(&rl);
}

static void test_wait_blocks(void)
{
	struct tfj_ratelimit rl;
	uint64_t t0;
	tfj_ratelimit_init(&rl, 50, 1);
	t0 = tfj_clock_mono_ns();
	for (int i = 0; i < 6; i++)
		tfj_ratelimit_wait(&rl);
	/* 5 waits of 20 ms after the first free token. */
	TFJ_CHECK_GE((tfj_clock_mono_ns() - t0) / MS, 90);
	tfj_ratelimit_destroy(&rl);
}

static void test_try_refuses_without_debt(void)
{
	struct tfj_ratelimit rl;
	uint64_t t = 1000000000ull;
	int i, ok = 0;

	tfj_ratelimit_init(&rl, 2, 3);
	for (i = 0; i < 10; i++)
		ok += tfj_ratelimit_try(&rl, t);
	TFJ_CHECK_INT(ok, 3);
	/* Refusals took nothing: half a second later exactly one token is back. */
	TFJ_CHECK_INT(tfj_ratelimit_try(&rl, t + 500000000ull), 1);
	TFJ_CHECK_INT(tfj_ratelimit_try(&rl, t + 500000000ull), 0);
	tfj_ratelimit_destroy(&rl);
	tfj_ratelimit_init(&rl, 0, 1);
	TFJ_CHECK_INT(tfj_ratelimit_try(&rl, t), 1);
	TFJ_CHECK_INT(tfj_ratelimit_try(&rl, t), 1);
	tfj_ratelimit_destroy(&rl);
}

int main(void)
{
	TFJ_RUN(test_try_refuses_without_debt);
	TFJ_RUN(test_burst_then_rate);
	TFJ_RUN(test_refill_capped);
	TFJ_RUN(test_unlimited_and_clamps);
	TFJ_RUN(test_wait_blocks);
	return tfj_test_finish();
}
