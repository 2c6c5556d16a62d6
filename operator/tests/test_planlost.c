/*
 * test_planlost.c - preempted, evicted and lost replicas (tfjob/planlost.h):
 * the events that say who took a pod, and the force deletion of a pod its
 * lost node never removes.
 */
#include <stdio.h>
#include <string.h>

#include "plan_fixtures.h"
#include "tfjob/jobstatus.h"
#include "tfjob/planlost.h"

#define T0 (FX_T0_MS / 1000)

/* 1 ps + 2 workers, restartPolicy Never and backoffLimit 0: any counted restart fails it. */
static cJSON *strict_job(void)
{
	cJSON *j = fx_job("mnist");

	fx_replica(j, "PS", 1, "Never");
	fx_replica(j, "Worker", 2, "Never");
	cJSON_AddNumberToObject(fx_run_policy(j), "backoffLimit", 0);
	return j;
}

static void start(struct fx_world *w)
{
	fx_step(w);
	fx_all_pods(w, "Running");
	fx_step(w);
}

/*
 * What the API server shows of a pod someone else is deleting: bound to
 * node, deletionTimestamp at due (the end of its grace period), and a
 * DisruptionTarget condition with `target` (NULL: none).
 */
static void terminating(cJSON *pod, const char *node, int64_t due, const char *target)
{
	cJSON *m = cJSON_GetObjectItem(pod, "metadata"), *st = cJSON_GetObjectItem(pod, "status");
	cJSON *spec = cJSON_GetObjectItem(pod, "spec"), *conds, *c;
	char ts[32];

	TFJ_CHECK_INT(tfj_jobstatus_format_time(ts, sizeof(ts), due), 0);
	cJSON_AddStringToObject(m, "deletionTimestamp", ts);
	cJSON_AddNumberToObject(m, "deletionGracePeriodSeconds", 30);
	if (!spec)
		spec = cJSON_AddObjectToObject(pod, "spec");
	cJSON_DeleteItemFromObject(spec, "nodeName");
	cJSON_AddStringToObject(spec, "nodeName", node);
	if (!target)
		return;
	conds = cJSON_AddArrayToObject(st, "conditions");
	c = cJSON_CreateObject();
	cJSON_AddItemToArray(conds, c);
	cJSON_AddStringToObject(c, "type", "DisruptionTarget");
	cJSON_AddStringToObject(c, "status", "True");
	cJSON_AddStringToObject(c, "reason", target);
}

static const char *event_msg(const struct tfj_plan *p, const char *reason)
{
	const struct tfj_action *a = fx_event(p, reason);

	return a && a->ev_message ? a->ev_message : "";
}

/* The pod is gone (the kubelet confirmed, or someone force-deleted it). */
static void gone(struct fx_world *w, const char *name)
{
	int at = fx_find(w->pods, w->npods, name);

	TFJ_CHECK(at >= 0);
	if (at >= 0)
		fx_remove(w->pods, &w->npods, at);
}

/*
 * Preemption: the scheduler marks the pod DisruptionTarget/PreemptionByScheduler
 * and deletes it. One Warning Preempted event (once-only: repeated by every
 * plan while the pod terminates), no restart counted, recreated once gone.
 */
