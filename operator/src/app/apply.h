/*
 * apply.h - carrying out a plan (plan.h): the only code that writes a
 * TFJob's children, its status and its events.
 *
 *  - WRITE_STATUS: PUT .../tfjobs/<name>/status with the job's
 *    resourceVersion. A 409 sets res->status_conflict and stops (the caller
 *    re-reads the TFJob and replans); any other failure also stops.
 *  - CREATE_*: POST. On 409 AlreadyExists the object is read and judged
 *    (tfjob/adopt.h): ours is success, an orphan with our label is adopted,
 *    anything else is an error with a Warning event. A permanent failure
 *    (tfjob/createfail.h) is counted in res->create_failure, and while its
 *    backoff runs the plan's creates are skipped (res->creates_delayed) and
 *    res->requeue_ms brings the key back when it ends.
 *    Before a plan's first pod create, the job's ps Secret
 *    (tfjob/pssecret.h, random bytes from getrandom) and NetworkPolicy
 *    (tfjob/netpol.h) are created. The Secret is never read: a new one is
 *    POSTed with generateName and its name recorded in the TFJob's
 *    status.psSecretName (a status write as WRITE_STATUS's, whose 409 is
 *    a status conflict the same way); a recorded one is POSTed under
 *    its name, a 409 meaning it is there. Pods wait for the Secret (their
 *    volume needs it); a NetworkPolicy that cannot be created is a
 *    Warning event and the pods are created anyway (the ps secret does
 *    not depend on the network).
 *  - *_PODGROUP: app/gang.h (a PodGroup that cannot be created holds the
 *    plan's pods).
 *  - DELETE_*: DELETE with preconditions.uid, propagation Background; 404
 *    and 409 (a newer incarnation) are success.
 *  - EVENT: a core/v1 Event on the TFJob, queued for the events thread
 *    (events.h; best effort, its own rate budget).
 *  - DELETE_JOB: DELETE the TFJob with its uid.
 *  - REQUEUE: the smallest after_ms lands in res->requeue_ms.
 * Every create/delete is recorded in the expectations before it is sent and
 * withdrawn when it fails or changes nothing. A failed child write posts a
 * Warning event and does not stop the other, independent writes; the first
 * such error is returned so the key is retried with backoff.
 *
 * Ownership: struct tfj_apply borrows the client, the expectations and the
 * event recorder.
 */
#ifndef TFJ_APPLY_H
#define TFJ_APPLY_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <tfj/buf.h>

#include "app/events.h"
#include "app/guardmemo.h"
#include "app/jobmetrics.h"
#include "kube/expect.h"
#include "kube/kube.h"
#include "report/capublish.h"
#include "tfjob/createfail.h"
#include "tfjob/plan.h"
#include "tfjob/tfjob.h"

struct tfj_apply {
	struct tfj_kube *k;          /* borrowed */
	struct tfj_expect *exp;      /* borrowed */
	struct tfj_events *events;   /* borrowed; NULL = no events */
	const char *operator_name;   /* borrowed; label of the job's Secret and
				      * NetworkPolicy; NULL = the default */
	struct tfj_capublish *capub; /* borrowed; the report CA (PUBLISH_CA); NULL = none */
	const char *cluster_domain;  /* borrowed; the pods' host form (podspec.h),
				      * for the ps certificate's names; NULL = short */
	struct tfj_guardmemo *guards;/* borrowed; jobs whose Secret exists, by
				      * name (guardmemo.h); NULL = ensure it every time */
	struct tfj_jobmetrics *jm;   /* borrowed; the same counts by namespace
				      * (jobmetrics.h); NULL = none */
	const struct tfj_gang *gang; /* borrowed; the PodGroup API of the
				      * *_PODGROUP actions (app/gang.h); NULL = off */
	_Atomic uint64_t jobs_created, jobs_succeeded, jobs_failed, jobs_restarted;
	_Atomic uint64_t creates, deletes, create_errors, delete_errors;
	_Atomic uint64_t status_writes, status_conflicts;
	_Atomic uint64_t name_conflicts, adoptions;
	_Atomic uint64_t pods_force_deleted; /* pods of a lost node (tfjob/planlost.h) */
};

struct tfj_apply_result {
	/* In: the job's permanent create failures, updated by the creates (may be
	 * NULL: none counted, no backoff). Kept by tfj_apply_plan. */
	struct tfj_createfail *create_failure;
	uint64_t requeue_ms;   /* nearest timer from REQUEUE actions, 0 = none */
	int status_conflict;   /* the status write got 409 */
	int creates_delayed;   /* creates skipped: the createfail backoff runs */
	int creates_work;      /* a create succeeded, or none was needed */
};

/*
 * Applies plan for TFJob `job` (key "ns/name"). 0 or the first error.
 * res->create_failure is read before res is reset (see above).
 */
int tfj_apply_plan(struct tfj_apply *ap, const struct tfj_tfjob *job, const char *key,
		   const struct tfj_plan *plan, struct tfj_apply_result *res);

/* Queues a core/v1 Event about job (type/reason NULL: nothing). Best effort. */
void tfj_apply_event(struct tfj_apply *ap, const struct tfj_tfjob *job, const char *type,
		     const char *reason, const char *msg);

/* Appends the job, write and event counters (events.h, jobmetrics.h) as Prometheus text. */
int tfj_apply_metrics(struct tfj_apply *ap, struct tfj_buf *out);

#endif
