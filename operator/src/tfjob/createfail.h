/*
 * createfail.h - what the operator does when creating a TFJob's pods or
 * services keeps failing for a reason no retry can fix.
 *
 * A create refused with 403 (Pod Security, an exhausted ResourceQuota, a
 * missing PriorityClass: admission says "forbidden"), 400/422 (the object
 * is invalid) or 404 (a referenced object or the namespace is missing), or
 * whose name is taken by an object that is not ours (409, adopt.h), fails
 * the same way next time. Retried at the queue's pace (first retry after
 * 5 ms) such a job used to leave an Event per try and stay "Created" with
 * nothing else to see. Here, per job:
 *
 *  - each such failure counts; a create that succeeds resets the count, and
 *    so does a reconcile that has nothing left to create;
 *  - the next create waits TFJ_CREATEFAIL_BASE_MS * 2^(failures-1), capped
 *    at TFJ_CREATEFAIL_MAX_MS (the controller skips creates until then);
 *  - from TFJ_CREATEFAIL_VISIBLE_AFTER failures on, the planner sets the
 *    TFJob's ReplicaFailure condition True with the API server's message
 *    (kubectl describe; the MESSAGE column of kubectl get -o wide), and
 *    removes it once the count is back to 0.
 *
 * Transient failures (429, 5xx, timeouts, a conflict) are not counted: the
 * work queue's own backoff paces them.
 *
 * Pure: no clock (times come in as arguments), no I/O. The record lives in
 * the controller (one per TFJob key, in memory); after an operator restart
 * there is none, and the planner then keeps whatever condition the status
 * already has until the first create tells again.
 *
 * Ownership: plain values, copy with `=`.
 */
#ifndef TFJ_CREATEFAIL_H
#define TFJ_CREATEFAIL_H

#include <stdint.h>

#include "tfjob/jobstatus.h"

#define TFJ_CREATEFAIL_VISIBLE_AFTER 3
#define TFJ_CREATEFAIL_BASE_MS 1000
#define TFJ_CREATEFAIL_MAX_MS 300000

struct tfj_createfail {
	int failures;              /* consecutive permanent failures; 0 = creates work */
	int64_t retry_at_ms;       /* no create before this (unix ms) */
	char reason[TFJ_JOBSTATUS_REASON_MAX];   /* "FailedCreatePod", "NameConflict", ... */
	char message[TFJ_JOBSTATUS_MESSAGE_MAX]; /* the API server's words */
	/* The job's NetworkPolicy: its last create or update failed (any
	 * error), with the reason ("FailedCreateNetworkPolicy",
	 * "FailedUpdateNetworkPolicy") and message the planner's
	 * NetworkPolicyFailure condition shows. It counts toward no backoff:
	 * the pods do not wait for the policy (plan.h). */
	int netpol_failed;
	char netpol_reason[TFJ_JOBSTATUS_REASON_MAX];
	char netpol_message[TFJ_JOBSTATUS_MESSAGE_MAX];
	/* The job's PodGroup create found the PodGroup API not served (404):
	 * the planner blocks the job (PodGroupUnavailable, no pods) and asks
	 * for the next create only from podgroup_retry_at_ms (unix ms), so a
	 * missing CRD costs one request per job per TFJ_CREATEFAIL_PODGROUP_MS. */
	int podgroup_unavailable;
	int64_t podgroup_retry_at_ms;
};

#define TFJ_CREATEFAIL_PODGROUP_MS 30000

/* 1 when a create that failed with tfj error rc would fail again (see above). */
int tfj_createfail_permanent(int rc);

/* The wait after the n-th consecutive failure (n >= 1), in ms. */
int64_t tfj_createfail_delay_ms(int n);

/* Counts a permanent failure at now_ms: reason and message as above. */
void tfj_createfail_fail(struct tfj_createfail *cf, const char *reason, const char *message,
			 int64_t now_ms);

/* A create succeeded, or none is needed: the count goes back to 0. */
void tfj_createfail_ok(struct tfj_createfail *cf);

/* The job's NetworkPolicy write failed (reason, message), or worked (reason NULL). */
void tfj_createfail_netpol(struct tfj_createfail *cf, const char *reason, const char *message);

/* The PodGroup API answered 404 at now_ms (unavailable 1), or a create worked (0). */
void tfj_createfail_podgroup(struct tfj_createfail *cf, int unavailable, int64_t now_ms);
/* 0 when creates may be sent at now_ms, else the ms still to wait. */
int64_t tfj_createfail_wait_ms(const struct tfj_createfail *cf, int64_t now_ms);

/*
 * The ReplicaFailure condition of st (now in unix seconds) for record cf:
 * True with cf's reason and message from TFJ_CREATEFAIL_VISIBLE_AFTER
 * failures on, removed at 0 failures, left as it is in between or when cf is
 * NULL (nothing known, e.g. after a restart).
 */
int tfj_createfail_condition(struct tfj_job_status *st, const struct tfj_createfail *cf,
			     int64_t now);

#endif
