/*
 * test_queue.c - work queue: dedup, one key one worker, delays, backoff,
 * shutdown.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tfj/clock.h>
#include <tfj/err.h>

#include "kube/queue.h"
#include "kube/ratelimit.h"
#include "tfj_test.h"

static uint64_t ms_now(void)
{
	return tfj_clock_mono_ns() / 1000000ull;
}

static void test_dedup_fifo(void)
{
	struct tfj_queue *q;
	char *k;

	TFJ_CHECK_INT(tfj_queue_new(&q, NULL), 0);
	tfj_queue_add(q, "ns/a");
	tfj_queue_add(q, "ns/b");
	tfj_queue_add(q, "ns/a");
	tfj_queue_add(q, "ns/a");
	TFJ_CHECK_INT(tfj_queue_len(q), 2);
	TFJ_CHECK_INT(tfj_queue_get(q, &k), 0);
	TFJ_CHECK_STR(k, "ns/a");
	/* Added while processing: not handed out again until done. */
	tfj_queue_add(q, "ns/a");
	TFJ_CHECK_INT(tfj_queue_len(q), 1);
	tfj_queue_done(q, k);
	free(k);
	TFJ_CHECK_INT(tfj_queue_len(q), 2);
	TFJ_CHECK_INT(tfj_queue_get(q, &k), 0);
	TFJ_CHECK_STR(k, "ns/b");
	tfj_queue_done(q, k);
	free(k);
	TFJ_CHECK_INT(tfj_queue_get(q, &k), 0);
	TFJ_CHECK_STR(k, "ns/a");
	tfj_queue_done(q, k);
	free(k);
	TFJ_CHECK_INT(tfj_queue_get_timeout(q, &k, 20), TFJ_ETIMEOUT);
	tfj_queue_free(q);
}

static void test_delayed(void)
{
	struct tfj_queue *q;
	uint64_t t0;
	char *k;

	TFJ_CHECK_INT(tfj_queue_new(&q, NULL), 0);
	t0 = ms_now();
	tfj_queue_add_after(q, "late", 300);
	tfj_queue_add_after(q, "early", 100);
	tfj_queue_add_after(q, "early", 5000); /* a later delay does not postpone */
	TFJ_CHECK_INT(tfj_queue_len(q), 0);
	TFJ_CHECK_INT(tfj_queue_get(q, &k), 0);
	TFJ_CHECK_STR(k, "early");
	TFJ_CHECK_GE(ms_now() - t0, 95);
	tfj_queue_done(q, k);
	free(k);
	TFJ_CHECK_INT(tfj_queue_get(q, &k), 0);
	TFJ_CHECK_STR(k, "late");
	TFJ_CHECK_GE(ms_now() - t0, 295);
	TFJ_CHECK_LT(ms_now() - t0, 3000);
	tfj_queue_done(q, k);
	free(k);
	/* The superseded entry for "early" is not delivered a second time. */
	TFJ_CHECK_INT(tfj_queue_get_timeout(q, &k, 200), TFJ_ETIMEOUT);
	/* An earlier delay replaces a later one. */
	t0 = ms_now();
	tfj_queue_add_after(q, "x", 5000);
	tfj_queue_add_after(q, "x", 50);
	TFJ_CHECK_INT(tfj_queue_get_timeout(q, &k, 2000), 0);
	TFJ_CHECK_LT(ms_now() - t0, 2000);
	if (k) {
		tfj_queue_done(q, k);
		free(k);
	}
	tfj_queue_free(q);
}

static void test_backoff(void)
{
	struct tfj_queue_opts o = { 10, 80, 0, 1 };
	struct tfj_queue *q;

	TFJ_CHECK_INT(tfj_queue_new(&q, &o), 0);
	TFJ_CHECK_INT(tfj_queue_backoff_ms(q, "k"), 10);
	tfj_queue_add_rate_limited(q, "k");
	TFJ_CHECK_INT(tfj_queue_backoff_ms(q, "k"), 20);
	tfj_queue_add_rate_limited(q, "k");
	tfj_queue_add_rate_limited(q, "k");
	TFJ_CHECK_INT(tfj_queue_backoff_ms(q, "k"), 80);
	tfj_queue_add_rate_limited(q, "k");
	TFJ_CHECK_INT(tfj_queue_backoff_ms(q, "k"), 80); /* capped */
	TFJ_CHECK_INT(tfj_queue_failures(q, "k"), 4);
	TFJ_CHECK_INT(tfj_queue_backoff_ms(q, "other"), 10);
	tfj_queue_forget(q, "k");
	TFJ_CHECK_INT(tfj_queue_failures(q, "k"), 0);
	TFJ_CHECK_INT(tfj_queue_backoff_ms(q, "k"), 10);
	tfj_queue_free(q);
}

