/*
 * queue.c - deduplicating, rate-limited, delaying work queue.
 */
#include "kube/queue.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tfj/clock.h>
#include <tfj/err.h>

#include "kube/ratelimit.h"
#include "kube/strmap.h"

struct delayed {
	uint64_t when_ns;
	char *key;
};

struct tfj_queue {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int shutdown;

	/* FIFO of keys ready now (ring buffer of owned strings). */
	char **fifo;
	size_t head, count, cap;

	/* dirty: key -> enqueue time (ns); queued or to be requeued at done(). */
	struct tfj_strmap dirty;
	struct tfj_strmap processing;
	/* waiting: key -> due time (ns) of its earliest delayed add. */
	struct tfj_strmap waiting;
	struct delayed *heap;
	size_t nheap, capheap;
	/* failures: key -> count (as an integer in the pointer). */
	struct tfj_strmap failures;

	struct tfj_ratelimit bucket;
	uint64_t base_ms, max_ms;
	struct tfj_queue_stats st;

	pthread_t *workers;
	int nworkers;
	tfj_queue_fn fn;
	void *ud;
};

/* Times and counts are stored directly in the map's pointer slot (64-bit). */
#define U2P(u) ((void *)(uintptr_t)(u))
#define P2U(p) ((uint64_t)(uintptr_t)(p))

int tfj_queue_new(struct tfj_queue **out, const struct tfj_queue_opts *o)
{
	struct tfj_queue_opts def = { 5, 300000, 10, 100 };
	struct tfj_queue *q;

	*out = NULL;
	if (!o)
		o = &def;
	q = calloc(1, sizeof(*q));
	if (!q)
		return tfj_err_set(TFJ_ENOMEM, "queue");
	pthread_mutex_init(&q->mu, NULL);
	tfj_clock_cond_init(&q->cond);
	q->base_ms = o->base_delay_ms ? o->base_delay_ms : def.base_delay_ms;
	q->max_ms = o->max_delay_ms ? o->max_delay_ms : def.max_delay_ms;
	tfj_ratelimit_init(&q->bucket, o->qps, o->burst > 0 ? o->burst : def.burst);
	*out = q;
	return 0;
}

static int fifo_push(struct tfj_queue *q, const char *key)
{
	char *k;
	if (q->count == q->cap) {
		size_t nc = q->cap ? q->cap * 2 : 64;
		char **nf = malloc(nc * sizeof(*nf));
		if (!nf)
			return tfj_err_set(TFJ_ENOMEM, "queue: growing");
		for (size_t i = 0; i < q->count; i++)
			nf[i] = q->fifo[(q->head + i) % q->cap];
		free(q->fifo);
		q->fifo = nf;
		q->head = 0;
		q->cap = nc;
	}
	k = strdup(key);
	if (!k)
		return tfj_err_set(TFJ_ENOMEM, "queue: key");
	q->fifo[(q->head + q->count) % q->cap] = k;
	q->count++;
	return 0;
}

static char *fifo_pop(struct tfj_queue *q)
{
	char *k;
	if (!q->count)
		return NULL;
	k = q->fifo[q->head];
	q->head = (q->head + 1) % q->cap;
	q->count--;
	return k;
}

/* add() with the lock held. */
static int add_locked(struct tfj_queue *q, const char *key, uint64_t now)
{
	int rc;
	if (q->shutdown || tfj_strmap_has(&q->dirty, key))
		return 0;
	if ((rc = tfj_strmap_put(&q->dirty, key, U2P(now ? now : 1), NULL)))
		return rc;
	q->st.adds++;
	if (tfj_strmap_has(&q->processing, key))
		return 0; /* done() queues it again */
	if ((rc = fifo_push(q, key))) {
		tfj_strmap_del(&q->dirty, key);
		return rc;
	}
	pthread_cond_signal(&q->cond);
	return 0;
}

int tfj_queue_add(struct tfj_queue *q, const char *key)
{
	int rc;
	pthread_mutex_lock(&q->mu);
	rc = add_locked(q, key, tfj_clock_mono_ns());
	pthread_mutex_unlock(&q->mu);
	return rc;
}

static void heap_up(struct delayed *h, size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;
		struct delayed t;
		if (h[p].when_ns <= h[i].when_ns)
			break;
		t = h[p];
		h[p] = h[i];
		h[i] = t;
		i = p;
	}
}

static void heap_down(struct delayed *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct delayed t;
		if (l < n && h[l].when_ns < h[m].when_ns)
			m = l;
		if (r < n && h[r].when_ns < h[m].when_ns)
			m = r;
		if (m == i)
			return;
		t = h[m];
		h[m] = h[i];
		h[i] = t;
		i = m;
	}
}

