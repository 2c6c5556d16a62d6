/*
 * overlap.c - the transfer thread of asynchronous training (overlap.h).
 */
#include "overlap.h"

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
	int64_t max_steps;
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
	}
	t1 = tfj_session_now();
	res->push_s = t1 - t0;
	rc = tfj_session_pull_retry(s, NULL, 0, o->reinit, o->reinit_step);
	res->pull_s = tfj_session_now() - t1;
	return rc;
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
		rc = run_job(o, &res);
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
	 * Signals go to the main thread, whose handler sets tfj_stop_requested;
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

int tfj_overlap_submit(struct tfj_overlap *o, int push, int64_t max_steps)
{
	int rc = 0;

	pthread_mutex_lock(&o->mu);
	if (o->st == RUNNING) {
		rc = tfj_err_set(TFJ_EINVAL, "overlap: a transfer is already running");
	} else {
		o->push = push;
		o->max_steps = max_steps;
		o->st = RUNNING;
		pthread_cond_broadcast(&o->cv);
	}
	pthread_mutex_unlock(&o->mu);
	return rc;
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
