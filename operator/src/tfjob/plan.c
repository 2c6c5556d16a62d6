/*
 * plan.c - the desired-state planner (see plan.h for the contract and
 * docs/operator-plan.md for the rules and where they differ from the
 * reference operator).
 *
 * One plan walks these steps; each step may end the job, and every way a
 * job ends goes through finish(), so cleanPodPolicy and the TTL apply to
 * success, pod failure, backoff and deadline alike:
 *   1. sort observed pods/services into slots (type, index); the rest is excess
 *   2. record succeeded indexes; success ends the job
 *   3. suspend: delete pods, keep services
 *   4. classify failed pods: disruption, restart, or permanent failure
 *   5. permanent failure, backoffLimit, activeDeadlineSeconds end the job
 *   6. otherwise delete what restarts, create what is missing, set conditions
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/exitcode.h>
#include <tfj/json.h>
#include <tfj/names.h>

#include "tfjob/plan.h"
#include "tfjob/planact.h"
#include "tfjob/plankueue.h"
#include "tfjob/planlost.h"
#include "tfjob/plannetpol.h"
#include "tfjob/planpodgroup.h"
#include "tfjob/planprog.h"
#include "tfjob/netpol.h"
#include "tfjob/pssecret.h"
#include "tfjob/stoprule.h"


static const char *const kind_names[] = {
	[TFJ_ACT_WRITE_STATUS] = "WriteStatus", [TFJ_ACT_EVENT] = "Event",
	[TFJ_ACT_DELETE_POD] = "DeletePod", [TFJ_ACT_DELETE_SERVICE] = "DeleteService",
	[TFJ_ACT_DELETE_PODGROUP] = "DeletePodGroup", [TFJ_ACT_CREATE_PODGROUP] = "CreatePodGroup",
	[TFJ_ACT_UPDATE_PODGROUP] = "UpdatePodGroup", [TFJ_ACT_PUBLISH_CA] = "PublishReportCA",
	[TFJ_ACT_CREATE_SECRET] = "CreateSecret", [TFJ_ACT_CREATE_NETPOL] = "CreateNetworkPolicy",
	[TFJ_ACT_UPDATE_NETPOL] = "UpdateNetworkPolicy", [TFJ_ACT_CREATE_SERVICE] = "CreateService",
	[TFJ_ACT_CREATE_POD] = "CreatePod", [TFJ_ACT_DELETE_JOB] = "DeleteJob",
	[TFJ_ACT_RELEASE_POD] = "ReleasePod", [TFJ_ACT_REQUEUE] = "Requeue"
};

const char *tfj_plan_kind_name(enum tfj_action_kind k)
{
	return (k >= 0 && k <= TFJ_ACT_REQUEUE) ? kind_names[k] : "";
}

const char *tfj_plan_reason_name(enum tfj_delete_reason r)
{
	static const char *const names[] = { "", "restart", "disruption", "cleanup", "suspend" };

	return (r >= 0 && r <= TFJ_DEL_SUSPEND) ? names[r] : "";
}

/* ---- status -------------------------------------------------------- */

static void count_replicas(struct tfj_planctx *c)
{
	size_t i;
	int t;

	for (t = 0; t < TFJ_RT_COUNT; t++) {
		c->st.rs[t].present = c->job->spec_valid && c->job->rs[t].present;
		c->st.rs[t].expected = c->st.rs[t].present ? c->job->rs[t].replicas : 0;
		c->st.rs[t].active = 0;
		c->st.rs[t].failed = 0;
	}
	for (i = 0; i < c->npods; i++) {
		struct tfj_podstate *ps = &c->pods[i];

		if (!c->pod_used[i] || ps->deleting || c->pod_gone[i])
			continue;
		if (ps->phase == TFJ_POD_FAILED)
			c->st.rs[ps->type].failed++;
		else if (ps->phase != TFJ_POD_SUCCEEDED)
			c->st.rs[ps->type].active++;
	}
}

static int write_status(struct tfj_planctx *c)
{
	struct tfj_action *a;
	cJSON *body;
	int rc;

	count_replicas(c);
	if ((rc = tfj_jobstatus_encode(&body, &c->st)))
		return rc;
	if (c->job->status_json && cJSON_Compare(body, c->job->status_json, 1)) {
		cJSON_Delete(body);
		return 0;
	}
	if (!(a = tfj_planact_push(c, TFJ_ACT_WRITE_STATUS))) {
		cJSON_Delete(body);
		return TFJ_ENOMEM;
	}
	a->body = body;
	tfj_planact_fmt(a->name, sizeof(a->name), "%s", c->job->name);
	return 0;
}

