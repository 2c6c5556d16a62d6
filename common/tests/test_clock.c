/*
 * test_clock.c - monotonic deadlines for condition variables, wall time.
 */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include <tfj/clock.h>

#include "tfj_test.h"

/* A timed wait on a tfj_clock_cond_init() variable ends at its deadline. */
static void test_timed_wait(void)
{
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv;
	struct timespec ts, now;
	uint64_t t0, t1;
	int rc = 0;

	TFJ_CHECK_INT(tfj_clock_cond_init(&cv), 0);
	tfj_clock_deadline(&ts, 50);
	clock_gettime(CLOCK_MONOTONIC, &now);
	/* The deadline is on the monotonic clock, 50 ms ahead. */
	TFJ_CHECK(ts.tv_sec > now.tv_sec || (ts.tv_sec == now.tv_sec && ts.tv_nsec > now.tv_nsec));
	TFJ_CHECK_GE(ts.tv_nsec, 0);
	TFJ_CHECK_LT(ts.tv_nsec, 1000000000L);
	TFJ_CHECK_LE(ts.tv_sec - now.tv_sec, 1);
	t0 = tfj_clock_mono_ns();
	pthread_mutex_lock(&mu);
	while (rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&cv, &mu, &ts);
	pthread_mutex_unlock(&mu);
	t1 = tfj_clock_mono_ns();
	TFJ_CHECK_GE(t1 - t0, 40000000ull);       /* not before the deadline */
	TFJ_CHECK_LT(t1 - t0, 30000000000ull);     /* and not a realtime-clock misreading */
	pthread_cond_destroy(&cv);
	/* Sub-second parts carry into seconds; absurd delays are capped, not wrapped. */
	tfj_clock_deadline(&ts, 1999);
	TFJ_CHECK_GE(ts.tv_nsec, 0);
	TFJ_CHECK_LT(ts.tv_nsec, 1000000000L);
	tfj_clock_deadline(&ts, UINT64_MAX);
	TFJ_CHECK_GT(ts.tv_sec, now.tv_sec);
}

static void test_unix_ms(void)
{
	int64_t a = (int64_t)time(NULL) * 1000, b = tfj_clock_unix_ms();

	TFJ_CHECK_GE(b, a - 1000);
	TFJ_CHECK_LE(b, a + 2000);
	TFJ_CHECK_GT(tfj_clock_mono_ns(), 0);
}

int main(void)
{
	TFJ_RUN(test_timed_wait);
	TFJ_RUN(test_unix_ms);
	return tfj_test_finish();
}
