/*
 * plannetpol.h - the planner's rules for the job's NetworkPolicy
 * (tfjob/netpol.h): which observed state it reads and what it plans.
 * Internals of plan.c, pure like it; plan.h states the contract.
 *
 * Observed: the input's netpols (the job's own, slim copies) and the netpol
 * fields of its create_failure record. Wanted: `<job>-training` with the
 * spec netpol.h builds, while the job runs.
 */
#ifndef TFJ_PLANNETPOL_H
#define TFJ_PLANNETPOL_H

#include "tfjob/planact.h"

/* Sets or removes NetworkPolicyFailure in c->st (before any status write). */
int tfj_plannetpol_condition(struct tfj_planctx *c);

/* Appends CREATE_NETPOL or UPDATE_NETPOL when the policy is missing or stale. */
int tfj_plannetpol_plan(struct tfj_planctx *c);

#endif
