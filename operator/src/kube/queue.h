/*
 * queue.h - the controller's work queue.
 *
 * Keys ("namespace/name") are deduplicated: a key added ten times before a
 * worker takes it is processed once. A key is never processed by two
 * workers at once: adding a key that is being processed marks it dirty and
 * it is queued again when the worker calls tfj_queue_done(). Keys can be
 * added after a delay (requeue after a timer) and with rate limiting: the
 * delay is the larger of a per-key exponential backoff (base * 2^failures,
 * capped) and a global token bucket, so a storm of failing keys cannot
 * flood the API server.
 *
 * tfj_queue_run() starts N worker threads that call the handler for each
 * key; tfj_queue_shutdown() wakes everyone and tfj_queue_stop() joins the
 * workers after their current key.
 *
 * Thread-safe. Keys are copied; the key returned by tfj_queue_get() is the
 * caller's to free after tfj_queue_done().
 */
#ifndef TFJ_QUEUE_H
#define TFJ_QUEUE_H

#include <stddef.h>
#include <stdint.h>

struct tfj_queue_opts {
	uint64_t base_delay_ms;  /* first retry delay (default 5 ms) */
	uint64_t max_delay_ms;   /* backoff cap (default 300 s) */
	double qps;              /* global rate of rate-limited adds (default 10; <=0 off) */
	int burst;               /* default 100 */
};

struct tfj_queue_stats {
	size_t depth;            /* keys waiting to be processed now */
	size_t delayed;          /* keys waiting for a delay to pass */
	size_t processing;
	uint64_t adds;           /* keys that entered the queue (not deduplicated ones) */
	uint64_t retries;        /* rate-limited adds */
	uint64_t wait_us_sum;    /* time from queued to taken by a worker */
	uint64_t wait_count;
	uint64_t work_us_sum;    /* handler duration (tfj_queue_run workers) */
	uint64_t work_count;
};

struct tfj_queue;

/*
 * The handler a worker calls. Return 0 on success (the key's backoff is
 * reset; if *requeue_after_ms > 0 the key is added again after that delay)
 * or a negative code to retry with backoff.
 */
typedef int (*tfj_queue_fn)(void *ud, const char *key, uint64_t *requeue_after_ms);

/* o may be NULL for defaults. */
int tfj_queue_new(struct tfj_queue **out, const struct tfj_queue_opts *o);
/* Stops the workers if running and frees. Accepts NULL. */
void tfj_queue_free(struct tfj_queue *q);

int tfj_queue_add(struct tfj_queue *q, const char *key);
/* Adds after delay_ms; an earlier pending delay for the key wins. */
int tfj_queue_add_after(struct tfj_queue *q, const char *key, uint64_t delay_ms);
/* Adds after the key's backoff (and the global bucket); counts a failure. */
int tfj_queue_add_rate_limited(struct tfj_queue *q, const char *key);
/* Resets the key's failure count. */
void tfj_queue_forget(struct tfj_queue *q, const char *key);
/* Failures counted for the key since the last forget. */
int tfj_queue_failures(struct tfj_queue *q, const char *key);
/* The delay the next rate-limited add of key would get (ms, per-key part only). */
uint64_t tfj_queue_backoff_ms(struct tfj_queue *q, const char *key);

/*
 * Blocks until a key is ready; *key is malloc'd. TFJ_ECANCELED once the
 * queue is shut down. Pair every successful get with tfj_queue_done().
 */
int tfj_queue_get(struct tfj_queue *q, char **key);
/* Like get but gives up after timeout_ms with TFJ_ETIMEOUT. */
int tfj_queue_get_timeout(struct tfj_queue *q, char **key, long timeout_ms);
void tfj_queue_done(struct tfj_queue *q, const char *key);

void tfj_queue_shutdown(struct tfj_queue *q);
int tfj_queue_shutting_down(struct tfj_queue *q);

/* Starts n worker threads running fn. Once per queue. */
int tfj_queue_run(struct tfj_queue *q, int n, tfj_queue_fn fn, void *ud);
/* Shuts down and joins the workers (each finishes its current key). */
void tfj_queue_stop(struct tfj_queue *q);

size_t tfj_queue_len(struct tfj_queue *q);
void tfj_queue_stats(struct tfj_queue *q, struct tfj_queue_stats *out);

#endif