static void test_preempted_announced_and_recreated(void)
{
	struct fx_world w;
	const struct tfj_action *ev;

	fx_world_init(&w, strict_job());
	start(&w);
	terminating(fx_pod_named(&w, "mnist-worker-1"), "n1", T0 + 30, "PreemptionByScheduler");
	TFJ_CHECK_INT(fx_plan(&w), 0);
	ev = fx_event(&w.plan, "Preempted");
	TFJ_CHECK(ev != NULL && ev->kind == TFJ_ACT_EVENT && ev->ev_once);
	TFJ_CHECK(ev && !strcmp(ev->ev_type, "Warning"));
	TFJ_CHECK(strstr(event_msg(&w.plan, "Preempted"), "worker replica 1 (pod mnist-worker-1 on "
		  "node n1, uid uid-mnist-worker-1") != NULL);
	TFJ_CHECK(strstr(event_msg(&w.plan, "Preempted"), "preempted by the scheduler") != NULL);
	TFJ_CHECK(strstr(event_msg(&w.plan, "Preempted"), "not count against backoffLimit") != NULL);
	/* Nothing to do but wait for it to go: no delete, no create under its name. */
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 0);
	fx_apply(&w);
	/* The kubelet ends it Failed before removing it (exit 143): still no failure. */
	fx_pod_phase(fx_pod_named(&w, "mnist-worker-1"), "Failed");
	fx_pod_exit(fx_pod_named(&w, "mnist-worker-1"), "tensorflow", 143, "Error", 0);
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	gone(&w, "mnist-worker-1");
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_CREATE_POD, "mnist-worker-1") != NULL);
	TFJ_CHECK(fx_event(&w.plan, "Preempted") == NULL);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	TFJ_CHECK(fx_rs(&w, "Worker", "restarts") == 0);
	fx_world_free(&w);
}

/* A drain: the Eviction API marks EvictionByEvictionAPI; the event says evicted. */
static void test_drain_eviction_announced(void)
{
	struct fx_world w;

	fx_world_init(&w, strict_job());
	start(&w);
	terminating(fx_pod_named(&w, "mnist-ps-0"), "n2", T0 + 30, "EvictionByEvictionAPI");
	fx_pod_phase(fx_pod_named(&w, "mnist-ps-0"), "Failed");
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK(strstr(event_msg(&w.plan, "Evicted"), "ps replica 0 (pod mnist-ps-0 on node n2") !=
		  NULL);
	TFJ_CHECK(strstr(event_msg(&w.plan, "Evicted"), "evicted through the Eviction API") != NULL);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	gone(&w, "mnist-ps-0");
	fx_step(&w);
	TFJ_CHECK(fx_pod_named(&w, "mnist-ps-0") != NULL);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	TFJ_CHECK(fx_rs(&w, "PS", "restarts") == 0);
	fx_world_free(&w);
}