static int after_locked(struct tfj_queue *q, const char *key, uint64_t delay_ms)
{
	uint64_t now = tfj_clock_mono_ns(), when;
	char *k;

	if (q->shutdown)
		return 0;
	if (delay_ms == 0)
		return add_locked(q, key, now);
	if (delay_ms > 365ull * 24 * 3600 * 1000)
		delay_ms = 365ull * 24 * 3600 * 1000;
	when = now + delay_ms * 1000000ull;
	if (tfj_strmap_has(&q->waiting, key) && P2U(tfj_strmap_get(&q->waiting, key)) <= when)
		return 0; /* an earlier wake-up is already pending */
	if (q->nheap == q->capheap) {
		size_t nc = q->capheap ? q->capheap * 2 : 64;
		struct delayed *nh = realloc(q->heap, nc * sizeof(*nh));
		if (!nh)
			return tfj_err_set(TFJ_ENOMEM, "queue: delayed");
		q->heap = nh;
		q->capheap = nc;
	}
	k = strdup(key);
	if (!k || tfj_strmap_put(&q->waiting, key, U2P(when), NULL)) {
		free(k);
		return tfj_err_set(TFJ_ENOMEM, "queue: delayed key");
	}
	/* A superseded later entry stays in the heap; it is skipped when popped. */
	q->heap[q->nheap].when_ns = when;
	q->heap[q->nheap].key = k;
	heap_up(q->heap, q->nheap++);
	pthread_cond_broadcast(&q->cond);
	return 0;
}

int tfj_queue_add_after(struct tfj_queue *q, const char *key, uint64_t delay_ms)
{
	int rc;
	pthread_mutex_lock(&q->mu);
	rc = after_locked(q, key, delay_ms);
	pthread_mutex_unlock(&q->mu);
	return rc;
}

static uint64_t backoff_locked(struct tfj_queue *q, const char *key)
{
	uint64_t n = P2U(tfj_strmap_get(&q->failures, key)), d = q->base_ms;
	for (uint64_t i = 0; i < n && d < q->max_ms; i++)
		d *= 2;
	return d > q->max_ms ? q->max_ms : d;
}

int tfj_queue_add_rate_limited(struct tfj_queue *q, const char *key)
{
	uint64_t d, g;
	int rc;

	g = tfj_ratelimit_reserve(&q->bucket, tfj_clock_mono_ns()) / 1000000ull;
	pthread_mutex_lock(&q->mu);
	d = backoff_locked(q, key);
	rc = tfj_strmap_put(&q->failures, key,
			    U2P(P2U(tfj_strmap_get(&q->failures, key)) + 1), NULL);
	if (rc == 0) {
		q->st.retries++;
		rc = after_locked(q, key, d > g ? d : g);
	}
	pthread_mutex_unlock(&q->mu);
	return rc;
}

void tfj_queue_forget(struct tfj_queue *q, const char *key)
{
	pthread_mutex_lock(&q->mu);
	tfj_strmap_del(&q->failures, key);
	pthread_mutex_unlock(&q->mu);
}

int tfj_queue_failures(struct tfj_queue *q, const char *key)
{
	uint64_t n;
	pthread_mutex_lock(&q->mu);
	n = P2U(tfj_strmap_get(&q->failures, key));
	pthread_mutex_unlock(&q->mu);
	return n > 1000000 ? 1000000 : (int)n;
}

uint64_t tfj_queue_backoff_ms(struct tfj_queue *q, const char *key)
{
	uint64_t d;
	pthread_mutex_lock(&q->mu);
	d = backoff_locked(q, key);
	pthread_mutex_unlock(&q->mu);
	return d;
}

/* Moves due delayed keys into the FIFO; returns the next due time or 0. */
static uint64_t promote_locked(struct tfj_queue *q, uint64_t now)
{
	while (q->nheap > 0 && q->heap[0].when_ns <= now) {
		struct delayed d = q->heap[0];
		q->heap[0] = q->heap[--q->nheap];
		heap_down(q->heap, q->nheap, 0);
		if (tfj_strmap_has(&q->waiting, d.key) &&
		    P2U(tfj_strmap_get(&q->waiting, d.key)) == d.when_ns) {
			tfj_strmap_del(&q->waiting, d.key);
			add_locked(q, d.key, now);
		}
		free(d.key);
	}
	return q->nheap ? q->heap[0].when_ns : 0;
}

int tfj_queue_get_timeout(struct tfj_queue *q, char **key, long timeout_ms)
{
	uint64_t deadline = timeout_ms >= 0
		? tfj_clock_mono_ns() + (uint64_t)timeout_ms * 1000000ull : 0;
	int rc = 0;

	*key = NULL;
	pthread_mutex_lock(&q->mu);
	for (;;) {
		uint64_t now = tfj_clock_mono_ns(), next, wait;
		struct timespec ts;
		if (q->shutdown) {
			rc = TFJ_ECANCELED;
			break;
		}
		next = promote_locked(q, now);
		if (q->count) {
			char *k = fifo_pop(q);
			uint64_t t0 = P2U(tfj_strmap_del(&q->dirty, k));
			if (tfj_strmap_put(&q->processing, k, NULL, NULL)) {
				/* Keep the key queued rather than lose it. */
				q->fifo[(q->head + q->cap - 1) % q->cap] = k;
				q->head = (q->head + q->cap - 1) % q->cap;
				q->count++;
				tfj_strmap_put(&q->dirty, k, U2P(t0), NULL);
				rc = TFJ_ENOMEM;
				break;
			}
			if (t0 && now > t0) {
				q->st.wait_us_sum += (now - t0) / 1000;
				q->st.wait_count++;
			}
			*key = k;
			break;
		}
		if (deadline && now >= deadline) {
			rc = TFJ_ETIMEOUT;
			break;
		}
		wait = next ? next - now : 0;
		if (deadline && (!wait || deadline - now < wait))
			wait = deadline - now;
		if (wait) {
			/* Rounded up to whole ms: never wake just before the item is due. */
			tfj_clock_deadline(&ts, (wait + 999999u) / 1000000u);
			pthread_cond_timedwait(&q->cond, &q->mu, &ts);
		} else {
			pthread_cond_wait(&q->cond, &q->mu);
		}
	}
	pthread_mutex_unlock(&q->mu);
	return rc;
}

