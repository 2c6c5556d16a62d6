/*
 * gang.h - gang scheduling at the edge: keeps a TFJob's PodGroup in the
 * cluster as tfjob/podgroup.h decides, before the planner creates pods.
 *
 * Each reconcile of a job (only with --gang-scheduler-name) reads the
 * PodGroup from the API server (a GET, not a cache: there is one PodGroup
 * per job and the CRD may be missing, so an informer would have nothing to
 * list), then creates, updates or deletes it. Pods are planned only once
 * the PodGroup exists, so the scheduler never sees a pod of the gang
 * without its group.
 *
 * Without the PodGroup CRD (the POST answers 404) the job gets a Warning
 * event PodGroupUnavailable saying what to install, no pods, and is looked
 * at again after TFJ_GANG_RETRY_MS: a missing CRD is an installation
 * problem, not one a fast retry fixes, so it neither crash-loops nor storms
 * the API server. A schedulingPolicy that cannot be turned into a PodGroup
 * gets a Warning InvalidSchedulingPolicy and the same slow retry. Both come
 * back in a struct tfj_gang_block, which the controller hands to the
 * planner: the job's ReplicaFailure condition then says the same (plan.h).
 *
 * Ownership: borrows everything.
 */
#ifndef TFJ_GANG_H
#define TFJ_GANG_H

#include <stdint.h>

#include "app/apply.h"
#include "tfjob/podgroup.h"
#include "tfjob/tfjob.h"

#define TFJ_GANG_RETRY_MS 30000

/* Why the job cannot start: reason NULL = it is not blocked. */
struct tfj_gang_block {
	const char *reason;  /* TFJ_PLAN_GANG_REASON_* (static) */
	char message[512];
};

/*
 * Brings job's PodGroup to its desired state. Returns 0 with *wait_ms 0
 * when the planner may go on, 0 with *wait_ms > 0 when it must not plan pods
 * yet (look again then; block->reason set when the wait is for a reason the
 * user must fix), negative on an API error (retry with backoff).
 */
int tfj_gang_sync(uint64_t *wait_ms, struct tfj_gang_block *block, struct tfj_apply *ap,
		  const struct tfj_gang *g, const struct tfj_tfjob *job);

#endif
