/*
 * planlost.c - preempted, evicted and lost replicas (see planlost.h).
 */
#include <string.h>

#include <tfj/err.h>
#include <tfj/exitcode.h>

#include "tfjob/plan.h"
#include "tfjob/planlost.h"
#include "tfjob/planprog.h"

struct cause {
	const char *key;     /* DisruptionTarget reason or pod status.reason */
	const char *reason;  /* event reason */
	const char *text;    /* what happened, after "worker replica 1 (pod ...)" */
};

/*
 * DisruptionTarget reasons first (Kubernetes 1.26+ sets them before it
 * deletes a pod), then the pod status reasons older paths leave.
 */
static const struct cause causes[] = {
	{ "PreemptionByScheduler", "Preempted",
	  "was preempted by the scheduler to make room for a pod of higher priority" },
	{ "EvictionByEvictionAPI", "Evicted",
	  "was evicted through the Eviction API (a node drain, or another eviction that "
	  "respects PodDisruptionBudgets)" },
	{ "DeletionByTaintManager", "TaintEviction",
	  "was deleted by the taint manager: its node has a NoExecute taint the pod does not "
	  "tolerate (the node is unreachable or not ready, or was tainted)" },
	{ "DeletionByPodGC", "NodeLost",
	  "was deleted by the pod garbage collector: its node is gone or out of service" },
	{ "TerminationByKubelet", "Evicted",
	  "was terminated by the kubelet (node-pressure eviction or node shutdown)" },
	{ "Evicted", "Evicted", "was evicted by the kubelet (node pressure)" },
	{ "Preempting", "Preempted", "was preempted by the kubelet for a critical pod" },
	{ "NodeLost", "NodeLost", "was lost with its node" },
	{ "NodeShutdown", "NodeShutdown", "was stopped by its node's shutdown" },
	{ "Shutdown", "NodeShutdown", "was stopped by its node's shutdown" },
	{ "Terminated", "NodeShutdown", "was stopped by its node's shutdown" },
};

static const struct cause *cause_of(const struct tfj_podstate *ps)
{
	size_t i;

	for (i = 0; i < sizeof(causes) / sizeof(causes[0]); i++)
		if (!strcmp(ps->target, causes[i].key))
			return &causes[i];
	for (i = 0; i < sizeof(causes) / sizeof(causes[0]); i++)
		if (!strcmp(ps->why, causes[i].key))
			return &causes[i];
	return NULL;
}

/* "worker replica 1 (pod mnist-worker-1 on node n2, uid 1234)" */
static void who(char *buf, size_t n, const struct tfj_podstate *ps)
{
	tfj_planact_fmt(buf, n, "%s replica %d (pod %s%s%s, uid %s)",
	    tfj_tfjob_type_lower((enum tfj_rtype)ps->type), ps->index, ps->name,
	    ps->node[0] ? " on node " : "", ps->node, ps->uid);
}

int tfj_planlost_announce(struct tfj_planctx *c, size_t i)
{
	const struct tfj_podstate *ps = &c->pods[i];
	const struct cause *k;
	struct tfj_action *a;
	char msg[768], w[400], other[128];
	const char *text;
	int rc;

	if (!ps->disrupted || ps->type < 0)
		return 0;
	if ((k = cause_of(ps))) {
		text = k->text;
	} else {
		tfj_planact_fmt(other, sizeof(other), "was disrupted (%s)",
		    ps->target[0] ? ps->target : ps->why);
		text = other;
	}
	who(w, sizeof(w), ps);
	tfj_planact_fmt(msg, sizeof(msg), "%s %s; it is recreated under the same name once it is "
	    "gone, and this does not count against backoffLimit", w, text);
	if (!(a = tfj_planact_push(c, TFJ_ACT_EVENT)))
		return TFJ_ENOMEM;
	if ((rc = tfj_planact_set_event(a, "Warning", k ? k->reason : "Disrupted", msg)))
		return rc;
	a->ev_once = 1;
	return 0;
}

/*
 * Why replica slot (t, k), which pods[self] does not hold, cannot be
 * reached now, or NULL when the API shows nothing wrong with it.
 */
static const char *slot_down(const struct tfj_planctx *c, int t, int k, size_t self)
{
	int at = c->pod_slot[t][k];
	const struct tfj_podstate *p;

	if (tfj_jobstatus_completed(&c->st.rs[t], k))
		return NULL;
	if (at < 0)
		return "has no pod (its replacement is being made)";
	p = &c->pods[at];
	if (p->disrupted)
		return "was disrupted";
	if (p->deleting)
		return "is being deleted";
	if (p->node_unready)
		return "is marked not ready by someone other than its kubelet (its node stopped "
		       "reporting)";
	if (p->created && c->pods[self].created && p->created > c->pods[self].created)
		return "was replaced while this replica ran";
	return NULL;
}

