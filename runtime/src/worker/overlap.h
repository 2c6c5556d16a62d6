/*
 * overlap.h - a worker's transfer thread for asynchronous training, in one
 * of two modes (issue #18, --overlap step|push):
 *
 * step: it pushes one step's gradients and pulls the next step's
 * parameters while the caller computes the current step, so an async step
 * costs about max(compute, push + pull) instead of their sum.
 *
 * push: it pushes the current step's gradients in parts, each layer's as
 * soon as the backward pass finished it (tfj_overlap_ready() from the
 * model's ready callback), while the pass goes on; the caller pulls after
 * the job, so the parameters are exactly as fresh as in the sequential
 * loop. Only the push overlaps, and only the part of it that is not the
 * first layer's (computed last).
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

#include "worker/session.h"

struct tfj_overlap;

/* What one job did. */
struct tfj_overlap_result {
	int pushed;       /* the job had gradients and they were accepted */
	int stale;        /* shards that dropped them (see tfj_session_push) */
	int parts;        /* push mode: pushes it took (1 = whole) */
	double push_s;    /* seconds of the push, retries included (push mode:
			     the calls' time, not the waits for the compute) */
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
 * Push mode: starts a job that pushes s->grads in parts as
 * tfj_overlap_ready() reports them final, in descending variable order, and
 * ends when the part of variable 0 is accepted (res->pushed) or when
 * tfj_overlap_abandon() says the step failed. Between submit and wait the
 * thread reads s->grads[v] for v >= the last ready first_var and uses the
 * session; the caller writes only the gradients not yet reported and
 * leaves the session alone. A ps that takes no parts (s->parts_ok = 0)
 * gets the whole gradient at once, after the last ready().
 */
int tfj_overlap_submit_parts(struct tfj_overlap *o, int64_t max_steps);

/* Push mode: s->grads[first_var..nvars) are final. Called from the computing thread. */
void tfj_overlap_ready(struct tfj_overlap *o, size_t first_var);

/* Push mode: the step failed; the job ends after the part in flight, without the rest. */
void tfj_overlap_abandon(struct tfj_overlap *o);

/*
 * Waits for the job and returns its result: 0, or the error (with its
 * detail set on the calling thread) that the retries gave up with.
 */
int tfj_overlap_wait(struct tfj_overlap *o, struct tfj_overlap_result *res);

#endif