/* ---- terminal path ------------------------------------------------- */

/* cleanPodPolicy, TTL and the status write: the end of every finished plan. */
static int finish(struct tfj_planctx *c)
{
	enum tfj_cleanpod policy = c->job->run.clean_pod;
	const struct tfj_run_policy *rp = &c->job->run;
	size_t i, j;
	int rc;

	for (i = 0; i < c->npods && policy != TFJ_CLEAN_NONE; i++) {
		enum tfj_pod_phase ph = c->pods[i].phase;

		if (policy == TFJ_CLEAN_RUNNING && (ph == TFJ_POD_SUCCEEDED || ph == TFJ_POD_FAILED))
			continue;
		if ((rc = tfj_planact_delete_pod(c, i, TFJ_DEL_CLEANUP, "job finished")))
			return rc;
	}
	/* A service goes with its pod; with All every service goes. */
	for (j = 0; j < c->nsvcs && policy != TFJ_CLEAN_NONE; j++) {
		int go = policy == TFJ_CLEAN_ALL;

		for (i = 0; i < c->npods && !go; i++)
			go = !strcmp(c->pods[i].name, c->svcs[j].name) &&
			     (c->pod_gone[i] || c->pods[i].deleting);
		if (go && (rc = tfj_planact_delete_service(c, j, TFJ_DEL_CLEANUP)))
			return rc;
	}
	if (!c->st.completion_time)
		c->st.completion_time = c->now;
	/* Replicas that never end on their own: their agents stop them (planprog.h). */
	if (tfj_jobstatus_is(&c->st, TFJ_COND_SUCCEEDED) && (rc = tfj_planprog_linger(c)))
		return rc;
	if (rp->has_ttl) {
		int64_t due = c->st.completion_time + rp->ttl_seconds;

		if (c->in->now_ms >= due * 1000) {
			struct tfj_action *a = tfj_planact_push(c, TFJ_ACT_DELETE_JOB);
			char msg[256];

			if (!a)
				return TFJ_ENOMEM;
			tfj_planact_fmt(a->name, sizeof(a->name), "%s", c->job->name);
			tfj_planact_fmt(a->uid, sizeof(a->uid), "%s", c->job->uid);
			tfj_planact_fmt(msg, sizeof(msg), "Deleting TFJob %s: ttlSecondsAfterFinished (%lld s) "
			    "passed", c->job->name, (long long)rp->ttl_seconds);
			if ((rc = tfj_planact_set_event(a, "Normal", "TFJobTTLExpired", msg)))
				return rc;
		} else {
			tfj_planact_requeue_at(c, due);
		}
	}
	return write_status(c);
}

static int fail(struct tfj_planctx *c, const char *reason, const char *msg)
{
	int rc;

	if ((rc = tfj_jobstatus_set(&c->st, TFJ_COND_FAILED, 1, reason, msg, c->now)))
		return rc;
	c->st.completion_time = c->now;
	if ((rc = tfj_planact_event(c, "Warning", reason, msg)))
		return rc;
	return finish(c);
}

/* ---- the steps ----------------------------------------------------- */

static int job_succeeded(struct tfj_planctx *c)
{
	const struct tfj_tfjob *job = c->job;
	int ct = tfj_tfjob_chief_type(job), i;

	if (ct >= 0)
		return tfj_jobstatus_completed(&c->st.rs[ct], 0);
	if (job->success_policy == TFJ_SUCCESS_DEFAULT)
		return tfj_jobstatus_completed(&c->st.rs[TFJ_RT_WORKER], 0);
	for (i = 0; i < job->rs[TFJ_RT_WORKER].replicas; i++)
		if (!tfj_jobstatus_completed(&c->st.rs[TFJ_RT_WORKER], i))
			return 0;
	return 1;
}