/* A kubelet eviction leaves the pod Failed/Evicted: deleted, recreated, and said so. */
static void test_kubelet_eviction_announced(void)
{
	struct fx_world w;

	fx_world_init(&w, strict_job());
	start(&w);
	fx_pod_phase(fx_pod_named(&w, "mnist-worker-0"), "Failed");
	fx_pod_reason(fx_pod_named(&w, "mnist-worker-0"), "Evicted");
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK(strstr(event_msg(&w.plan, "Evicted"), "evicted by the kubelet") != NULL);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-worker-0") != NULL);
	TFJ_CHECK(!fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-worker-0")->force);
	fx_world_free(&w);
}

/*
 * A lost node: the taint manager deleted the pod (DeletionByTaintManager) but
 * no kubelet confirms, so it stays terminating. The planner waits
 * lost_pod_timeout_s past deletionTimestamp (a requeue for then), then
 * force-deletes it (grace 0, uid precondition) with a NodeLost event; the
 * replica comes back under its name; nothing counts against backoffLimit.
 */
static void test_lost_node_force_deleted_after_timeout(void)
{
	struct fx_world w;
	const struct tfj_action *del, *rq;
	cJSON *pod;

	fx_world_init(&w, strict_job());
	/* Room for the pod's own 2 container restarts, none for one more. */
	cJSON_ReplaceItemInObject(fx_run_policy(w.job), "backoffLimit", cJSON_CreateNumber(2));
	w.cfg.lost_pod_timeout_s = 300;
	start(&w);
	pod = fx_pod_named(&w, "mnist-worker-0");
	fx_pod_restarts(pod, 2);
	terminating(pod, "n3", T0 - 10, "DeletionByTaintManager");
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK(strstr(event_msg(&w.plan, "TaintEviction"), "NoExecute taint") != NULL);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
	rq = fx_action(&w.plan, TFJ_ACT_REQUEUE, NULL);
	TFJ_CHECK(rq && rq->after_ms == 290 * 1000);
	fx_apply(&w);
	/* One second early: still waiting. */
	w.now_ms = (T0 - 10 + 299) * 1000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
	w.now_ms = (T0 - 10 + 300) * 1000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	del = fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-worker-0");
	TFJ_CHECK(del != NULL);
	if (del) {
		TFJ_CHECK(del->force);
		TFJ_CHECK(!strncmp(del->uid, "uid-mnist-worker-0-", 19));
		TFJ_CHECK(del->reason == TFJ_DEL_DISRUPTION);
		TFJ_CHECK_STR(del->ev_reason, TFJ_PLANLOST_REASON);
		TFJ_CHECK(strstr(del->ev_message, "Force-deleted worker replica 0 (pod mnist-worker-0 "
				 "on node n3") != NULL);
		TFJ_CHECK(strstr(del->ev_message, "300 s after its grace period") != NULL);
	}
	fx_apply(&w);
	TFJ_CHECK(fx_pod_named(&w, "mnist-worker-0") == NULL);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	/* Its container restarts are kept for backoffLimit; the loss adds none. */
	TFJ_CHECK(fx_rs(&w, "Worker", "restarts") == 2);
	fx_step(&w);
	TFJ_CHECK(fx_pod_named(&w, "mnist-worker-0") != NULL);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	fx_world_free(&w);
}

/* lost_pod_timeout_s 0: wait like a StatefulSet, for the kubelet, pod GC or a person. */
static void test_lost_node_off_waits(void)
{
	struct fx_world w;

	fx_world_init(&w, strict_job());
	start(&w);
	terminating(fx_pod_named(&w, "mnist-worker-0"), "n3", T0 - 10, "DeletionByTaintManager");
	w.now_ms = (T0 + 86400) * 1000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 0);
	fx_world_free(&w);
}

/*
 * A copy whose agent still reports runs (its node lost the control plane,
 * not the operator): never force-deleted while it reports, and only a whole
 * timeout after its last report.
 */
static void test_reporting_copy_not_force_deleted(void)
{
	struct fx_world w;
	struct tfj_plan_replica_report rep;
	struct tfj_plan_progress prog;
	const struct tfj_action *rq;

	memset(&rep, 0, sizeof(rep));
	memset(&prog, 0, sizeof(prog));
	rep.type = TFJ_RT_WORKER;
	prog.replicas = &rep;
	prog.nreplicas = 1;
	prog.since_ms = FX_T0_MS - 3600 * 1000;
	fx_world_init(&w, strict_job());
	w.cfg.lost_pod_timeout_s = 300;
	w.progress = &prog;
	start(&w);
	snprintf(rep.pod_uid, sizeof(rep.pod_uid), "%s", cJSON_GetStringValue(cJSON_GetObjectItem(
		 cJSON_GetObjectItem(fx_pod_named(&w, "mnist-worker-0"), "metadata"), "uid")));
	terminating(fx_pod_named(&w, "mnist-worker-0"), "n3", T0 - 1000, "DeletionByTaintManager");
	rep.heard_ms = FX_T0_MS - 10 * 1000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
	rq = fx_action(&w.plan, TFJ_ACT_REQUEUE, NULL);
	TFJ_CHECK(rq && rq->after_ms == 290 * 1000);
	/* It went silent: a timeout after its last report it goes. */
	w.now_ms = FX_T0_MS + 290 * 1000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-worker-0") != NULL);
	fx_world_free(&w);
}