int tfj_planlost_peer_victim(struct tfj_planctx *c, size_t i)
{
	struct tfj_podstate *ps = &c->pods[i];
	const struct tfj_tfjob *job = c->job;
	const char *down = NULL;
	struct tfj_action *a;
	char msg[1024], w[400];
	int t, k, rc, running = 0;

	if (ps->phase != TFJ_POD_FAILED || ps->has_exit != 2 ||
	    ps->exit_code != TFJ_EXIT_UNAVAILABLE || ps->type < 0)
		return TFJ_PLANLOST_OWN_FAILURE;
	for (t = 0; t < TFJ_RT_COUNT; t++) {
		for (k = 0; k < (job->rs[t].present ? job->rs[t].replicas : 0); k++) {
			int at = c->pod_slot[t][k];

			if (at == (int)i)
				continue;
			if ((down = slot_down(c, t, k, i)))
				break;
			running |= at >= 0 && c->pods[at].phase == TFJ_POD_RUNNING;
		}
		if (down)
			break;
	}
	if (!down) {
		/*
		 * A replica can give up on a peer whose node is lost before the
		 * control plane has noticed (a short --peer-timeout): its exit
		 * is judged once the node monitor has had its grace period.
		 * Only a running peer can be on such a node; with none (a ps
		 * that never started) it is judged at once.
		 */
		int64_t due = ps->finished_at + TFJ_PLANLOST_PEER_WAIT_S;

		if (running && ps->finished_at && c->in->now_ms < due * 1000) {
			tfj_planact_requeue_at(c, due);
			return TFJ_PLANLOST_JUDGE_LATER;
		}
		return TFJ_PLANLOST_OWN_FAILURE;
	}
	who(w, sizeof(w), ps);
	tfj_planact_fmt(msg, sizeof(msg), "%s exited with code %d (unavailable: a peer could not be "
	    "reached) while %s replica %d %s; it is recreated under the same name, and this "
	    "does not count against backoffLimit", w, ps->exit_code,
	    tfj_tfjob_type_lower((enum tfj_rtype)t), k, down);
	if (!(a = tfj_planact_push(c, TFJ_ACT_EVENT)))
		return TFJ_ENOMEM;
	if ((rc = tfj_planact_set_event(a, "Warning", TFJ_PLANLOST_PEER_REASON, msg)))
		return rc;
	a->ev_once = 1;
	tfj_planact_fmt(ps->why, sizeof(ps->why), "%s", TFJ_PLANLOST_PEER_REASON);
	return TFJ_PLANLOST_VICTIM;
}

int tfj_planlost_due(struct tfj_planctx *c, size_t i)
{
	const struct tfj_podstate *ps = &c->pods[i];
	const struct tfj_plan_replica_report *r;
	int64_t wait = c->in->cfg ? c->in->cfg->lost_pod_timeout_s : 0, due;

	if (wait <= 0 || !ps->deleting || !ps->delete_due)
		return 0;
	due = ps->delete_due + wait;
	/*
	 * A report of its agent is proof that this copy still runs (a node cut
	 * off from the control plane but not from the operator): wait a whole
	 * timeout past the last one, so a live copy is never force-deleted.
	 */
	if ((r = tfj_planprog_find(c, ps->uid)) && r->heard_ms > 0 &&
	    r->heard_ms / 1000 + wait > due)
		due = r->heard_ms / 1000 + wait;
	if (c->in->now_ms < due * 1000) {
		tfj_planact_requeue_at(c, due);
		return 0;
	}
	return 1;
}

int tfj_planlost_force_delete(struct tfj_planctx *c, size_t i)
{
	struct tfj_podstate *ps = &c->pods[i];
	struct tfj_action *a;
	char msg[768], w[400];

	if (c->pod_gone[i])
		return 0;
	if (!(a = tfj_planact_push(c, TFJ_ACT_DELETE_POD)))
		return TFJ_ENOMEM;
	a->reason = TFJ_DEL_DISRUPTION;
	a->force = 1;
	a->exit_code = -1;
	tfj_planact_fmt(a->name, sizeof(a->name), "%s", ps->name);
	tfj_planact_fmt(a->uid, sizeof(a->uid), "%s", ps->uid);
	c->pod_gone[i] = 1;
	/* Its container restarts go with it: kept for backoffLimit, as any delete's. */
	if (ps->type >= 0)
		c->st.rs[ps->type].restarts += ps->restarts;
	who(w, sizeof(w), ps);
	tfj_planact_fmt(msg, sizeof(msg), "Force-deleted %s: it was still terminating %lld s after "
	    "its grace period ended and its agent had not reported for as long, so its node is "
	    "presumed lost (lost-pod-timeout %lld s); it is recreated under the same name, and "
	    "this does not count against backoffLimit", w,
	    (long long)(c->in->now_ms / 1000 - ps->delete_due),
	    (long long)c->in->cfg->lost_pod_timeout_s);
	return tfj_planact_set_event(a, "Warning", TFJ_PLANLOST_REASON, msg);
}