static void test_global_bucket(void)
{
	/* 20 qps, burst 2: the third and later retries of different keys wait. */
	struct tfj_queue_opts o = { 1, 1, 20, 2 };
	struct tfj_queue *q;
	uint64_t t0 = ms_now();
	char *k, name[16];

	TFJ_CHECK_INT(tfj_queue_new(&q, &o), 0);
	for (int i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "k%d", i);
		tfj_queue_add_rate_limited(q, name);
	}
	for (int i = 0; i < 6; i++) {
		TFJ_CHECK_INT(tfj_queue_get_timeout(q, &k, 3000), 0);
		if (k) {
			tfj_queue_done(q, k);
			free(k);
		}
	}
	/* 4 tokens beyond the burst at 20/s: at least ~200 ms. */
	TFJ_CHECK_GE(ms_now() - t0, 180);
	tfj_queue_free(q);
}

/* Workers: a key is never handled by two workers at once. */
struct work {
	atomic_int active[8];
	atomic_int overlap;
	atomic_int calls;
	atomic_int fails_left;
	atomic_int requeued;
};

static int handler(void *ud, const char *key, uint64_t *after)
{
	struct work *w = ud;
	int i = key[1] - '0';
	if (atomic_fetch_add(&w->active[i], 1) != 0)
		atomic_store(&w->overlap, 1);
	usleep(2000);
	atomic_fetch_sub(&w->active[i], 1);
	atomic_fetch_add(&w->calls, 1);
	if (i == 7 && atomic_fetch_sub(&w->fails_left, 1) > 0)
		return TFJ_EUNAVAIL; /* retried with backoff */
	if (i == 6 && atomic_fetch_add(&w->requeued, 1) == 0)
		*after = 30;         /* requeue once after a timer */
	return 0;
}

static void test_workers(void)
{
	struct tfj_queue_opts o = { 1, 10, 0, 1 };
	struct tfj_queue *q;
	struct work w;
	char key[4];

	memset(&w, 0, sizeof(w));
	atomic_store(&w.fails_left, 3);
	TFJ_CHECK_INT(tfj_queue_new(&q, &o), 0);
	TFJ_CHECK_INT(tfj_queue_run(q, 4, handler, &w), 0);
	for (int round = 0; round < 200; round++) {
		snprintf(key, sizeof(key), "k%d", round % 8);
		tfj_queue_add(q, key);
		if (round % 7 == 0)
			usleep(500);
	}
	for (int i = 0; i < 300; i++) {
		struct tfj_queue_stats st;
		tfj_queue_stats(q, &st);
		if (st.depth == 0 && st.delayed == 0 && st.processing == 0 &&
		    atomic_load(&w.fails_left) < 0 && atomic_load(&w.requeued) >= 2)
			break;
		usleep(10000);
	}
	tfj_queue_stop(q);
	TFJ_CHECK_INT(atomic_load(&w.overlap), 0);
	TFJ_CHECK_GE(atomic_load(&w.calls), 8);
	TFJ_CHECK_LE(atomic_load(&w.calls), 200 + 4 + 1);
	TFJ_CHECK_LT(atomic_load(&w.fails_left), 0);   /* k7 retried past its failures */
	TFJ_CHECK_GE(atomic_load(&w.requeued), 2);    /* k6 came back after its timer */
	TFJ_CHECK_INT(tfj_queue_failures(q, "k7"), 0); /* success forgot the backoff */
	tfj_queue_free(q);
}

static void *blocked_get(void *arg)
{
	char *k = NULL;
	long rc = tfj_queue_get(arg, &k);
	free(k);
	return (void *)rc;
}

static void test_shutdown_wakes(void)
{
	struct tfj_queue *q;
	pthread_t t;
	void *ret;

	TFJ_CHECK_INT(tfj_queue_new(&q, NULL), 0);
	pthread_create(&t, NULL, blocked_get, q);
	usleep(20000);
	tfj_queue_shutdown(q);
	pthread_join(t, &ret);
	TFJ_CHECK_INT((long)ret, TFJ_ECANCELED);
	TFJ_CHECK_INT(tfj_queue_add(q, "late"), 0); /* ignored after shutdown */
	TFJ_CHECK_INT(tfj_queue_len(q), 0);
	tfj_queue_free(q);
}

int main(void)
{
	TFJ_RUN(test_dedup_fifo);
	TFJ_RUN(test_delayed);
	TFJ_RUN(test_backoff);
	TFJ_RUN(test_global_bucket);
	TFJ_RUN(test_workers);
	TFJ_RUN(test_shutdown_wakes);
	return tfj_test_finish();
}