/* A job that fails in the same plan leaves the pod to cleanPodPolicy: no force delete. */
static void test_failing_job_forces_nothing(void)
{
	struct fx_world w;

	fx_world_init(&w, strict_job());
	w.cfg.lost_pod_timeout_s = 300;
	start(&w);
	terminating(fx_pod_named(&w, "mnist-worker-0"), "n3", T0 - 1000, "DeletionByTaintManager");
	fx_pod_phase(fx_pod_named(&w, "mnist-worker-1"), "Failed");
	fx_pod_exit(fx_pod_named(&w, "mnist-worker-1"), "tensorflow", 1, "Error", 0);
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "True");
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
	fx_world_free(&w);
}

/* The tensorflow container of pod runs, and its Ready condition is status/reason. */
static void ready(cJSON *pod, const char *status, const char *reason)
{
	cJSON *st = cJSON_GetObjectItem(pod, "status"), *list, *cs, *c;

	cJSON_DeleteItemFromObject(st, "containerStatuses");
	list = cJSON_AddArrayToObject(st, "containerStatuses");
	cs = cJSON_CreateObject();
	cJSON_AddItemToArray(list, cs);
	cJSON_AddStringToObject(cs, "name", "tensorflow");
	cJSON_AddStringToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(cs, "state"),
							"running"), "startedAt", "2026-11-22T07:00:02Z");
	cJSON_DeleteItemFromObject(st, "conditions");
	c = cJSON_CreateObject();
	cJSON_AddItemToArray(cJSON_AddArrayToObject(st, "conditions"), c);
	cJSON_AddStringToObject(c, "type", "Ready");
	cJSON_AddStringToObject(c, "status", status);
	if (reason)
		cJSON_AddStringToObject(c, "reason", reason);
}

static void created(cJSON *pod, int64_t at)
{
	cJSON *m = cJSON_GetObjectItem(pod, "metadata");
	char ts[32];

	TFJ_CHECK_INT(tfj_jobstatus_format_time(ts, sizeof(ts), at), 0);
	cJSON_DeleteItemFromObject(m, "creationTimestamp");
	cJSON_AddStringToObject(m, "creationTimestamp", ts);
}

/* The worker gave up on a peer: tfjob-agent's and the runtime's exit 138. */
static void gave_up(struct fx_world *w, const char *name, int code)
{
	cJSON *pod = fx_pod_named(w, name);

	fx_pod_phase(pod, "Failed");
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(pod, "status"), "containerStatuses");
	fx_pod_exit(pod, "tensorflow", code, "Error", 0);
}

/*
 * The ps's node stopped reporting: the node lifecycle controller marked the
 * ps not ready (no reason, not its kubelet), long before any eviction.
 * Worker 0 gives up on it with 138: recreated as a disruption with one
 * PeerUnavailable event, nothing counted (backoffLimit 0, policy Never).
 */
static void test_peer_on_lost_node_not_counted(void)
{
	struct fx_world w;
	const struct tfj_action *del;

	fx_world_init(&w, strict_job());
	start(&w);
	ready(fx_pod_named(&w, "mnist-ps-0"), "False", NULL);
	gave_up(&w, "mnist-worker-0", 138);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	del = fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-worker-0");
	TFJ_CHECK(del != NULL && del->reason == TFJ_DEL_DISRUPTION && !del->force);
	TFJ_CHECK(fx_event(&w.plan, TFJ_PLANLOST_PEER_REASON) != NULL &&
		  fx_event(&w.plan, TFJ_PLANLOST_PEER_REASON)->ev_once);
	TFJ_CHECK(strstr(event_msg(&w.plan, TFJ_PLANLOST_PEER_REASON), "worker replica 0 (pod "
		  "mnist-worker-0") != NULL);
	TFJ_CHECK(strstr(event_msg(&w.plan, TFJ_PLANLOST_PEER_REASON), "while ps replica 0 is marked "
		  "not ready by someone other than its kubelet") != NULL);
	TFJ_CHECK(strstr(event_msg(&w.plan, TFJ_PLANLOST_PEER_REASON), "not count against "
		  "backoffLimit") != NULL);
	TFJ_CHECK(fx_event(&w.plan, "TFJobRestarting") == NULL);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	TFJ_CHECK(fx_rs(&w, "Worker", "restarts") == 0);
	fx_step(&w);
	TFJ_CHECK(fx_pod_named(&w, "mnist-worker-0") != NULL);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	fx_world_free(&w);
}