static int suspend(struct tfj_planctx *c, const char *jobref)
{
	char msg[256];
	size_t i;
	int rc;

	for (i = 0; i < c->npods; i++)
		if ((rc = tfj_planact_delete_pod(c, i, TFJ_DEL_SUSPEND, "job suspended")))
			return rc;
	tfj_planact_fmt(msg, sizeof(msg), "TFJob %s is suspended.", jobref);
	if (!tfj_jobstatus_is(&c->st, TFJ_COND_SUSPENDED) &&
	    ((rc = tfj_planact_event(c, "Normal", "TFJobSuspended", msg)) ||
	     (rc = tfj_plankueue_warn_keys(c))))
		return rc;
	if ((rc = tfj_jobstatus_set(&c->st, TFJ_COND_SUSPENDED, 1, "TFJobSuspended", msg, c->now)))
		return rc;
	if (c->st.cond[TFJ_COND_RUNNING].present)
		tfj_jobstatus_set(&c->st, TFJ_COND_RUNNING, 0, "TFJobSuspended", msg, c->now);
	if (c->st.cond[TFJ_COND_RESTARTING].present)
		tfj_jobstatus_set(&c->st, TFJ_COND_RESTARTING, 0, "TFJobSuspended", msg, c->now);
	/* activeDeadlineSeconds counts from the resume, as for a batch Job. */
	c->st.start_time = 0;
	return write_status(c);
}

/* What step 4 found. */
struct verdict {
	int permanent;              /* a pod failed for good */
	char failure[400];          /* the one that failed first (finishedAt) */
	int64_t failure_at;         /* its finishedAt; INT64_MAX = unknown */
	int restarts;               /* pods deleted to restart */
	char restart_msg[400];
	int64_t new_restarts;       /* backoff units added by those */
	int64_t live_restarts;      /* container restarts of pods that stay */
	int missing;                /* slots needing a pod */
	int running;                /* slots with a running pod */
	int open;                   /* slots not completed */
	int done;                   /* the lead replica reported success (planprog.h) */
};

/*
 * enableDynamicWorker: a worker that failed for good does not fail the job
 * (Kubeflow v1.9, pkg/controller.v1/tensorflow/tfjob_controller.go
 * L495-498), the job goes on without it. Deliberately not the worker the
 * job's success waits for (worker 0 without a chief, or any worker under
 * AllWorkers): Kubeflow leaves such a job running forever.
 */
static int tolerated(const struct tfj_tfjob *job, enum tfj_rtype t, int k)
{
	if (!job->dynamic_worker || t != TFJ_RT_WORKER ||
	    job->success_policy == TFJ_SUCCESS_ALLWORKERS)
		return 0;
	return tfj_tfjob_chief_type(job) >= 0 || k > 0;
}

/*
 * Looks at every open slot. Pods to restart or replace after a disruption
 * (and terminating pods of a lost node, planlost.h) are only marked: if the
 * job fails in this plan they are left to cleanPodPolicy, and their
 * restarts are not counted. 0 or TFJ_ENOMEM.
 */
