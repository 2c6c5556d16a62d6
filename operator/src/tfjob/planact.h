/*
 * planact.h - internals of the planner (plan.c): the working context of one
 * tfj_plan_compute() call and the builders that append actions to its plan.
 * Not for use outside the planner; see plan.h for the contract.
 *
 * Ownership: the context owns the arrays tfj_planact_observe() and
 * tfj_planact_assign() allocate (tfj_planact_release() frees them); actions
 * belong to the plan.
 */
#ifndef TFJ_PLANACT_H
#define TFJ_PLANACT_H

#include <stddef.h>
#include <stdint.h>

#include "tfjob/plan.h"
#include "tfjob/podspec.h"
#include "tfjob/podstate.h"

struct tfj_planctx {
	const struct tfj_plan_input *in;
	const struct tfj_tfjob *job;
	struct tfj_podspec_opts opts;
	struct tfj_plan *plan;
	struct tfj_job_status st;
	int64_t now;                  /* seconds */
	struct tfj_podstate *pods;
	size_t npods;
	struct tfj_podstate *svcs;
	size_t nsvcs;
	int *pod_slot[TFJ_RT_COUNT];  /* per index: position in pods[], or -1 */
	int *svc_slot[TFJ_RT_COUNT];
	unsigned char *pod_used;      /* pods[i] sits in a slot */
	unsigned char *pod_gone;      /* pods[i] is deleted by this plan */
	unsigned char *pod_mark;      /* pods[i] to delete once the job survives (TFJ_DEL_*) */
	unsigned char *svc_used;
	int64_t requeue_ms;           /* nearest timer, 0 = none */
	/* Gang scheduling (planpodgroup.h): why no pod may be created yet
	 * (TFJ_PLAN_GANG_REASON_*, NULL = none) and what to fix; gang_hold:
	 * no pod this plan, a stale PodGroup goes first (no condition). */
	const char *gang_reason;
	char gang_message[512];
	int gang_hold;
};

/* vsnprintf into a fixed buffer; truncation is fine for messages. */
void tfj_planact_fmt(char *buf, size_t n, const char *f, ...) __attribute__((format(printf, 3, 4)));

/* Appends an action of `kind` (zeroed); NULL with TFJ_ENOMEM/TFJ_ETOOBIG recorded. */
struct tfj_action *tfj_planact_push(struct tfj_planctx *c, enum tfj_action_kind kind);
/* Attaches the event to emit when the action succeeded. */
int tfj_planact_set_event(struct tfj_action *a, const char *type, const char *reason,
			  const char *msg);
/* Appends a job-level EVENT. */
int tfj_planact_event(struct tfj_planctx *c, const char *type, const char *reason,
		      const char *msg);
/* Keeps the nearest timer: a requeue at unix second due_s. */
void tfj_planact_requeue_at(struct tfj_planctx *c, int64_t due_s);

/*
 * Deletes pods[i] (once per plan; terminating pods are skipped). For every
 * reason but cleanup its container restarts move into the persisted count,
 * plus one for a restart, so backoffLimit still sees them.
 */
int tfj_planact_delete_pod(struct tfj_planctx *c, size_t i, enum tfj_delete_reason why,
			   const char *detail);
int tfj_planact_delete_service(struct tfj_planctx *c, size_t i, enum tfj_delete_reason why);
/* CREATE_POD or CREATE_SERVICE for replica (t, idx), body from podspec. */
int tfj_planact_create(struct tfj_planctx *c, enum tfj_action_kind kind, enum tfj_rtype t,
		       int idx);

/* Reads the input's pods and services (nameless objects are skipped). */
int tfj_planact_observe(struct tfj_planctx *c);
/* Sorts objects into slots by exact expected name; the rest stays unused (excess). */
int tfj_planact_assign(struct tfj_planctx *c);
/* "worker replica 1 (pod x): container tensorflow exited with code 137 (OOMKilled)" */
void tfj_planact_describe(char *buf, size_t n, const struct tfj_podstate *ps);
/* Stable sort into the apply order plan.h promises. */
int tfj_planact_order(struct tfj_plan *p);
/* Frees what observe/assign allocated. */
void tfj_planact_release(struct tfj_planctx *c);

#endif
