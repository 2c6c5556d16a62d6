/*
 * overlap.c - the transfer thread of asynchronous training (overlap.h).
 */
#include "worker/overlap.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

enum state { IDLE, RUNNING, DONE, QUIT };

struct tfj_overlap {
	struct tfj_session *s;
	const float *const *reinit;
	int64_t reinit_step;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	enum state st;
	/* The job, set by submit. */
	int push;
	int parts;          /* push mode: a step's gradients in parts, no pull */
	int64_t max_steps;
	/* Push mode: what the compute has finished (under mu). */
	size_t ready_from;  /* variables [ready_from, nvars) are final */
	int abandon;        /* the step failed: no more parts come */
	/* Its outcome, set by the thread. */
	int rc;
	char detail[TFJ_ERR_DETAIL_MAX];
	struct tfj_overlap_result res;
};

/* Push (with the sequential loop's retries), then pull. Runs on the thread. */
static int run_job(struct tfj_overlap *o, struct tfj_overlap_result *res)
{
	struct tfj_session *s = o->s;
	double t0 = tfj_session_now(), t1;
	int rc;

	memset(res, 0, sizeof(*res));
	if (o->push) {
		rc = tfj_session_push_retry(s, o->max_steps, &res->stale, o->reinit,
					    o->reinit_step);
		if (rc)
			return rc;
		res->pushed = 1;
		res->parts = 1;
	}
	t1 = tfj_session_now();
	res->push_s = t1 - t0;
	rc = tfj_session_pull_retry(s, NULL, 0, o->reinit, o->reinit_step);
	res->pull_s = tfj_session_now() - t1;
	return rc;
}

/*
 * Push mode: each run of variables the backward pass finished goes out as
 * one part as soon as the thread is free, so parts that finished while one
 * was in flight travel together. Against a ps that takes no parts the job
 * waits for the whole gradient and pushes it in one.
 */
static int run_parts(struct tfj_overlap *o, struct tfj_overlap_result *res)
{
	struct tfj_session *s = o->s;
	size_t hi = s->layout.nvars, lo;
	int rc, stale;

	memset(res, 0, sizeof(*res));
	for (;;) {
		double t0;

		pthread_mutex_lock(&o->mu);
		while (!o->abandon && !(o->ready_from < hi && (s->parts_ok || o->ready_from == 0)))
			pthread_cond_wait(&o->cv, &o->mu);
		lo = o->ready_from;
		if (o->abandon) {
			pthread_mutex_unlock(&o->mu);
			return 0;
		}
		pthread_mutex_unlock(&o->mu);
		t0 = tfj_session_now();
		rc = tfj_session_push_vars_retry(s, lo, hi, o->max_steps, &stale, o->reinit,
						 o->reinit_step);
		res->push_s += tfj_session_now() - t0;
		if (rc)
			return rc;
		res->parts++;
		if (stale > res->stale)
			res->stale = stale;
		hi = lo;
		if (hi == 0) {
			res->pushed = 1;
			return 0;
		}
	}
}

static void *thread_main(void *arg)
{
	struct tfj_overlap *o = arg;

	pthread_mutex_lock(&o->mu);
	for (;;) {
		struct tfj_overlap_result res;
		int rc;

		while (o->st != RUNNING && o->st != QUIT)
			pthread_cond_wait(&o->cv, &o->mu);
		if (o->st == QUIT)
			break;
		pthread_mutex_unlock(&o->mu);
		tfj_err_clear();
		rc = o->parts ? run_parts(o, &res) : run_job(o, &res);
		pthread_mutex_lock(&o->mu);
		o->rc = rc;
		o->res = res;
		/* The detail is thread-local: hand it over with the code. */
		snprintf(o->detail, sizeof(o->detail), "%s", rc ? tfj_err_detail() : "");
		if (o->st == RUNNING)
			o->st = DONE;
		pthread_cond_broadcast(&o->cv);
	}
	pthread_mutex_unlock(&o->mu);
	return NULL;
}