static int classify(struct tfj_planctx *c, struct verdict *v)
{
	const struct tfj_tfjob *job = c->job;
	char detail[400];
	int t, k, rc;

	for (t = 0; t < TFJ_RT_COUNT; t++) {
		for (k = 0; k < (job->rs[t].present ? job->rs[t].replicas : 0); k++) {
			int at = c->pod_slot[t][k], restart = 0;
			struct tfj_podstate *ps = at >= 0 ? &c->pods[at] : NULL;

			if (tfj_jobstatus_completed(&c->st.rs[t], k))
				continue;
			if (v->done && tfj_stoprule_of(job, t) != TFJ_STOP_NONE)
				continue; /* training is over: stopped at success, not judged */
			v->open++;
			if (!ps) {
				v->missing++;
				continue;
			}
			if ((rc = tfj_planlost_announce(c, (size_t)at)))
				return rc;
			if (ps->deleting) {
				/* On a lost node it never goes by itself (planlost.h). */
				if (tfj_planlost_due(c, (size_t)at))
					c->pod_mark[at] = TFJ_DEL_DISRUPTION;
				continue;
			}
			if (ps->phase != TFJ_POD_FAILED &&
			    tfj_planprog_hung(c, (size_t)at, detail, sizeof(detail))) {
				/* Hung: a retryable failure, counted like one. */
				if (!v->restarts++)
					tfj_planact_fmt(v->restart_msg, sizeof(v->restart_msg), "%s", detail);
				v->new_restarts += 1 + ps->restarts;
				c->pod_mark[at] = TFJ_DEL_RESTART;
				continue;
			}
			if (ps->phase != TFJ_POD_FAILED) {
				v->live_restarts += ps->restarts;
				v->running += ps->phase == TFJ_POD_RUNNING;
				continue;
			}
			tfj_planact_describe(detail, sizeof(detail), ps);
			if (ps->disrupted) {
				c->pod_mark[at] = TFJ_DEL_DISRUPTION;
				continue;
			}
			if ((rc = tfj_planlost_peer_victim(c, (size_t)at)) < 0)
				return rc;
			if (rc == TFJ_PLANLOST_VICTIM)
				c->pod_mark[at] = TFJ_DEL_DISRUPTION;
			if (rc != TFJ_PLANLOST_OWN_FAILURE)
				continue;
			switch (job->rs[t].restart) {
			case TFJ_RESTART_NEVER:
				break;
			case TFJ_RESTART_EXITCODE:
				restart = ps->has_exit == 2 &&
					  tfj_exitcode_retryable(ps->exit_code);
				break;
			default:
				restart = 1;
			}
			if (!restart && tolerated(job, (enum tfj_rtype)t, k)) {
				/* Left as it is: no new pod, not judged again. */
				v->open--;
				continue;
			}
			if (!restart) {
				/* The first to fail is the likely cause (the others
				 * often fail because it did); unknown times rank
				 * last, ties go to the lower index. */
				int64_t when = ps->finished_at ? ps->finished_at : INT64_MAX;

				if (!v->permanent++ || when < v->failure_at) {
					tfj_planact_fmt(v->failure, sizeof(v->failure), "%s", detail);
					v->failure_at = when;
				}
				continue;
			}
			if (!v->restarts++)
				tfj_planact_fmt(v->restart_msg, sizeof(v->restart_msg), "%s", detail);
			v->new_restarts += 1 + ps->restarts;
			c->pod_mark[at] = TFJ_DEL_RESTART;
		}
	}
	return 0;
}

static int64_t persisted_restarts(const struct tfj_job_status *st)
{
	int64_t n = 0;
	int t;

	for (t = 0; t < TFJ_RT_COUNT; t++)
		n += st->rs[t].restarts;
	return n;
}

/* A service body, about: metadata, labels, owner and one or two ports. */
#define SERVICE_BYTES 1024

/*
 * About how many bytes the pod body of a replica of type t is: its template,
 * a TF_CONFIG that names every host of the job (hosts "<job>-<type>-<i>.<ns>
 * .svc<domain>:<port>", escaped once more inside the env value) and the
 * operator's own additions. Only for the plan's byte budget: it never needs
 * to be exact, and counting stops at the budget.
 */
static size_t pod_bytes(const struct tfj_planctx *c, int t)
{
	const struct tfj_tfjob *job = c->job;
	const char *domain = c->opts.cluster_domain ? c->opts.cluster_domain : "";
	size_t host = strlen(job->name) + strlen(job->ns) + strlen(domain) + 32;

	return tfj_json_text_size(job->rs[t].tmpl, TFJ_PLAN_MAX_CREATE_BYTES) +
	       (size_t)job->total_replicas * host + 4096;
}

static int create_missing(struct tfj_planctx *c, int done)
{
	const struct tfj_tfjob *job = c->job;
	int max = (c->in->cfg && c->in->cfg->max_creates > 0) ? c->in->cfg->max_creates :
								 TFJ_PLAN_MAX_CREATES;
	size_t bytes = 0, cost, pod_cost;
	int t, k, rc, n = 0;

	for (t = 0; t < TFJ_RT_COUNT; t++) {
		pod_cost = job->rs[t].present && job->rs[t].replicas ? pod_bytes(c, t) : 0;
		for (k = 0; k < (job->rs[t].present ? job->rs[t].replicas : 0); k++) {
			int svc = c->svc_slot[t][k] < 0;
			int pod = c->pod_slot[t][k] < 0 && !tfj_jobstatus_completed(&c->st.rs[t], k) &&
				  !(done && tfj_stoprule_of(job, t) != TFJ_STOP_NONE);

			cost = (svc ? SERVICE_BYTES : 0) + (pod ? pod_cost : 0);
			if (svc + pod && (n + svc + pod > max ||
					  (n && cost > TFJ_PLAN_MAX_CREATE_BYTES - bytes))) {
				/* Batch full: the next reconcile goes on from here. */
				int64_t ms = TFJ_PLAN_BATCH_REQUEUE_MS;

				if (!c->requeue_ms || ms < c->requeue_ms)
					c->requeue_ms = ms;
				return 0;
			}
			n += svc + pod;
			bytes += cost > TFJ_PLAN_MAX_CREATE_BYTES - bytes ? TFJ_PLAN_MAX_CREATE_BYTES - bytes
									  : cost;
			if (svc && (rc = tfj_planact_create(c, TFJ_ACT_CREATE_SERVICE, (enum tfj_rtype)t, k)))
				return rc;
			if (pod && (rc = tfj_planact_create(c, TFJ_ACT_CREATE_POD, (enum tfj_rtype)t, k)))
				return rc;
		}
	}
	return 0;
}

