/*
 * ratelimit.c - token bucket.
 */
#include "kube/ratelimit.h"

#include <errno.h>
#include <time.h>

#include <tfj/clock.h>

void tfj_ratelimit_init(struct tfj_ratelimit *rl, double qps, int burst)
{
	pthread_mutex_init(&rl->mu, NULL);
	rl->qps = qps;
	rl->burst = burst < 1 ? 1.0 : (double)burst;
	rl->tokens = rl->burst;
	rl->last_ns = 0;
}

void tfj_ratelimit_destroy(struct tfj_ratelimit *rl)
{
	pthread_mutex_destroy(&rl->mu);
}

/* Adds the tokens earned since the last refill. Called with the lock held. */
static void refill(struct tfj_ratelimit *rl, uint64_t now_ns)
{
	if (rl->last_ns == 0)
		rl->last_ns = now_ns;
	if (now_ns > rl->last_ns) {
		rl->tokens += (double)(now_ns - rl->last_ns) / 1e9 * rl->qps;
		if (rl->tokens > rl->burst)
			rl->tokens = rl->burst;
		rl->last_ns = now_ns;
	}
}

uint64_t tfj_ratelimit_reserve(struct tfj_ratelimit *rl, uint64_t now_ns)
{
	uint64_t wait = 0;

	if (rl->qps <= 0)
		return 0;
	pthread_mutex_lock(&rl->mu);
	refill(rl, now_ns);
	rl->tokens -= 1.0;
	if (rl->tokens < 0)
		wait = (uint64_t)(-rl->tokens / rl->qps * 1e9);
	pthread_mutex_unlock(&rl->mu);
	return wait;
}

int tfj_ratelimit_try(struct tfj_ratelimit *rl, uint64_t now_ns)
{
	int ok;

	if (rl->qps <= 0)
		return 1;
	pthread_mutex_lock(&rl->mu);
	refill(rl, now_ns);
	ok = rl->tokens >= 1.0;
	if (ok)
		rl->tokens -= 1.0;
	pthread_mutex_unlock(&rl->mu);
	return ok;
}

void tfj_ratelimit_wait(struct tfj_ratelimit *rl)
{
	uint64_t d = tfj_ratelimit_reserve(rl, tfj_clock_mono_ns());
	struct timespec ts = { (time_t)(d / 1000000000ull), (long)(d % 1000000000ull) };

	while (d && nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}