int tfj_queue_get(struct tfj_queue *q, char **key)
{
	return tfj_queue_get_timeout(q, key, -1);
}

void tfj_queue_done(struct tfj_queue *q, const char *key)
{
	pthread_mutex_lock(&q->mu);
	tfj_strmap_del(&q->processing, key);
	if (tfj_strmap_has(&q->dirty, key) && !q->shutdown) {
		if (fifo_push(q, key) == 0)
			pthread_cond_signal(&q->cond);
		else
			tfj_strmap_del(&q->dirty, key);
	}
	pthread_mutex_unlock(&q->mu);
}

void tfj_queue_shutdown(struct tfj_queue *q)
{
	pthread_mutex_lock(&q->mu);
	q->shutdown = 1;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->mu);
}

int tfj_queue_shutting_down(struct tfj_queue *q)
{
	int s;
	pthread_mutex_lock(&q->mu);
	s = q->shutdown;
	pthread_mutex_unlock(&q->mu);
	return s;
}

static void *worker(void *arg)
{
	struct tfj_queue *q = arg;
	char *key;

	while (tfj_queue_get(q, &key) == 0) {
		uint64_t after = 0, t0 = tfj_clock_mono_ns(), dt;
		int rc = q->fn(q->ud, key, &after);
		dt = (tfj_clock_mono_ns() - t0) / 1000;
		if (rc == 0) {
			tfj_queue_forget(q, key);
			if (after)
				tfj_queue_add_after(q, key, after);
		} else {
			tfj_queue_add_rate_limited(q, key);
		}
		pthread_mutex_lock(&q->mu);
		q->st.work_us_sum += dt;
		q->st.work_count++;
		pthread_mutex_unlock(&q->mu);
		tfj_queue_done(q, key);
		free(key);
	}
	return NULL;
}

int tfj_queue_run(struct tfj_queue *q, int n, tfj_queue_fn fn, void *ud)
{
	if (q->workers || n <= 0 || n > 1024 || !fn)
		return tfj_err_set(TFJ_EINVAL, "queue: bad worker count or already running");
	q->workers = calloc((size_t)n, sizeof(*q->workers));
	if (!q->workers)
		return tfj_err_set(TFJ_ENOMEM, "queue workers");
	q->fn = fn;
	q->ud = ud;
	for (int i = 0; i < n; i++) {
		if (pthread_create(&q->workers[i], NULL, worker, q) != 0) {
			tfj_queue_stop(q);
			return tfj_err_set(TFJ_ENOMEM, "queue: worker thread");
		}
		q->nworkers++;
	}
	return 0;
}

void tfj_queue_stop(struct tfj_queue *q)
{
	tfj_queue_shutdown(q);
	for (int i = 0; i < q->nworkers; i++)
		pthread_join(q->workers[i], NULL);
	free(q->workers);
	q->workers = NULL;
	q->nworkers = 0;
}

size_t tfj_queue_len(struct tfj_queue *q)
{
	size_t n;
	pthread_mutex_lock(&q->mu);
	n = q->count;
	pthread_mutex_unlock(&q->mu);
	return n;
}

void tfj_queue_stats(struct tfj_queue *q, struct tfj_queue_stats *out)
{
	pthread_mutex_lock(&q->mu);
	*out = q->st;
	out->depth = q->count;
	out->delayed = q->waiting.n;
	out->processing = q->processing.n;
	pthread_mutex_unlock(&q->mu);
}

void tfj_queue_free(struct tfj_queue *q)
{
	char *k;
	if (!q)
		return;
	tfj_queue_stop(q);
	while ((k = fifo_pop(q)))
		free(k);
	free(q->fifo);
	for (size_t i = 0; i < q->nheap; i++)
		free(q->heap[i].key);
	free(q->heap);
	tfj_strmap_free(&q->dirty, NULL);
	tfj_strmap_free(&q->processing, NULL);
	tfj_strmap_free(&q->waiting, NULL);
	tfj_strmap_free(&q->failures, NULL);
	tfj_ratelimit_destroy(&q->bucket);
	pthread_mutex_destroy(&q->mu);
	pthread_cond_destroy(&q->cond);
	free(q);
}