static int run_job(struct tfj_planctx *c, const char *jobref)
{
	const struct tfj_run_policy *rp = &c->job->run;
	struct verdict v;
	char msg[512];
	size_t i;
	int64_t before = persisted_restarts(&c->st), total;
	int rc;

	memset(&v, 0, sizeof(v));
	v.done = tfj_planprog_done(c);
	if ((rc = classify(c, &v)))
		return rc;
	if (v.permanent) {
		tfj_planact_fmt(msg, sizeof(msg), "TFJob %s has failed because %s", jobref, v.failure);
		return fail(c, "TFJobFailed", msg);
	}
	total = before + v.new_restarts + v.live_restarts;
	if (rp->has_backoff && total > rp->backoff_limit) {
		tfj_planact_fmt(msg, sizeof(msg), "TFJob %s has failed because it restarted %lld times, more "
		    "than backoffLimit %lld%s%s", jobref, (long long)total,
		    (long long)rp->backoff_limit, v.restarts ? "; last failure: " : "",
		    v.restarts ? v.restart_msg : "");
		return fail(c, "BackoffLimitExceeded", msg);
	}
	if (rp->has_deadline && c->st.start_time) {
		int64_t due = c->st.start_time + rp->active_deadline_seconds;

		if (c->in->now_ms >= due * 1000) {
			tfj_planact_fmt(msg, sizeof(msg), "TFJob %s has failed because it was active longer "
			    "than activeDeadlineSeconds %lld", jobref,
			    (long long)rp->active_deadline_seconds);
			return fail(c, "DeadlineExceeded", msg);
		}
		tfj_planact_requeue_at(c, due);
	}
	/* The job goes on: restart and replace what classify() marked. */
	for (i = 0; i < c->npods; i++) {
		if (!c->pod_mark[i])
			continue;
		tfj_planact_describe(msg, sizeof(msg), &c->pods[i]);
		if (c->pod_mark[i] == TFJ_DEL_RESTART && c->pods[i].phase != TFJ_POD_FAILED &&
		    tfj_planprog_hung(c, i, msg, sizeof(msg)) &&
		    (rc = tfj_planact_event(c, "Warning", "ReplicaHung", msg)))
			return rc;
		if (c->pods[i].deleting) {
			if ((rc = tfj_planlost_force_delete(c, i)))
				return rc;
			continue;
		}
		if ((rc = tfj_planact_delete_pod(c, i, (enum tfj_delete_reason)c->pod_mark[i],
						 c->pod_mark[i] == TFJ_DEL_DISRUPTION ?
						 c->pods[i].why : msg)))
			return rc;
	}
	/* Excess children: beyond the replica count, or not named as we name them. */
	for (i = 0; i < c->npods; i++)
		if (!c->pod_used[i] &&
		    (rc = tfj_planact_delete_pod(c, i, TFJ_DEL_CLEANUP, "not part of the job")))
			return rc;
	for (i = 0; i < c->nsvcs; i++)
		if (!c->svc_used[i] && (rc = tfj_planact_delete_service(c, i, TFJ_DEL_CLEANUP)))
			return rc;
	if ((rc = create_missing(c, v.done)))
		return rc;
	if (v.restarts) {
		tfj_planact_fmt(msg, sizeof(msg), "TFJob %s is restarting because %d replica(s) failed: %s",
		    jobref, v.restarts, v.restart_msg);
		if ((rc = tfj_planact_event(c, "Warning", "TFJobRestarting", msg)) ||
		    (rc = tfj_jobstatus_set(&c->st, TFJ_COND_RESTARTING, 1, "TFJobRestarting", msg,
					    c->now)))
			return rc;
	} else if (v.open > 0 && v.running == v.open) {
		tfj_planact_fmt(msg, sizeof(msg), "TFJob %s is running.", jobref);
		if ((rc = tfj_jobstatus_set(&c->st, TFJ_COND_RUNNING, 1, "TFJobRunning", msg, c->now)))
			return rc;
	}
	return write_status(c);
}