/*
 * Every other way the API shows a peer down: terminating, disrupted, no pod
 * in its slot, or a replacement made after this pod that does not run yet.
 */
static void test_peer_down_kinds(void)
{
	static const char *const want[] = { "is being deleted", "was disrupted",
					    "has no pod", "was replaced while this replica ran" };
	size_t i;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct fx_world w;
		cJSON *ps;

		fx_world_init(&w, strict_job());
		start(&w);
		ps = fx_pod_named(&w, "mnist-ps-0");
		created(fx_pod_named(&w, "mnist-worker-1"), T0 - 100);
		if (i == 0) {
			terminating(ps, "n2", T0 + 30, NULL);
		} else if (i == 1) {
			fx_pod_reason(ps, "Evicted");
			fx_pod_phase(ps, "Failed");
		} else if (i == 2) {
			gone(&w, "mnist-ps-0");
		} else {
			created(ps, T0 - 50); /* running, ready, restoring its checkpoint */
		}
		gave_up(&w, "mnist-worker-1", 138);
		TFJ_CHECK_INT(fx_plan(&w), 0);
		TFJ_CHECK(strstr(event_msg(&w.plan, TFJ_PLANLOST_PEER_REASON), want[i]) != NULL);
		fx_apply(&w);
		TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
		TFJ_CHECK(fx_rs(&w, "Worker", "restarts") == 0);
		fx_world_free(&w);
	}
}

/*
 * What stays a failure of the replica's own: exit 138 while every peer looks
 * fine (a ready ps, one its kubelet calls not ready, a pending ps made before
 * the worker: e.g. unschedulable from the start), and any other exit code
 * while a peer is down. Here they fail the job (policy Never).
 */
static void test_peer_not_down_counts(void)
{
	int i;

	for (i = 0; i < 4; i++) {
		struct fx_world w;
		cJSON *ps;

		fx_world_init(&w, strict_job());
		start(&w);
		ps = fx_pod_named(&w, "mnist-ps-0");
		if (i == 0)
			ready(ps, "True", NULL);
		else if (i == 1)
			ready(ps, "False", "ContainersNotReady");
		else if (i == 2)
			ready(ps, "False", NULL); /* down, but the worker's code is its own */
		if (i == 3) {
			fx_pod_phase(ps, "Pending");
			created(ps, T0 - 100);
			created(fx_pod_named(&w, "mnist-worker-0"), T0 - 50);
		}
		gave_up(&w, "mnist-worker-0", i == 2 ? 1 : 138);
		TFJ_CHECK_INT(fx_plan(&w), 0);
		TFJ_CHECK(fx_event(&w.plan, TFJ_PLANLOST_PEER_REASON) == NULL);
		fx_apply(&w);
		TFJ_CHECK_STR(fx_cond(&w, "Failed"), "True");
		fx_world_free(&w);
	}
}

/* gave_up with the container's finishedAt. */
static void gave_up_at(struct fx_world *w, const char *name, int64_t finished)
{
	cJSON *cs, *t;
	char ts[32];

	gave_up(w, name, 138);
	cs = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(fx_pod_named(w, name),
					"status"), "containerStatuses"), 0);
	t = cJSON_GetObjectItem(cJSON_GetObjectItem(cs, "state"), "terminated");
	TFJ_CHECK_INT(tfj_jobstatus_format_time(ts, sizeof(ts), finished), 0);
	cJSON_AddStringToObject(t, "finishedAt", ts);
}

/*
 * A worker that gives up before the node monitor marks the lost node is left
 * as it is (a requeue at finishedAt + TFJ_PLANLOST_PEER_WAIT_S); once its
 * peer shows down it is a victim; if none does by then, it counts.
 */