int tfj_overlap_new(struct tfj_overlap **out, struct tfj_session *s, const float *const *reinit,
		    int64_t reinit_step)
{
	struct tfj_overlap *o;
	sigset_t all, old;
	int e;

	*out = NULL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return tfj_err_set(TFJ_ENOMEM, "overlap: out of memory");
	o->s = s;
	o->reinit = reinit;
	o->reinit_step = reinit_step;
	o->st = IDLE;
	pthread_mutex_init(&o->mu, NULL);
	pthread_cond_init(&o->cv, NULL);
	/*
	 * Signals go to the main thread, whose handler asks to stop (stop.h);
	 * the job's retries see the flag and give up with TFJ_ECANCELED.
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	e = pthread_create(&o->th, NULL, thread_main, o);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e != 0) {
		pthread_cond_destroy(&o->cv);
		pthread_mutex_destroy(&o->mu);
		free(o);
		return tfj_err_set(TFJ_ENOMEM, "overlap: cannot start the transfer thread (%d)", e);
	}
	*out = o;
	return 0;
}

void tfj_overlap_free(struct tfj_overlap *o)
{
	if (!o)
		return;
	pthread_mutex_lock(&o->mu);
	/* A running job ends by its own deadlines; the session must not go before it. */
	while (o->st == RUNNING)
		pthread_cond_wait(&o->cv, &o->mu);
	o->st = QUIT;
	pthread_cond_broadcast(&o->cv);
	pthread_mutex_unlock(&o->mu);
	pthread_join(o->th, NULL);
	pthread_cond_destroy(&o->cv);
	pthread_mutex_destroy(&o->mu);
	free(o);
}

static int submit(struct tfj_overlap *o, int push, int parts, int64_t max_steps)
{
	int rc = 0;

	pthread_mutex_lock(&o->mu);
	if (o->st == RUNNING) {
		rc = tfj_err_set(TFJ_EINVAL, "overlap: a transfer is already running");
	} else {
		o->push = push;
		o->parts = parts;
		o->max_steps = max_steps;
		o->ready_from = o->s->layout.nvars;
		o->abandon = 0;
		o->st = RUNNING;
		pthread_cond_broadcast(&o->cv);
	}
	pthread_mutex_unlock(&o->mu);
	return rc;
}

int tfj_overlap_submit(struct tfj_overlap *o, int push, int64_t max_steps)
{
	return submit(o, push, 0, max_steps);
}

int tfj_overlap_submit_parts(struct tfj_overlap *o, int64_t max_steps)
{
	return submit(o, 1, 1, max_steps);
}

void tfj_overlap_ready(struct tfj_overlap *o, size_t first_var)
{
	pthread_mutex_lock(&o->mu);
	if (first_var < o->ready_from) {
		o->ready_from = first_var;
		pthread_cond_broadcast(&o->cv);
	}
	pthread_mutex_unlock(&o->mu);
}

void tfj_overlap_abandon(struct tfj_overlap *o)
{
	pthread_mutex_lock(&o->mu);
	o->abandon = 1;
	pthread_cond_broadcast(&o->cv);
	pthread_mutex_unlock(&o->mu);
}

int tfj_overlap_wait(struct tfj_overlap *o, struct tfj_overlap_result *res)
{
	int rc;

	pthread_mutex_lock(&o->mu);
	if (o->st == IDLE) {
		pthread_mutex_unlock(&o->mu);
		return tfj_err_set(TFJ_EINVAL, "overlap: no transfer to wait for");
	}
	while (o->st == RUNNING)
		pthread_cond_wait(&o->cv, &o->mu);
	o->st = IDLE;
	*res = o->res;
	rc = o->rc;
	if (rc)
		tfj_err_set(rc, "%s", o->detail);
	pthread_mutex_unlock(&o->mu);
	return rc;
}
