/*
 * overlap.h - a worker's transfer thread for asynchronous training: it
 * pushes one step's gradients and pulls the next step's parameters while
 * the caller computes the current step (issue #18), so an async step costs
 * about max(compute, push + pull) instead of their sum.
 *
 * One job at a time: tfj_overlap_submit() starts it, tfj_overlap_wait()
 * waits for it. Between the two the thread owns the session's transfer
 * state: s->grads (sent), s->params (filled), s->shard_step, s->gstep,
 * s->finished, the request messages and the ps client. The caller computes
 * meanwhile on its own parameter and gradient arrays and swaps them with
 * the session's after the wait (pointer swaps, no copy), so nothing is
 * shared while the thread runs.
 *
 * A job retries exactly like the sequential loop: the push with
 * tfj_session_push_retry, then the pull with tfj_session_pull_retry
 * (EUNAVAIL until --peer-timeout; the coordinator refills a ps that
 * restarted empty). A pulled model is one step staler than in the sequential loop (it
 * holds the previous step's push, not the current one's): asynchronous
 * training tolerates that, synchronous training keeps the sequential loop.
 *
 * Ownership: tfj_overlap_new() starts the thread, tfj_overlap_free() waits
 * for a running job and joins it. The session must outlive the overlap.
 */
#ifndef TFJ_OVERLAP_H
#define TFJ_OVERLAP_H

#include <stdint.h>

#include "session.h"

struct tfj_overlap;

/* What one job did. */
struct tfj_overlap_result {
	int pushed;       /* the job had gradients and they were accepted */
	int stale;        /* shards that dropped them (see tfj_session_push) */
	double push_s;    /* seconds of the push, retries included */
	double pull_s;    /* seconds of the pull, retries included */
};

/* reinit, reinit_step: as tfj_session_pull_retry's (coordinator only, else NULL). */
int tfj_overlap_new(struct tfj_overlap **out, struct tfj_session *s, const float *const *reinit,
		    int64_t reinit_step);
void tfj_overlap_free(struct tfj_overlap *o);

/*
 * Starts a job: push s->grads (when `push`) tagged for max_steps, then pull
 * every shard into s->params. TFJ_EINVAL when a job is already running.
 */
int tfj_overlap_submit(struct tfj_overlap *o, int push, int64_t max_steps);

/*
 * Waits for the job and returns its result: 0, or the error (with its
 * detail set on the calling thread) that the retries gave up with.
 */
int tfj_overlap_wait(struct tfj_overlap *o, struct tfj_overlap_result *res);

#endif