/*
 * Gang scheduling blocked (plan.h): ReplicaFailure says why, as a create
 * refused for good does (createfail.h), so `kubectl get tfjobs` shows it in
 * the FAILURE column instead of an Event only. Removed once the PodGroup can
 * be made; a ReplicaFailure of another reason is left to createfail.
 */
static int gang_condition(struct tfj_planctx *c)
{
	const struct tfj_condition *rf = &c->st.cond[TFJ_COND_REPLICA_FAILURE];
	const char *why = c->gang_reason;

	if (why)
		return tfj_jobstatus_set(&c->st, TFJ_COND_REPLICA_FAILURE, 1, why,
					 c->gang_message[0] ? c->gang_message : why, c->now);
	if (rf->present && (strcmp(rf->reason, TFJ_PLAN_GANG_REASON_UNAVAILABLE) == 0 ||
			    strcmp(rf->reason, TFJ_PLAN_GANG_REASON_INVALID) == 0))
		tfj_jobstatus_remove(&c->st, TFJ_COND_REPLICA_FAILURE);
	return 0;
}

static int plan_job(struct tfj_planctx *c)
{
	const struct tfj_tfjob *job = c->job;
	char jobref[512], msg[512], detail[256];
	int t, k, rc;

	tfj_planact_fmt(jobref, sizeof(jobref), "%s/%s", job->ns, job->name);
	c->st.observed_generation = job->generation;
	if (!c->st.cond[TFJ_COND_CREATED].present) {
		tfj_planact_fmt(msg, sizeof(msg), "TFJob %s is created.", jobref);
		if ((rc = tfj_jobstatus_set(&c->st, TFJ_COND_CREATED, 1, "TFJobCreated", msg, c->now)))
			return rc;
	}
	if (job->spec_valid && (rc = tfj_planact_assign(c)))
		return rc;
	/* Before any path can write status: every one of them carries these. */
	tfj_planprog_reasons(c);
	tfj_planprog_progress(c);
	tfj_planprog_final(c);
	if ((rc = tfj_createfail_condition(&c->st, c->in->create_failure, c->now)) ||
	    (rc = tfj_planpodgroup_block(c)) || (rc = gang_condition(c)) ||
	    (rc = tfj_plannetpol_condition(c)))
		return rc;
	if (tfj_jobstatus_finished(&c->st))
		return finish(c);
	if (!job->spec_valid) {
		tfj_planact_fmt(msg, sizeof(msg), "TFJob %s has an invalid spec: %s", jobref, job->spec_error);
		return fail(c, "InvalidSpec", msg);
	}
	if (tfj_plankueue_check(detail, sizeof(detail), c)) {
		tfj_planact_fmt(msg, sizeof(msg), "TFJob %s has an invalid spec: %s", jobref, detail);
		return fail(c, "InvalidSpec", msg);
	}
	/* Step 2: a succeeded pod is recorded before anything can delete it.
	 * One that exited 0 only because we or someone deleted it (a suspend,
	 * kubectl delete pod) did not finish its work: not recorded, and it
	 * is made again once gone (podstate.h, ended_by_delete). */
	for (t = 0; t < TFJ_RT_COUNT; t++)
		for (k = 0; k < (job->rs[t].present ? job->rs[t].replicas : 0); k++)
			if (c->pod_slot[t][k] >= 0 &&
			    c->pods[c->pod_slot[t][k]].phase == TFJ_POD_SUCCEEDED &&
			    !c->pods[c->pod_slot[t][k]].ended_by_delete)
				tfj_jobstatus_mark_completed(&c->st.rs[t], k);
	if (job_succeeded(c)) {
		tfj_planact_fmt(msg, sizeof(msg), "TFJob %s successfully completed.", jobref);
		if ((rc = tfj_jobstatus_set(&c->st, TFJ_COND_SUCCEEDED, 1, "TFJobSucceeded", msg,
					    c->now)) ||
		    (rc = tfj_planact_event(c, "Normal", "TFJobSucceeded", msg)))
			return rc;
		c->st.completion_time = c->now;
		return finish(c);
	}
	if (job->run.suspend)
		return suspend(c, jobref);
	if (tfj_jobstatus_is(&c->st, TFJ_COND_SUSPENDED)) {
		tfj_planact_fmt(msg, sizeof(msg), "TFJob %s is resumed.", jobref);
		if ((rc = tfj_jobstatus_set(&c->st, TFJ_COND_SUSPENDED, 0, "TFJobResumed", msg,
					    c->now)) ||
		    (rc = tfj_planact_event(c, "Normal", "TFJobResumed", msg)))
			return rc;
		c->st.start_time = c->now;
	}
	if (c->gang_reason || c->gang_hold)
		return write_status(c); /* no pod without its PodGroup */
	if (tfj_plankueue_queued(c))
		c->st.start_time = 0; /* waiting for Kueue, as while suspended */
	else if (!c->st.start_time)
		c->st.start_time = c->now;
	return run_job(c, jobref);
}

