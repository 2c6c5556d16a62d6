/*
 * ratelimit.h - a token bucket: `qps` tokens per second, at most `burst`
 * saved up. Used by the API client (client-side QPS/burst, as client-go
 * does) and by the work queue's global rate limit.
 *
 * The arithmetic is pure (tfj_ratelimit_reserve takes the time) so it can be
 * tested without sleeping; tfj_ratelimit_wait() is the blocking form and
 * tfj_ratelimit_try() the refusing one. The
 * struct carries its own mutex; it is safe to share between threads.
 */
#ifndef TFJ_RATELIMIT_H
#define TFJ_RATELIMIT_H

#include <pthread.h>
#include <stdint.h>

struct tfj_ratelimit {
	pthread_mutex_t mu;
	double qps;        /* tokens per second; <= 0 means unlimited */
	double burst;      /* bucket size, >= 1 */
	double tokens;     /* may go negative: reservations made ahead of time */
	uint64_t last_ns;  /* time of the last refill */
};

/* Starts full (burst tokens). qps <= 0 disables limiting; burst < 1 is 1. */
void tfj_ratelimit_init(struct tfj_ratelimit *rl, double qps, int burst);
void tfj_ratelimit_destroy(struct tfj_ratelimit *rl);

/*
 * Takes one token at time `now_ns` and returns how long the caller must wait
 * before using it (0 if a token was available). Tokens are reserved, so N
 * callers reserving at once get increasing delays, never the same slot.
 */
uint64_t tfj_ratelimit_reserve(struct tfj_ratelimit *rl, uint64_t now_ns);

/*
 * The refusing form, for callers that drop instead of wait (the report
 * service's per-pod limit): takes a token and returns 1 if one is there,
 * else returns 0 and takes nothing, so refused callers run up no debt.
 */
int tfj_ratelimit_try(struct tfj_ratelimit *rl, uint64_t now_ns);

/* Reserves and sleeps for the delay. */
void tfj_ratelimit_wait(struct tfj_ratelimit *rl);

/* Times for the calls above come from tfj_clock_mono_ns() (tfj/clock.h). */

#endif
