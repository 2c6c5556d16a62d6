/*
 * clock.c - monotonic deadlines for condition variables; wall time.
 */
#include <tfj/clock.h>

int tfj_clock_cond_init(pthread_cond_t *cv)
{
	pthread_condattr_t a;
	int rc = pthread_condattr_init(&a);

	if (rc)
		return rc;
	rc = pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	if (!rc)
		rc = pthread_cond_init(cv, &a);
	pthread_condattr_destroy(&a);
	return rc;
}

void tfj_clock_deadline(struct timespec *ts, uint64_t delay_ms)
{
	/* Caps the delay at ~68 years so tv_sec cannot overflow. */
	if (delay_ms > (uint64_t)INT32_MAX * 1000u)
		delay_ms = (uint64_t)INT32_MAX * 1000u;
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += (time_t)(delay_ms / 1000u);
	ts->tv_nsec += (long)(delay_ms % 1000u) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

uint64_t tfj_clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int64_t tfj_clock_unix_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