int tfj_plan_managed_elsewhere(const struct tfj_tfjob *job, const struct tfj_plan_config *cfg)
{
	const char *mine = (cfg && cfg->manager) ? cfg->manager : TFJ_TFJOB_MANAGER;
	const char *by = job->run.managed_by;

	return by && *by && strcmp(by, mine);
}

static int has_pod_create(const struct tfj_plan *p)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->actions[i].kind == TFJ_ACT_CREATE_POD)
			return 1;
	return 0;
}

/*
 * The job's ps Secret's name (pssecret.h), settled before anything is
 * planned, so the status write keeps it and the pods of this plan mount
 * it. A running job with pods but no usable recorded name was started by
 * an operator that named its Secret `<job>-ps-secret`: that name is
 * recorded (no Secret is made), so its running and its new pods share one
 * token.
 */
static int adopt_legacy_secret(struct tfj_planctx *c)
{
	if (!c->in->cfg || !c->in->cfg->ps_secret || c->st.ps_secret[0] || !c->in->npods ||
	    !c->job->spec_valid || c->job->deleting || tfj_jobstatus_finished(&c->st))
		return 0;
	return tfj_pssecret_legacy_name(c->st.ps_secret, sizeof(c->st.ps_secret), c->job->name);
}

/*
 * The ps Secret, before the first pod of a plan that creates pods. With a
 * recorded name, the Secret is posted under that name unless the caller's
 * memo knows it exists (a recheck that makes it again if it was deleted).
 * Without one, a new Secret is asked for, and the pods of this same plan
 * mount the name the applier records from the API server's answer
 * (plan.h). Leaving them to the next plan would queue a new job's pods
 * behind the first plans of every job queued meanwhile: minutes at a
 * thousand new jobs.
 */
static int plan_secret(struct tfj_planctx *c)
{
	const struct tfj_plan_config *cfg = c->in->cfg;
	int rc;

	memcpy(c->plan->ps_secret, c->st.ps_secret, sizeof(c->plan->ps_secret));
	if (!cfg || !cfg->ps_secret || !has_pod_create(c->plan))
		return 0;
	if (c->st.ps_secret[0] && c->in->ps_secret_known)
		return 0;
	if (!c->st.ps_secret[0] && c->job->ps_secret_ignored[0] &&
	    (rc = tfj_planact_event(c, "Warning", "PsSecretNameIgnored",
				    c->job->ps_secret_ignored)))
		return rc;
	return tfj_planact_push(c, TFJ_ACT_CREATE_SECRET) ? 0 : TFJ_ENOMEM;
}

