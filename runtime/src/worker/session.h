/*
 * session.h - a worker's, chief's or evaluator's view of the ps tasks: the
 * full parameter set, the per-shard steps, and the calls that move
 * parameters and gradients (all shards in parallel, see psclient.h).
 *
 * Request messages are built once and re-pointed at the caller's tensors
 * on every call, so a step allocates nothing; parameter and gradient
 * arrays (one per variable) are owned by the session.
 *
 * Retry policy (tfj_session_retry): TFJ_EUNAVAIL is retried with
 * exponential backoff, 100 ms doubling to 2 s, until --peer_timeout seconds
 * of continuous failure; everything else is returned at once.
 *
 * Ownership: tfj_session_init() fills a caller-provided struct that
 * tfj_session_free() releases (also after a failed init).
 */
#ifndef TFJ_SESSION_H
#define TFJ_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "compute/compute.h"
#include "compute/model.h"
#include "task/layout.h"
#include "worker/psclient.h"
#include "worker/pushtrack.h"
#include "task/rtconfig.h"
#include "tfj_runtime.pb-c.h"

struct tfj_session {
	const struct tfj_rtconfig *cfg;
	struct tfj_layout layout;
	struct tfj_psclient *cl;
	struct tfj_compute *comp;
	struct tfj_model *model;
	size_t nps;
	float **params, **grads;     /* per variable */
	int64_t *shard_step;         /* step of each shard at the last pull */
	int64_t gstep;               /* global step = ps 0's */
	int finished;                /* a ps reported the chief's Finish */
	int parts_ok;                /* every ps takes pushes in parts (last Status) */
	unsigned char *finish_acked; /* per shard: acknowledged our Finish (retries skip it) */
	/*
	 * Optimizer state (checkpoints): per variable, state_k blocks of its
	 * element count (checkpoint.h's layout), filled by
	 * tfj_session_pull_state(); NULL when the optimizer keeps none.
	 */
	size_t state_k;
	float **state;
	int have_state;              /* every shard sent its state at the last pull_state */
	int64_t optim_steps;         /* ps 0's optimizer update count at that pull */
	/*
	 * Coordinator: state (same layout, borrowed) sent with every Init, and
	 * its update count; NULL = the ps start their state afresh.
	 */
	const float *const *init_state;
	int64_t init_optim_steps;
	/* Reused request messages, one per shard. */
	Tfj__Runtime__V1__PullRequest *pullq;
	Tfj__Runtime__V1__PushRequest *pushq;
	Tfj__Runtime__V1__Slice **slice_ptrs; /* grouped by shard */
	Tfj__Runtime__V1__Slice *slice_msgs;  /* all slices, grouped by shard */
	size_t *first_slice;                  /* per shard: index of its first slice */
	const ProtobufCMessage **reqs;
	ProtobufCMessage **resps;
	/*
	 * The tries of the push under way (pushtrack.h): the shards that took
	 * it, and the parts of each shard's push where it goes in parts
	 * (async; --push-part-kib).
	 */
	struct tfj_pushtrack push;
	int push_retry;              /* a retry of the same push (tfj_session_push_vars_retry) */
	char task[32];                        /* "worker:1" */
	double t0;                            /* start, tfj_session_now() */
	int exit_hint;                        /* exit code for a failure, when known */
};

/* Backoff state of one "keep trying until the peer deadline" sequence. */
struct tfj_retry {
	double first_fail;
	double delay;
};

/* Monotonic seconds. */
double tfj_session_now(void);

int tfj_session_init(struct tfj_session *s, const struct tfj_rtconfig *cfg);
void tfj_session_free(struct tfj_session *s);

/*
 * Status of every shard; checks the layout hashes. Shards that are not
 * initialised get init_vals (per variable) at init_step when init_vals is
 * not NULL (the coordinator), else the call fails with TFJ_EUNAVAIL.
 */
int tfj_session_ensure_ready(struct tfj_session *s, const float *const *init_vals,
			     int64_t init_step);

/*
 * Pulls every shard into s->params. min_step (per shard, NULL = now) and
 * wait_ms ask each ps to answer once it reached that step (see PullRequest).
 */
int tfj_session_pull(struct tfj_session *s, const int64_t *min_step, uint32_t wait_ms);

/*
 * Pulls every shard's parameters and optimizer state now (for a
 * checkpoint) into s->params and s->state. s->have_state says whether every
 * shard sent state (a ps of an older version sends none: not an error).
 */
int tfj_session_pull_state(struct tfj_session *s);

/* Pushes s->grads to every shard; *stale counts shards that dropped it. */
int tfj_session_push(struct tfj_session *s, int64_t max_steps, int *stale);

/*
 * Pushes the gradients of the variables [lo, hi) only, as one part of the
 * step (PushRequest.more) to each shard that holds slices of them; shards
 * that hold none are not called. Parts go in descending variable order, as
 * a backward pass makes them: a shard's part counts the step once no
 * slice of a variable below lo is left, so the part with lo = 0 ends the
 * step. Needs s->parts_ok (TFJ_EINVAL otherwise) unless [lo, hi) is every
 * variable, which is tfj_session_push().
 */
int tfj_session_push_vars(struct tfj_session *s, size_t lo, size_t hi, int64_t max_steps,
			  int *stale);

/* Tells every shard that training is finished. */
int tfj_session_finish(struct tfj_session *s);

/*
 * After a call returned rc: 0 = go on, 1 = try again (having slept the
 * backoff), anything else = the error to give up with.
 */
int tfj_session_retry(struct tfj_session *s, struct tfj_retry *r, int rc, const char *what);

/*
 * tfj_session_push with retries; reinit (coordinator only) refills empty
 * shards, since a ps that restarted without a checkpoint refuses Pushes
 * as well as Pulls until the coordinator's Init. A try after the first
 * goes only to the shards that have not answered OK yet (and, for a push
 * in parts, only with the parts not applied yet): each shard takes the
 * gradient once unless an answer was lost.
 */
int tfj_session_push_retry(struct tfj_session *s, int64_t max_steps, int *stale,
			   const float *const *reinit, int64_t reinit_step);

/* tfj_session_push_vars with the retries of tfj_session_push_retry. */
int tfj_session_push_vars_retry(struct tfj_session *s, size_t lo, size_t hi, int64_t max_steps,
				int *stale, const float *const *reinit, int64_t reinit_step);

/* tfj_session_pull with retries; reinit (coordinator only) refills empty shards. */
int tfj_session_pull_retry(struct tfj_session *s, const int64_t *min_step, uint32_t wait_ms,
			   const float *const *reinit, int64_t reinit_step);

#endif
