/*
 * planpodgroup.h - the planner's rules for the job's PodGroup (gang
 * scheduling, tfjob/podgroup.h): which observed state it reads and what it
 * plans. Internals of plan.c, pure like it; plan.h states the contract.
 *
 * Observed: the input's podgroup (the cached PodGroup named after the job,
 * whoever owns it), podgroup_api_absent, and the podgroup fields of its
 * create_failure record. Wanted: the PodGroup tfj_podgroup_body builds,
 * while the job is valid, not suspended and not finished.
 */
#ifndef TFJ_PLANPODGROUP_H
#define TFJ_PLANPODGROUP_H

#include "tfjob/planact.h"

/*
 * Before any status decision: sets c->gang_reason and c->gang_message when
 * no PodGroup can be made (the pods wait, ReplicaFailure says why), and
 * c->gang_hold when a PodGroup left by an earlier job of the name must go
 * first.
 */
int tfj_planpodgroup_block(struct tfj_planctx *c);

/*
 * Appends CREATE_PODGROUP, UPDATE_PODGROUP or DELETE_PODGROUP, the Warning
 * event of a new block, and the requeue that looks at a block again.
 */
int tfj_planpodgroup_plan(struct tfj_planctx *c);

#endif