static void test_peer_early_exit_waits(void)
{
	struct fx_world w;
	const struct tfj_action *rq;
	int later;

	for (later = 0; later < 2; later++) {
		fx_world_init(&w, strict_job());
		start(&w);
		gave_up_at(&w, "mnist-worker-0", T0 - 10);
		TFJ_CHECK_INT(fx_plan(&w), 0);
		TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
		rq = fx_action(&w.plan, TFJ_ACT_REQUEUE, NULL);
		TFJ_CHECK(rq && rq->after_ms == (TFJ_PLANLOST_PEER_WAIT_S - 10) * 1000);
		fx_apply(&w);
		TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
		if (!later) {
			/* The node monitor marks the ps's node: a victim. */
			w.now_ms = (T0 + 10) * 1000;
			ready(fx_pod_named(&w, "mnist-ps-0"), "False", NULL);
			TFJ_CHECK_INT(fx_plan(&w), 0);
			TFJ_CHECK(fx_event(&w.plan, TFJ_PLANLOST_PEER_REASON) != NULL);
			fx_apply(&w);
			TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
		} else {
			/* One second early, still waiting; then its own failure. */
			w.now_ms = (T0 - 10 + TFJ_PLANLOST_PEER_WAIT_S - 1) * 1000;
			fx_step(&w);
			TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
			w.now_ms = (T0 - 10 + TFJ_PLANLOST_PEER_WAIT_S) * 1000;
			fx_step(&w);
			TFJ_CHECK_STR(fx_cond(&w, "Failed"), "True");
		}
		fx_world_free(&w);
	}
}

/*
 * Under ExitCode with room for restarts: a worker that gives up again once
 * the replacement ps runs and is ready counts (the peer is back), so a job
 * whose worker cannot reach a healthy ps still ends at backoffLimit.
 */
static void test_peer_back_counts_again(void)
{
	struct fx_world w;
	cJSON *j = fx_job("mnist");

	fx_replica(j, "PS", 1, "ExitCode");
	fx_replica(j, "Worker", 1, "ExitCode");
	cJSON_AddNumberToObject(fx_run_policy(j), "backoffLimit", 1);
	fx_world_init(&w, j);
	start(&w);
	ready(fx_pod_named(&w, "mnist-ps-0"), "False", NULL);
	gave_up(&w, "mnist-worker-0", 138);
	fx_step(&w);
	TFJ_CHECK(fx_rs(&w, "Worker", "restarts") == 0);
	fx_step(&w);
	fx_all_pods(&w, "Running");
	ready(fx_pod_named(&w, "mnist-ps-0"), "True", NULL);
	gave_up(&w, "mnist-worker-0", 138);
	fx_step(&w);
	TFJ_CHECK(fx_rs(&w, "Worker", "restarts") == 1);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	fx_step(&w);
	fx_all_pods(&w, "Running");
	gave_up(&w, "mnist-worker-0", 138);
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "True");
	TFJ_CHECK_STR(fx_cond_field(&w, "Failed", "reason"), "BackoffLimitExceeded");
	fx_world_free(&w);
}

int main(void)
{
	TFJ_RUN(test_preempted_announced_and_recreated);
	TFJ_RUN(test_drain_eviction_announced);
	TFJ_RUN(test_kubelet_eviction_announced);
	TFJ_RUN(test_lost_node_force_deleted_after_timeout);
	TFJ_RUN(test_lost_node_off_waits);
	TFJ_RUN(test_reporting_copy_not_force_deleted);
	TFJ_RUN(test_failing_job_forces_nothing);
	TFJ_RUN(test_peer_on_lost_node_not_counted);
	TFJ_RUN(test_peer_down_kinds);
	TFJ_RUN(test_peer_not_down_counts);
	TFJ_RUN(test_peer_back_counts_again);
	TFJ_RUN(test_peer_early_exit_waits);
	return tfj_test_finish();
}