int tfj_plan_compute(struct tfj_plan *out, const struct tfj_plan_input *in)
{
	struct tfj_planctx c;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!in || !in->job || !in->job->doc || (in->npods && !in->pods) ||
	    (in->nservices && !in->services) || (in->nnetpols && !in->netpols))
		return tfj_err_set(TFJ_EINVAL, "plan: missing input");
	memset(&c, 0, sizeof(c));
	c.in = in;
	c.job = in->job;
	c.plan = out;
	c.st = in->job->status;
	c.now = in->now_ms / 1000;
	if (in->cfg) {
		c.opts.operator_name = in->cfg->operator_name;
		c.opts.cluster_domain = in->cfg->cluster_domain;
		c.opts.default_port = in->cfg->default_port;
		c.opts.report_addr = in->cfg->report_addr;
		c.opts.report_audience = in->cfg->report_audience;
		c.opts.report_insecure = in->cfg->report_insecure;
		c.opts.report_ca_configmap = in->cfg->report_ca_configmap;
		c.opts.gang = in->cfg->gang;
		c.opts.agent_image = in->cfg->agent_image;
		c.opts.agent_inject_default = in->cfg->agent_inject_default;
		c.opts.kueue_pod_groups = in->cfg->kueue_pod_groups;
	}
	out->job = in->job;
	out->opts = c.opts;
	out->phase = tfj_jobstatus_phase(&c.st);
	out->finished = tfj_jobstatus_finished(&c.st);
	if (tfj_plan_managed_elsewhere(in->job, in->cfg))
		return 0;
	rc = tfj_planact_observe(&c);
	if (!rc)
		rc = adopt_legacy_secret(&c);
	/* Being deleted: the garbage collector removes the children, which
	 * Kueue's finalizer must not hold (plankueue.h). */
	if (!rc && in->job->deleting) {
		rc = tfj_plankueue_release(&c);
		goto out;
	}
	if (!rc)
		rc = plan_job(&c);
	if (!rc)
		rc = tfj_plankueue_release(&c);
	if (!rc)
		rc = tfj_planpodgroup_plan(&c);
	if (!rc)
		rc = tfj_plannetpol_plan(&c);
	if (!rc && in->cfg && in->cfg->report_ca && !in->report_ca_current &&
	    in->job->spec_valid && !in->job->run.suspend && !tfj_jobstatus_finished(&c.st) &&
	    !tfj_planact_push(&c, TFJ_ACT_PUBLISH_CA))
		rc = TFJ_ENOMEM;
	if (!rc)
		rc = plan_secret(&c);
	if (!rc && c.requeue_ms) {
		struct tfj_action *a = tfj_planact_push(&c, TFJ_ACT_REQUEUE);

		if (a)
			a->after_ms = c.requeue_ms;
		else
			rc = TFJ_ENOMEM;
	}
out:
	if (!rc)
		rc = tfj_planact_order(out);
	tfj_planact_release(&c);
	if (rc) {
		tfj_plan_free(out);
		return rc == TFJ_ENOMEM ? tfj_err_set(TFJ_ENOMEM, "plan: out of memory") : rc;
	}
	out->phase = tfj_jobstatus_phase(&c.st);
	out->finished = tfj_jobstatus_finished(&c.st);
	return 0;
}

int tfj_plan_child_body(cJSON **out, const struct tfj_plan *p, const struct tfj_action *a,
			const char *ps_secret)
{
	*out = NULL;
	if (!p || !p->job || !a)
		return tfj_err_set(TFJ_EINVAL, "plan: not a create action");
	if (a->kind == TFJ_ACT_CREATE_NETPOL || a->kind == TFJ_ACT_UPDATE_NETPOL)
		return tfj_netpol_body(out, p->job, &p->opts);
	if (a->kind != TFJ_ACT_CREATE_POD && a->kind != TFJ_ACT_CREATE_SERVICE)
		return tfj_err_set(TFJ_EINVAL, "plan: not a create action");
	if (a->kind == TFJ_ACT_CREATE_POD) {
		struct tfj_podspec_opts o = p->opts;

		o.ps_secret_name = ps_secret ? ps_secret : p->ps_secret;
		return tfj_podspec_pod(out, p->job, (enum tfj_rtype)a->rtype, a->index, &o);
	}
	return tfj_podspec_service(out, p->job, (enum tfj_rtype)a->rtype, a->index, &p->opts);
}

void tfj_plan_free(struct tfj_plan *plan)
{
	size_t i;

	if (!plan)
		return;
	for (i = 0; i < plan->n; i++) {
		cJSON_Delete(plan->actions[i].body);
		free(plan->actions[i].ev_message);
	}
	free(plan->actions);
	memset(plan, 0, sizeof(*plan));
}
