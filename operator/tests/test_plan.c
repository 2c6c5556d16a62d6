/*
 * test_plan.c - the planner's rules, one scenario each, run against the
 * in-memory cluster of plan_fixtures.h.
 */
#include <tfj/json.h>

#include "plan_fixtures.h"

static cJSON *ps_worker_job(const char *policy)
{
	cJSON *j = fx_job("mnist");

	fx_replica(j, "PS", 1, policy);
	fx_replica(j, "Worker", 2, policy);
	return j;
}

/* Plans, applies, and moves every pod to Running: a job that has started. */
static void start(struct fx_world *w)
{
	fx_step(w);
	fx_all_pods(w, "Running");
	fx_step(w);
}

static void test_creates_children_in_order(void)
{
	struct fx_world w;
	cJSON *j = fx_job("mnist");
	size_t i;

	fx_replica(j, "chief", 1, NULL); /* lower case: normalised */
	fx_replica(j, "ps", 2, NULL);
	fx_replica(j, "WORKER", 2, NULL);
	fx_world_init(&w, j);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 5);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_SERVICE), 5);
	TFJ_CHECK_INT(w.plan.actions[0].kind, TFJ_ACT_WRITE_STATUS);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_CREATE_POD, "mnist-chief-0") != NULL);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_CREATE_POD, "mnist-ps-1") != NULL);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_CREATE_SERVICE, "mnist-worker-1") != NULL);
	/* Services before pods, so peers resolve as early as possible. */
	for (i = 1; i < w.plan.n; i++)
		TFJ_CHECK(!(w.plan.actions[i - 1].kind == TFJ_ACT_CREATE_POD &&
			    w.plan.actions[i].kind == TFJ_ACT_CREATE_SERVICE));
	TFJ_CHECK_STR(fx_action(&w.plan, TFJ_ACT_CREATE_POD, "mnist-ps-0")->ev_reason,
		      "SuccessfulCreatePod");
	TFJ_CHECK(fx_count(&w.plan, TFJ_ACT_REQUEUE) == 0);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Created"), "True");
	TFJ_CHECK_STR(fx_status_str(&w, "phase"), "Created");
	TFJ_CHECK_STR(fx_status_str(&w, "startTime"), "2023-11-14T22:13:20Z");
	/* The pods show up as active: one status write, no new children. */
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(w.plan.n, 1);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_WRITE_STATUS), 1);
	fx_apply(&w);
	TFJ_CHECK(fx_rs(&w, "Worker", "active") == 2);
	/* Level-triggered: nothing to do once the status matches. */
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(w.plan.n, 0);
	fx_world_free(&w);
}

/* Action i of the world's plan as text: its body, or the child it creates. */
static char *action_text(struct fx_world *w, size_t i)
{
	const struct tfj_action *a = &w->plan.actions[i];
	cJSON *child;
	char *s;

	if (a->kind != TFJ_ACT_CREATE_POD && a->kind != TFJ_ACT_CREATE_SERVICE)
		return a->body ? cJSON_PrintUnformatted(a->body) : NULL;
	child = fx_body(w, a);
	s = child ? cJSON_PrintUnformatted(child) : NULL;
	cJSON_Delete(child);
	return s;
}

static void test_same_input_same_plan(void)
{
	struct fx_world w;
	char *texts[64] = { NULL }, *b;
	size_t i, n;
	struct tfj_plan first;

	fx_world_init(&w, ps_worker_job("ExitCode"));
	start(&w);
	fx_pod_phase(fx_pod_named(&w, "mnist-worker-1"), "Failed");
	fx_pod_exit(fx_pod_named(&w, "mnist-worker-1"), "tensorflow", 137, "OOMKilled", 0);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	/* The first plan's children are built before its job is decoded again. */
	n = w.plan.n < 64 ? w.plan.n : 64;
	for (i = 0; i < n; i++)
		texts[i] = action_text(&w, i);
	first = w.plan;
	memset(&w.plan, 0, sizeof(w.plan));
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(first.n, w.plan.n);
	for (i = 0; i < n && i < w.plan.n; i++) {
		TFJ_CHECK_INT(first.actions[i].kind, w.plan.actions[i].kind);
		TFJ_CHECK_STR(first.actions[i].name, w.plan.actions[i].name);
		b = action_text(&w, i);
		TFJ_CHECK((!texts[i] && !b) || (texts[i] && b && !strcmp(texts[i], b)));
		free(texts[i]);
		free(b);
	}
	tfj_plan_free(&first);
	fx_world_free(&w);
}

static void test_running_condition(void)
{
	struct fx_world w;

	fx_world_init(&w, ps_worker_job(NULL));
	fx_step(&w);
	fx_pod_phase(fx_pod_named(&w, "mnist-ps-0"), "Running");
	fx_step(&w);
	TFJ_CHECK_STR(fx_status_str(&w, "phase"), "Created"); /* not every replica runs yet */
	fx_all_pods(&w, "Running");
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Running"), "True");
	TFJ_CHECK_STR(fx_status_str(&w, "phase"), "Running");
	TFJ_CHECK(fx_rs(&w, "Worker", "active") == 2);
	TFJ_CHECK(fx_rs(&w, "PS", "active") == 1);
	TFJ_CHECK_STR(fx_status_str(&w, "replicaSummary"), "ps 1/1 worker 2/2");
	fx_world_free(&w);
}

static void test_success_chief_cleans_running(void)
{
	struct fx_world w;
	cJSON *j = fx_job("mnist");
	const struct tfj_action *ev;

	fx_replica(j, "Chief", 1, NULL);
	fx_replica(j, "PS", 1, NULL);
	fx_replica(j, "Worker", 1, NULL);
	fx_replica(j, "Evaluator", 1, NULL);
	cJSON_AddStringToObject(fx_run_policy(j), "cleanPodPolicy", "Running");
	fx_world_init(&w, j);
	start(&w);
	fx_pod_phase(fx_pod_named(&w, "mnist-worker-0"), "Succeeded"); /* not enough */
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Succeeded"), "");
	fx_pod_phase(fx_pod_named(&w, "mnist-chief-0"), "Succeeded");
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK(w.plan.finished);
	TFJ_CHECK_STR(w.plan.phase, "Succeeded");
	ev = fx_event(&w.plan, "TFJobSucceeded");
	TFJ_CHECK(ev && !strcmp(ev->ev_type, "Normal"));
	/* cleanPodPolicy Running: ps and evaluator go, finished pods stay. */
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-ps-0") != NULL);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-evaluator-0") != NULL);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-chief-0") == NULL);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-worker-0") == NULL);
	TFJ_CHECK_INT(fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-ps-0")->reason,
		      TFJ_DEL_CLEANUP);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_DELETE_SERVICE, "mnist-ps-0") != NULL);
	TFJ_CHECK(fx_count(&w.plan, TFJ_ACT_CREATE_POD) == 0);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Succeeded"), "True");
	TFJ_CHECK_STR(fx_cond(&w, "Running"), "False");
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	TFJ_CHECK_STR(fx_status_str(&w, "completionTime"), "2023-11-14T22:13:20Z");
	/* Terminal and clean: nothing more, even much later. */
	w.now_ms += 3600 * 1000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(w.plan.n, 0);
	fx_world_free(&w);
}

static void test_success_worker0_default(void)
{
	struct fx_world w;

	fx_world_init(&w, ps_worker_job(NULL));
	start(&w);
	fx_pod_phase(fx_pod_named(&w, "mnist-ps-0"), "Succeeded"); /* PS never counts */
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Succeeded"), "");
	fx_pod_phase(fx_pod_named(&w, "mnist-worker-0"), "Succeeded");
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Succeeded"), "True");
	TFJ_CHECK_STR(fx_status_str(&w, "phase"), "Succeeded");
	fx_world_free(&w);
}

static void test_success_all_workers_and_no_rerun(void)
{
	struct fx_world w;
	cJSON *j = ps_worker_job(NULL);
	int at;

	cJSON_AddStringToObject(cJSON_GetObjectItem(j, "spec"), "successPolicy", "AllWorkers");
	fx_world_init(&w, j);
	start(&w);
	fx_pod_phase(fx_pod_named(&w, "mnist-worker-0"), "Succeeded");
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Succeeded"), "");
	TFJ_CHECK(fx_rs(&w, "Worker", "succeeded") == 1);
	TFJ_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
		cJSON_GetObjectItem(w.job, "status"), "replicaStatuses"), "Worker"),
		"completedIndexes")->valuestring, "0");
	/* The finished pod is garbage-collected: its completion is remembered. */
	at = fx_find(w.pods, w.npods, "mnist-worker-0");
	fx_remove(w.pods, &w.npods, at);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_CREATE_POD, "mnist-worker-0") == NULL);
	fx_apply(&w);
	fx_pod_phase(fx_pod_named(&w, "mnist-worker-1"), "Succeeded");
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Succeeded"), "True");
	TFJ_CHECK(fx_rs(&w, "Worker", "succeeded") == 2);
	fx_world_free(&w);
}

static void test_never_failure_names_replica(void)
{
	struct fx_world w;
	cJSON *j = ps_worker_job("Never");
	const char *msg;

	cJSON_AddStringToObject(fx_run_policy(j), "cleanPodPolicy", "Running");
	fx_world_init(&w, j);
	start(&w);
	fx_pod_phase(fx_pod_named(&w, "mnist-worker-1"), "Failed");
	fx_pod_exit(fx_pod_named(&w, "mnist-worker-1"), "tensorflow", 1, "Error", 0);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK(fx_count(&w.plan, TFJ_ACT_CREATE_POD) == 0);
	TFJ_CHECK(fx_event(&w.plan, "TFJobFailed") != NULL);
	/* Still-running pods are cleaned (Running), the failed one is kept for logs. */
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-ps-0") != NULL);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-worker-1") == NULL);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "True");
	TFJ_CHECK_STR(fx_cond_field(&w, "Failed", "reason"), "TFJobFailed");
	msg = fx_cond_field(&w, "Failed", "message");
	TFJ_CHECK(strstr(msg, "worker replica 1") != NULL);
	TFJ_CHECK(strstr(msg, "container tensorflow exited with code 1") != NULL);
	TFJ_CHECK_STR(fx_cond(&w, "Succeeded"), "");
	fx_world_free(&w);
}

/* The container's termination time (state.terminated.finishedAt) of pod. */
static void set_finished(cJSON *pod, const char *when)
{
	cJSON *t = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
		cJSON_GetObjectItem(pod, "status"), "containerStatuses"), 0), "state"), "terminated");

	cJSON_AddStringToObject(t, "finishedAt", when);
}

/*
 * Two replicas failed for good in one plan: the condition names the one
 * that failed first by finishedAt (the likely cause), not the first by
 * index; without times the index order decides; an unknown time ranks
 * after a known one.
 */
static void test_failure_names_earliest(void)
{
	static const char *const t0[3] = { "2026-01-01T00:05:00Z", NULL, NULL };
	static const char *const t1[3] = { "2026-01-01T00:04:00Z", NULL, "2026-01-01T00:04:00Z" };
	static const char *const want[3] = { "worker replica 1", "worker replica 0",
					     "worker replica 1" };
	struct fx_world w;
	const char *msg;

	for (int i = 0; i < 3; i++) {
		fx_world_init(&w, ps_worker_job("Never"));
		start(&w);
		fx_pod_phase(fx_pod_named(&w, "mnist-worker-0"), "Failed");
		fx_pod_exit(fx_pod_named(&w, "mnist-worker-0"), "tensorflow", 2, "Error", 0);
		fx_pod_phase(fx_pod_named(&w, "mnist-worker-1"), "Failed");
		fx_pod_exit(fx_pod_named(&w, "mnist-worker-1"), "tensorflow", 1, "Error", 0);
		if (t0[i])
			set_finished(fx_pod_named(&w, "mnist-worker-0"), t0[i]);
		if (t1[i])
			set_finished(fx_pod_named(&w, "mnist-worker-1"), t1[i]);
		fx_step(&w);
		TFJ_CHECK_STR(fx_cond(&w, "Failed"), "True");
		msg = fx_cond_field(&w, "Failed", "message");
		TFJ_CHECK(msg && strstr(msg, want[i]) != NULL);
		fx_world_free(&w);
	}
}

static void test_failed_ps_fails_with_reason(void)
{
	struct fx_world w;
	cJSON *j = ps_worker_job(NULL);
	const char *msg;

	cJSON_AddStringToObject(fx_run_policy(j), "cleanPodPolicy", "Running");
	fx_world_init(&w, j);
	start(&w);
	fx_pod_phase(fx_pod_named(&w, "mnist-ps-0"), "Failed");
	fx_pod_exit(fx_pod_named(&w, "mnist-ps-0"), "tensorflow", 137, "OOMKilled", 0);
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "True");
	TFJ_CHECK_STR(fx_status_str(&w, "phase"), "Failed");
	msg = fx_cond_field(&w, "Failed", "message");
	TFJ_CHECK(strstr(msg, "ps replica 0 (pod mnist-ps-0)") != NULL);
	TFJ_CHECK(strstr(msg, "code 137 (OOMKilled)") != NULL);
	TFJ_CHECK(fx_pod_named(&w, "mnist-worker-0") == NULL); /* cleaned */
	fx_world_free(&w);
}

static void test_exitcode_retryable_restarts_same_name(void)
{
	struct fx_world w;
	const struct tfj_action *del;

	fx_world_init(&w, ps_worker_job("ExitCode"));
	start(&w);
	fx_pod_phase(fx_pod_named(&w, "mnist-worker-1"), "Failed");
	fx_pod_exit(fx_pod_named(&w, "mnist-worker-1"), "tensorflow", 137, "OOMKilled", 0);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	del = fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-worker-1");
	TFJ_CHECK(del != NULL);
	TFJ_CHECK(del && del->reason == TFJ_DEL_RESTART);
	/* The exit code travels with the delete, for restarts by exit code (jobmetrics.h). */
	TFJ_CHECK(del && del->exit_code == 137);
	TFJ_CHECK(del && !strcmp(del->uid, cJSON_GetObjectItem(cJSON_GetObjectItem(
		fx_pod_named(&w, "mnist-worker-1"), "metadata"), "uid")->valuestring));
	/* The restart count is in status before the pod is gone. */
	TFJ_CHECK_INT(w.plan.actions[0].kind, TFJ_ACT_WRITE_STATUS);
	TFJ_CHECK(fx_event(&w.plan, "TFJobRestarting") != NULL);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Restarting"), "True");
	TFJ_CHECK_STR(fx_cond(&w, "Running"), "False");
	TFJ_CHECK_STR(fx_status_str(&w, "phase"), "Restarting");
	TFJ_CHECK(fx_rs(&w, "Worker", "restarts") == 1);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	/* Next round: recreated under the same name. */
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_CREATE_POD, "mnist-worker-1") != NULL);
	fx_apply(&w);
	fx_all_pods(&w, "Running");
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Running"), "True");
	TFJ_CHECK_STR(fx_cond(&w, "Restarting"), "False");
	fx_world_free(&w);
}

static void test_exitcode_permanent_fails(void)
{
	struct fx_world w;

	fx_world_init(&w, ps_worker_job("ExitCode"));
	start(&w);
	fx_pod_phase(fx_pod_named(&w, "mnist-worker-0"), "Failed");
	fx_pod_exit(fx_pod_named(&w, "mnist-worker-0"), "tensorflow", 2, "Error", 0);
	/* A sidecar's code does not decide: only the tensorflow container does. */
	fx_pod_exit(fx_pod_named(&w, "mnist-worker-0"), "sidecar", 143, "Error", 0);
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "True");
	TFJ_CHECK(strstr(fx_cond_field(&w, "Failed", "message"), "exited with code 2") != NULL);
	fx_world_free(&w);
}

static void test_onfailure_failed_pod_restarts(void)
{
	struct fx_world w;

	fx_world_init(&w, ps_worker_job("OnFailure"));
	start(&w);
	fx_pod_phase(fx_pod_named(&w, "mnist-ps-0"), "Failed");
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-ps-0") != NULL);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	fx_world_free(&w);
}

static void test_disruption_is_not_failure(void)
{
	struct fx_world w;
	cJSON *j = ps_worker_job("Never");
	const struct tfj_action *del;

	cJSON_AddNumberToObject(fx_run_policy(j), "backoffLimit", 0);
	fx_world_init(&w, j);
	start(&w);
	fx_pod_phase(fx_pod_named(&w, "mnist-worker-0"), "Failed");
	fx_pod_reason(fx_pod_named(&w, "mnist-worker-0"), "Evicted");
	TFJ_CHECK_INT(fx_plan(&w), 0);
	del = fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-worker-0");
	TFJ_CHECK(del && del->reason == TFJ_DEL_DISRUPTION);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	TFJ_CHECK(fx_rs(&w, "Worker", "restarts") == 0); /* not counted for backoff */
	fx_step(&w);
	TFJ_CHECK(fx_pod_named(&w, "mnist-worker-0") != NULL);
	/* Preemption reported by a DisruptionTarget condition works the same. */
	fx_all_pods(&w, "Running");
	fx_step(&w);
	{
		cJSON *p = fx_pod_named(&w, "mnist-ps-0"), *conds, *c;

		fx_pod_phase(p, "Failed");
		conds = cJSON_AddArrayToObject(cJSON_GetObjectItem(p, "status"), "conditions");
		c = cJSON_CreateObject();
		cJSON_AddItemToArray(conds, c);
		cJSON_AddStringToObject(c, "type", "DisruptionTarget");
		cJSON_AddStringToObject(c, "status", "True");
		cJSON_AddStringToObject(c, "reason", "PreemptionByScheduler");
	}
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	TFJ_CHECK(fx_pod_named(&w, "mnist-ps-0") == NULL);
	fx_world_free(&w);
}

/*
 * Kueue stops the pods of a pod group it preempts (docs/kueue.md, pod-group
 * mode) by setting a TerminationTarget condition and deleting them; the
 * trainer dies of the SIGTERM (exit 143). A disruption: the job does not
 * fail even with backoffLimit 0, nothing is counted, and the pod is made
 * again once gone (Kueue gates it until the group is admitted again).
 */
static void test_kueue_stop_is_disruption(void)
{
	struct fx_world w;
	cJSON *j = ps_worker_job("Never"), *p, *conds, *c;

	cJSON_AddNumberToObject(fx_run_policy(j), "backoffLimit", 0);
	fx_world_init(&w, j);
	start(&w);
	p = fx_pod_named(&w, "mnist-worker-1");
	fx_pod_phase(p, "Failed");
	fx_pod_exit(p, "tensorflow", 143, "Error", 0);
	conds = cJSON_AddArrayToObject(cJSON_GetObjectItem(p, "status"), "conditions");
	c = cJSON_CreateObject();
	cJSON_AddItemToArray(conds, c);
	cJSON_AddStringToObject(c, "type", "TerminationTarget");
	cJSON_AddStringToObject(c, "status", "True");
	cJSON_AddStringToObject(c, "reason", "WorkloadEvictedDueToPreempted");
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-worker-1") != NULL &&
		  fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-worker-1")->reason ==
		  TFJ_DEL_DISRUPTION);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	TFJ_CHECK(fx_rs(&w, "Worker", "restarts") == 0);
	fx_step(&w);
	TFJ_CHECK(fx_pod_named(&w, "mnist-worker-1") != NULL);
	fx_world_free(&w);
}

static void test_missing_pod_is_recreated(void)
{
	struct fx_world w;
	int at;

	fx_world_init(&w, ps_worker_job("Never"));
	start(&w);
	at = fx_find(w.pods, w.npods, "mnist-worker-1");
	fx_remove(w.pods, &w.npods, at); /* kubectl delete pod */
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_CREATE_POD, "mnist-worker-1") != NULL);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	fx_world_free(&w);
}

static void test_terminating_pod_is_waited_for(void)
{
	struct fx_world w;
	cJSON *p;

	fx_world_init(&w, ps_worker_job("ExitCode"));
	start(&w);
	p = fx_pod_named(&w, "mnist-worker-0");
	cJSON_AddStringToObject(cJSON_GetObjectItem(p, "metadata"), "deletionTimestamp",
				"2023-11-14T22:13:30Z");
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK(fx_count(&w.plan, TFJ_ACT_CREATE_POD) == 0);
	TFJ_CHECK(fx_count(&w.plan, TFJ_ACT_DELETE_POD) == 0);
	fx_world_free(&w);
}

static void test_backoff_counts_recreations(void)
{
	struct fx_world w;
	cJSON *j = ps_worker_job("ExitCode");

	cJSON_AddNumberToObject(fx_run_policy(j), "backoffLimit", 1);
	cJSON_AddStringToObject(fx_run_policy(j), "cleanPodPolicy", "Running");
	fx_world_init(&w, j);
	start(&w);
	fx_pod_phase(fx_pod_named(&w, "mnist-worker-0"), "Failed");
	fx_pod_exit(fx_pod_named(&w, "mnist-worker-0"), "tensorflow", 130, NULL, 0);
	fx_step(&w); /* restart 1 of 1 allowed */
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	fx_step(&w); /* recreate */
	fx_all_pods(&w, "Running");
	fx_pod_phase(fx_pod_named(&w, "mnist-worker-0"), "Failed");
	fx_pod_exit(fx_pod_named(&w, "mnist-worker-0"), "tensorflow", 130, NULL, 0);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK(fx_event(&w.plan, "BackoffLimitExceeded") != NULL);
	/* cleanPodPolicy applies on the backoff path too (trainer#3419). */
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-ps-0") != NULL);
	TFJ_CHECK(fx_count(&w.plan, TFJ_ACT_CREATE_POD) == 0);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "True");
	TFJ_CHECK_STR(fx_cond_field(&w, "Failed", "reason"), "BackoffLimitExceeded");
	fx_world_free(&w);
}

static void test_backoff_counts_container_restarts(void)
{
	struct fx_world w;
	cJSON *j = ps_worker_job("OnFailure");

	cJSON_AddNumberToObject(fx_run_policy(j), "backoffLimit", 2);
	fx_world_init(&w, j);
	start(&w);
	fx_pod_restarts(fx_pod_named(&w, "mnist-worker-1"), 2);
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(fx_pod_named(&w, "mnist-worker-1"), "status"),
				   "containerStatuses");
	fx_pod_restarts(fx_pod_named(&w, "mnist-worker-1"), 3);
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "True");
	TFJ_CHECK(strstr(fx_cond_field(&w, "Failed", "message"), "restarted 3 times") != NULL);
	fx_world_free(&w);
}

static void test_active_deadline_timer(void)
{
	struct fx_world w;
	cJSON *j = ps_worker_job(NULL);
	const struct tfj_action *rq;

	cJSON_AddNumberToObject(fx_run_policy(j), "activeDeadlineSeconds", 60);
	cJSON_AddStringToObject(fx_run_policy(j), "cleanPodPolicy", "Running");
	fx_world_init(&w, j);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	rq = fx_action(&w.plan, TFJ_ACT_REQUEUE, NULL);
	TFJ_CHECK(rq && rq->after_ms == 60000);
	TFJ_CHECK_INT(w.plan.actions[w.plan.n - 1].kind, TFJ_ACT_REQUEUE);
	fx_apply(&w);
	fx_all_pods(&w, "Running");
	w.now_ms += 30500;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	rq = fx_action(&w.plan, TFJ_ACT_REQUEUE, NULL);
	TFJ_CHECK(rq && rq->after_ms == 29500);
	fx_apply(&w);
	w.now_ms = FX_T0_MS + 60000; /* the requeue fires: no other event needed */
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK(fx_event(&w.plan, "DeadlineExceeded") != NULL);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 3);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond_field(&w, "Failed", "reason"), "DeadlineExceeded");
	fx_world_free(&w);
}

static void test_ttl_deletes_job(void)
{
	struct fx_world w;
	cJSON *j = ps_worker_job(NULL);
	const struct tfj_action *a;

	cJSON_AddNumberToObject(fx_run_policy(j), "ttlSecondsAfterFinished", 30);
	fx_world_init(&w, j);
	start(&w);
	fx_pod_phase(fx_pod_named(&w, "mnist-worker-0"), "Succeeded");
	TFJ_CHECK_INT(fx_plan(&w), 0);
	a = fx_action(&w.plan, TFJ_ACT_REQUEUE, NULL);
	TFJ_CHECK(a && a->after_ms == 30000);
	fx_apply(&w);
	w.now_ms += 29999;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK(fx_count(&w.plan, TFJ_ACT_DELETE_JOB) == 0);
	w.now_ms += 1;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	a = fx_action(&w.plan, TFJ_ACT_DELETE_JOB, NULL);
	TFJ_CHECK(a && !strcmp(a->name, "mnist") && !strcmp(a->uid, "job-uid-1"));
	fx_world_free(&w);
}

static void test_clean_pod_policy_all_and_none(void)
{
	static const char *const nones[] = { "None", "", NULL };
	struct fx_world w;
	cJSON *j = ps_worker_job(NULL);
	int i;

	cJSON_AddStringToObject(fx_run_policy(j), "cleanPodPolicy", "All");
	fx_world_init(&w, j);
	start(&w);
	fx_pod_phase(fx_pod_named(&w, "mnist-worker-0"), "Succeeded");
	fx_step(&w);
	TFJ_CHECK_INT(w.npods, 0);
	TFJ_CHECK_INT(w.nsvcs, 0);
	fx_world_free(&w);

	/* None keeps every pod; "" and no policy are None, Kubeflow v1.9's default. */
	for (i = 0; i < 3; i++) {
		j = ps_worker_job(NULL);
		if (nones[i])
			cJSON_AddStringToObject(fx_run_policy(j), "cleanPodPolicy", nones[i]);
		fx_world_init(&w, j);
		start(&w);
		fx_pod_phase(fx_pod_named(&w, "mnist-worker-0"), "Succeeded");
		fx_step(&w);
		TFJ_CHECK_STR(fx_cond(&w, "Succeeded"), "True");
		TFJ_CHECK_INT(w.npods, 3);
		TFJ_CHECK_INT(w.nsvcs, 3);
		fx_world_free(&w);
	}
}

static void test_suspend_and_resume(void)
{
	struct fx_world w;
	cJSON *rp;

	fx_world_init(&w, ps_worker_job(NULL));
	start(&w);
	rp = fx_run_policy(w.job);
	cJSON_AddTrueToObject(rp, "suspend");
	w.now_ms += 10000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 3);
	TFJ_CHECK_INT(fx_action(&w.plan, TFJ_ACT_DELETE_POD, NULL)->reason, TFJ_DEL_SUSPEND);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_SERVICE), 0);
	TFJ_CHECK(fx_event(&w.plan, "TFJobSuspended") != NULL);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Suspended"), "True");
	TFJ_CHECK_STR(fx_cond(&w, "Running"), "False");
	TFJ_CHECK_STR(fx_status_str(&w, "phase"), "Suspended");
	TFJ_CHECK_INT(w.nsvcs, 3);
	TFJ_CHECK_INT(fx_plan(&w), 0); /* stays suspended, nothing to do */
	TFJ_CHECK_INT(w.plan.n, 0);
	cJSON_ReplaceItemInObject(rp, "suspend", cJSON_CreateFalse());
	w.now_ms += 50000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 3);
	TFJ_CHECK(fx_event(&w.plan, "TFJobResumed") != NULL);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Suspended"), "False");
	TFJ_CHECK_STR(fx_cond_field(&w, "Suspended", "reason"), "TFJobResumed");
	TFJ_CHECK_STR(fx_status_str(&w, "startTime"), "2023-11-14T22:14:20Z");
	/* STATE follows the live condition, not the last one that changed. */
	fx_all_pods(&w, "Running");
	fx_step(&w);
	TFJ_CHECK_STR(fx_status_str(&w, "phase"), "Running");
	fx_world_free(&w);
}

/*
 * Kueue's kubeflow.org/tfjob contract (docs/kueue.md): Kueue suspends to
 * preempt and then waits until no replicaStatuses[*].active is left, so
 * active is 0 at once even while the pods are still terminating; Running
 * goes False. While suspended longer than activeDeadlineSeconds nothing
 * fails. Kueue edits the templates while the job is suspended (the
 * flavor's nodeSelector and tolerations, labels): the pods of the resume
 * carry the templates as they are now, and startTime restarts.
 */
static void test_kueue_suspend_contract(void)
{
	struct fx_world w;
	cJSON *j = ps_worker_job(NULL), *rp, *tmpl, *spec, *tol;
	size_t i;

	cJSON_AddNumberToObject(fx_run_policy(j), "activeDeadlineSeconds", 60);
	fx_world_init(&w, j);
	start(&w);
	TFJ_CHECK(fx_rs(&w, "Worker", "active") == 2);
	rp = fx_run_policy(w.job);
	cJSON_AddTrueToObject(rp, "suspend");
	TFJ_CHECK_INT(fx_plan(&w), 0);
	/* The deletes are asked; the pods take their grace period to go. */
	for (i = 0; i < w.npods; i++)
		cJSON_AddStringToObject(cJSON_GetObjectItem(w.pods[i], "metadata"),
					"deletionTimestamp", "2023-11-14T22:14:00Z");
	fx_step(&w);
	TFJ_CHECK_INT(w.npods, 3);
	TFJ_CHECK(fx_rs(&w, "Worker", "active") == 0);
	TFJ_CHECK(fx_rs(&w, "PS", "active") == 0);
	TFJ_CHECK_STR(fx_cond(&w, "Running"), "False");
	TFJ_CHECK_STR(fx_cond(&w, "Suspended"), "True");
	while (w.npods)
		fx_remove(w.pods, &w.npods, 0);
	/* Suspended for longer than the deadline: no failure. */
	w.now_ms += 600000;
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	/* Kueue admits it on a flavor: edits the templates, then resumes. */
	tmpl = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
		cJSON_GetObjectItem(w.job, "spec"), "tfReplicaSpecs"), "Worker"), "template"), "spec");
	spec = cJSON_AddObjectToObject(tmpl, "nodeSelector");
	cJSON_AddStringToObject(spec, "pool", "gpu-a");
	tol = cJSON_CreateObject();
	cJSON_AddStringToObject(tol, "key", "gpu");
	cJSON_AddStringToObject(tol, "operator", "Exists");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(tmpl, "tolerations"), tol);
	cJSON_ReplaceItemInObject(rp, "suspend", cJSON_CreateFalse());
	fx_step(&w);
	TFJ_CHECK_INT(w.npods, 3);
	TFJ_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
		fx_pod_named(&w, "mnist-worker-1"), "spec"), "nodeSelector"), "pool")->valuestring,
		"gpu-a");
	TFJ_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(
		fx_pod_named(&w, "mnist-worker-0"), "spec"), "tolerations")), 1);
	TFJ_CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(fx_pod_named(&w, "mnist-ps-0"), "spec"),
				      "nodeSelector") == NULL);
	TFJ_CHECK_STR(fx_status_str(&w, "startTime"), "2023-11-14T22:23:20Z");
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	fx_world_free(&w);
}

/*
 * Worker 0 (the one whose success ends a job without chief) exits 0 while
 * its pod is being deleted: finished at or after the deletion was asked
 * (deletionTimestamp minus the grace period), it stopped on the SIGTERM, as
 * a trainer that exits 0 on SIGTERM does under a suspend or a kubectl
 * delete pod. No success: the job keeps running and the pod is made again
 * once gone. Finished before the deletion was asked, it had completed.
 */
static void test_exit0_on_delete_is_no_success(void)
{
	static const char *const fin[2] = { "2023-11-14T22:14:00Z", "2023-11-14T22:13:40Z" };
	struct fx_world w;
	cJSON *pod, *t;
	int i, at;

	for (i = 0; i < 2; i++) {
		fx_world_init(&w, ps_worker_job(NULL));
		start(&w);
		pod = fx_pod_named(&w, "mnist-worker-0");
		fx_pod_phase(pod, "Succeeded");
		fx_pod_exit(pod, "tensorflow", 0, "Completed", 0);
		t = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
			cJSON_GetObjectItem(pod, "status"), "containerStatuses"), 0), "state"),
			"terminated");
		cJSON_AddStringToObject(t, "finishedAt", fin[i]);
		/* Asked at 22:13:50 with 30 s of grace. */
		cJSON_AddStringToObject(cJSON_GetObjectItem(pod, "metadata"), "deletionTimestamp",
					"2023-11-14T22:14:20Z");
		cJSON_AddNumberToObject(cJSON_GetObjectItem(pod, "metadata"),
					"deletionGracePeriodSeconds", 30);
		w.now_ms += 60000;
		fx_step(&w);
		if (i == 1) {
			TFJ_CHECK_STR(fx_cond(&w, "Succeeded"), "True");
			fx_world_free(&w);
			continue;
		}
		TFJ_CHECK_STR(fx_cond(&w, "Succeeded"), "");
		TFJ_CHECK_STR(fx_status_str(&w, "phase"), "Running");
		TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 0);
		/* Gone: made again, as for any missing replica. */
		at = fx_find(w.pods, w.npods, "mnist-worker-0");
		TFJ_CHECK_GE(at, 0);
		fx_remove(w.pods, &w.npods, at);
		TFJ_CHECK_INT(fx_plan(&w), 0);
		TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_CREATE_POD, "mnist-worker-0") != NULL);
		fx_world_free(&w);
	}
}

static void test_never_succeeded_and_failed(void)
{
	struct fx_world w;

	fx_world_init(&w, ps_worker_job("Never"));
	start(&w);
	fx_pod_phase(fx_pod_named(&w, "mnist-worker-0"), "Succeeded");
	fx_pod_phase(fx_pod_named(&w, "mnist-worker-1"), "Failed");
	fx_step(&w);
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Succeeded"), "True");
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	fx_world_free(&w);
}

static void test_invalid_spec_fails_visibly(void)
{
	struct fx_world w;
	cJSON *j = fx_job("bad");

	fx_replica(j, "Launcher", 1, NULL);
	fx_world_init(&w, j);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK(fx_count(&w.plan, TFJ_ACT_CREATE_POD) == 0);
	TFJ_CHECK(fx_event(&w.plan, "InvalidSpec") != NULL);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "True");
	TFJ_CHECK(strstr(fx_cond_field(&w, "Failed", "message"), "Launcher") != NULL);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(w.plan.n, 0);
	fx_world_free(&w);
}

static void test_scale_down_deletes_excess(void)
{
	struct fx_world w;
	cJSON *r;

	fx_world_init(&w, ps_worker_job(NULL));
	start(&w);
	r = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(w.job, "spec"),
						    "tfReplicaSpecs"), "Worker");
	cJSON_ReplaceItemInObject(r, "replicas", cJSON_CreateNumber(1));
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-worker-1") != NULL);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_DELETE_SERVICE, "mnist-worker-1") != NULL);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-worker-0") == NULL);
	fx_world_free(&w);
}

static void test_not_ours_or_deleting(void)
{
	struct fx_world w;
	cJSON *j = ps_worker_job(NULL);

	cJSON_AddStringToObject(fx_run_policy(j), "managedBy", "kueue.x-k8s.io/multikueue");
	fx_world_init(&w, j);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(w.plan.n, 0);
	fx_world_free(&w);

	j = ps_worker_job(NULL);
	cJSON_AddStringToObject(fx_run_policy(j), "managedBy", TFJ_TFJOB_MANAGER);
	fx_world_init(&w, j);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_GT(w.plan.n, 0);
	fx_world_free(&w);

	j = ps_worker_job(NULL);
	cJSON_AddStringToObject(cJSON_GetObjectItem(j, "metadata"), "deletionTimestamp",
				"2023-11-14T22:13:20Z");
	fx_world_init(&w, j);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(w.plan.n, 0);
	fx_world_free(&w);
}

static void test_bad_input_rejected(void)
{
	struct tfj_plan p;
	struct tfj_plan_input in;

	memset(&in, 0, sizeof(in));
	TFJ_CHECK(tfj_plan_compute(&p, NULL) == TFJ_EINVAL);
	TFJ_CHECK(tfj_plan_compute(&p, &in) == TFJ_EINVAL);
	TFJ_CHECK_INT(p.n, 0);
	tfj_plan_free(&p);
	tfj_plan_free(NULL);
}

static void test_foreign_objects_ignored_safely(void)
{
	struct fx_world w;
	cJSON *odd;

	fx_world_init(&w, ps_worker_job(NULL));
	start(&w);
	/* A pod with our labels but a wrong name, and one with no metadata. */
	odd = fx_pod("other", "worker", 0, "Running");
	w.pods[w.npods++] = odd;
	odd = cJSON_CreateObject();
	w.pods[w.npods++] = odd;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_DELETE_POD, "other-worker-0") != NULL);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 1);
	fx_world_free(&w);
}

static void test_creates_in_batches(void)
{
	struct fx_world w;
	cJSON *j = fx_job("big");
	const struct tfj_action *rq;

	fx_replica(j, "Worker", 60, NULL);
	fx_world_init(&w, j);
	w.cfg.max_creates = 50;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 25);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_SERVICE), 25);
	rq = fx_action(&w.plan, TFJ_ACT_REQUEUE, NULL);
	TFJ_CHECK(rq && rq->after_ms == TFJ_PLAN_BATCH_REQUEUE_MS);
	fx_apply(&w);
	fx_step(&w);
	TFJ_CHECK_INT(w.npods, 50);
	fx_step(&w);
	TFJ_CHECK_INT(w.npods, 60);
	TFJ_CHECK_INT(w.nsvcs, 60);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK(fx_count(&w.plan, TFJ_ACT_REQUEUE) == 0);
	fx_world_free(&w);
}

/*
 * A plan holds no child bodies, and its creates are bounded by bytes as
 * well as by count: 200 workers whose template is about 200 KB (under the
 * spec cap) are created about 16 MiB of bodies per plan, each body built
 * on demand from the plan alone.
 */
static void test_creates_bounded_by_bytes(void)
{
	struct fx_world w;
	cJSON *j = fx_job("wide"), *r, *ctr, *env, *e, *pod;
	size_t i, pods, tmpl_bytes;
	char name[32];

	r = fx_replica(j, "Worker", 200, NULL);
	ctr = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r,
		"template"), "spec"), "containers"), 0);
	env = cJSON_AddArrayToObject(ctr, "env");
	for (i = 0; i < 4800; i++) {
		snprintf(name, sizeof(name), "VARIABLE_%05zu", i);
		e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "name", name);
		cJSON_AddStringToObject(e, "value", "0123456");
		cJSON_AddItemToArray(env, e);
	}
	tmpl_bytes = tfj_json_text_size(cJSON_GetObjectItem(r, "template"), 1 << 20);
	TFJ_CHECK(tmpl_bytes > 200000 && tmpl_bytes < TFJ_TFJOB_MAX_SPEC_BYTES);
	fx_world_init(&w, j);
	w.cfg.max_creates = 1000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	pods = fx_count(&w.plan, TFJ_ACT_CREATE_POD);
	TFJ_CHECK(pods >= TFJ_PLAN_MAX_CREATE_BYTES / (tmpl_bytes + 200 * 64 + 6000));
	TFJ_CHECK(pods <= TFJ_PLAN_MAX_CREATE_BYTES / tmpl_bytes + 1);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_REQUEUE, NULL) != NULL);
	for (i = 0; i < w.plan.n; i++) {
		const struct tfj_action *a = &w.plan.actions[i];

		if (a->kind != TFJ_ACT_CREATE_POD)
			continue;
		TFJ_CHECK(a->body == NULL);
		pod = fx_body(&w, a);
		TFJ_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(pod,
			"metadata"), "name")), a->name);
		TFJ_CHECK(tfj_json_text_size(pod, 1 << 20) >= tmpl_bytes);
		cJSON_Delete(pod);
	}
	/* Reconciles go on until every replica has its pod. */
	for (i = 0; i < 10 && w.npods < 200; i++)
		fx_step(&w);
	TFJ_CHECK_INT(w.npods, 200);
	fx_world_free(&w);
}

/*
 * Other shapes of the oversized template (issue 27), each at two sizes: just
 * under the spec cap the job is served, no body is in the plan, and one pod
 * body costs about its template plus the operator's additions; over the cap
 * the job is invalid before any body is built and keeps no spec.
 */
enum shape { MANY_CONTAINERS, MANY_VOLUMES, LONG_ARGS, BIG_ANNOTATIONS, NSHAPES };

static const char *const shape_names[NSHAPES] = {
	"many containers", "many volumes", "long args", "big annotations"
};

/* A template of the shape, about `bytes` of JSON. */
static cJSON *shape_template(enum shape sh, size_t bytes)
{
	cJSON *tmpl = fx_template(), *spec = cJSON_GetObjectItem(tmpl, "spec");
	cJSON *ctrs = cJSON_GetObjectItem(spec, "containers"), *arr, *o;
	char name[48], *pad;
	size_t n, i;

	switch (sh) {
	case MANY_CONTAINERS:
		/* 63 sidecars (the decoder's cap is 64) with long images. */
		pad = malloc(bytes / 63 + 1);
		memset(pad, 'i', bytes / 63);
		pad[bytes / 63] = '\0';
		for (i = 1; i < 64; i++) {
			snprintf(name, sizeof(name), "side-%zu", i);
			o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "name", name);
			cJSON_AddStringToObject(o, "image", pad);
			cJSON_AddItemToArray(ctrs, o);
		}
		free(pad);
		break;
	case MANY_VOLUMES:
		arr = cJSON_AddArrayToObject(spec, "volumes");
		n = bytes / 35; /* {"name":"vol-000000","emptyDir":{}}, */
		for (i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "vol-%06zu", i);
			o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "name", name);
			cJSON_AddObjectToObject(o, "emptyDir");
			cJSON_AddItemToArray(arr, o);
		}
		break;
	case LONG_ARGS:
		pad = malloc(bytes + 1);
		memset(pad, 'a', bytes);
		pad[bytes] = '\0';
		arr = cJSON_AddArrayToObject(cJSON_GetArrayItem(ctrs, 0), "args");
		cJSON_AddItemToArray(arr, cJSON_CreateString(pad));
		free(pad);
		break;
	case BIG_ANNOTATIONS:
		arr = cJSON_AddObjectToObject(cJSON_AddObjectToObject(tmpl, "metadata"), "annotations");
		pad = malloc(1025);
		memset(pad, 'v', 1024);
		pad[1024] = '\0';
		for (i = 0; i < bytes / 1044; i++) {
			snprintf(name, sizeof(name), "example.com/a%05zu", i);
			cJSON_AddStringToObject(arr, name, pad);
		}
		free(pad);
		break;
	default:
		break;
	}
	return tmpl;
}

static void test_attack_shapes(void)
{
	for (int sh = 0; sh < NSHAPES; sh++) {
		for (int over = 0; over < 2; over++) {
			size_t want = over ? TFJ_TFJOB_MAX_SPEC_BYTES + 4096 : 240000;
			cJSON *j = fx_job("shape"), *r, *pod;
			struct fx_world w;
			size_t tmpl_bytes, i, built = 0;

			r = fx_replica(j, "Worker", 64, NULL);
			cJSON_ReplaceItemInObject(r, "template", shape_template((enum shape)sh, want));
			tmpl_bytes = tfj_json_text_size(cJSON_GetObjectItem(r, "template"), 1 << 20);
			fx_world_init(&w, j);
			TFJ_CHECK_INT(fx_plan(&w), 0);
			if (over) {
				/* Refused before any body: one status write, no create. */
				TFJ_CHECK(tmpl_bytes > TFJ_TFJOB_MAX_SPEC_BYTES);
				TFJ_CHECK_INT(w.planned.spec_valid, 0);
				TFJ_CHECK(strstr(w.planned.spec_error, "more than 262144 bytes") != NULL);
				TFJ_CHECK(cJSON_GetObjectItem(w.planned.doc, "spec") == NULL);
				TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 0);
				TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_WRITE_STATUS), 1);
			} else {
				TFJ_CHECK(tmpl_bytes > 200000 && tmpl_bytes < TFJ_TFJOB_MAX_SPEC_BYTES);
				TFJ_CHECK_INT(w.planned.spec_valid, 1);
				TFJ_CHECK(fx_count(&w.plan, TFJ_ACT_CREATE_POD) > 0);
				for (i = 0; i < w.plan.n; i++) {
					const struct tfj_action *a = &w.plan.actions[i];
					size_t b;

					TFJ_CHECK(a->kind == TFJ_ACT_WRITE_STATUS || a->body == NULL);
					if (a->kind != TFJ_ACT_CREATE_POD || built++)
						continue;
					/* One body: the template, a 64-host TF_CONFIG and the
					 * operator's labels, env and owner: at most 16 KiB more. */
					pod = fx_body(&w, a);
					b = tfj_json_text_size(pod, 1 << 20);
					TFJ_CHECK(b >= tmpl_bytes && b < tmpl_bytes + (16u << 10));
					if (b < tmpl_bytes || b >= tmpl_bytes + (16u << 10))
						tfj_test_fail(__FILE__, __LINE__, "%s: body %zu bytes, template %zu",
							      shape_names[sh], b, tmpl_bytes);
					cJSON_Delete(pod);
				}
			}
			fx_world_free(&w);
		}
	}
}

/* The API server returns status keys sorted; that is not a change. */
static void test_status_key_order_is_not_a_change(void)
{
	struct fx_world w;
	cJSON *st, *rev, *it;

	fx_world_init(&w, ps_worker_job(NULL));
	start(&w);
	st = cJSON_DetachItemFromObject(w.job, "status");
	rev = cJSON_CreateObject();
	while ((it = st->child ? cJSON_DetachItemViaPointer(st, cJSON_GetArrayItem(st,
			cJSON_GetArraySize(st) - 1)) : NULL))
		cJSON_AddItemToObject(rev, it->string, it);
	cJSON_Delete(st);
	cJSON_AddItemToObject(w.job, "status", rev);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(w.plan.n, 0);
	fx_world_free(&w);
}

/* A job that fails keeps its failed pods for cleanPodPolicy: no restart deletes. */
static void test_failure_wins_over_restart(void)
{
	struct fx_world w;
	cJSON *j = ps_worker_job("ExitCode");

	cJSON_AddStringToObject(fx_run_policy(j), "cleanPodPolicy", "None");
	fx_world_init(&w, j);
	start(&w);
	fx_pod_phase(fx_pod_named(&w, "mnist-worker-0"), "Failed");
	fx_pod_exit(fx_pod_named(&w, "mnist-worker-0"), "tensorflow", 137, "OOMKilled", 0);
	fx_pod_phase(fx_pod_named(&w, "mnist-worker-1"), "Failed");
	fx_pod_exit(fx_pod_named(&w, "mnist-worker-1"), "tensorflow", 1, "Error", 0);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
	TFJ_CHECK(fx_event(&w.plan, "TFJobRestarting") == NULL);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "True");
	TFJ_CHECK_STR(fx_cond(&w, "Restarting"), "");
	TFJ_CHECK(fx_rs(&w, "Worker", "restarts") == 0);
	TFJ_CHECK(fx_rs(&w, "Worker", "failed") == 2);
	fx_world_free(&w);
}

/*
 * enableDynamicWorker (Kubeflow's tfjob_controller.go L495-498): a worker
 * that failed for good is left failed and the job runs on; the worker the
 * job's success waits for (worker 0 without a chief) still fails it.
 */
/* A started ps/worker job with enableDynamicWorker whose worker `name` failed. */
static void dynamic_worker_failed(struct fx_world *w, const char *name)
{
	cJSON *j = ps_worker_job("Never");

	cJSON_AddTrueToObject(cJSON_GetObjectItem(j, "spec"), "enableDynamicWorker");
	fx_world_init(w, j);
	start(w);
	fx_pod_phase(fx_pod_named(w, name), "Failed");
	fx_pod_exit(fx_pod_named(w, name), "tensorflow", 1, "Error", 0);
	fx_step(w);
}

static void test_dynamic_worker_failure_tolerated(void)
{
	struct fx_world w;

	dynamic_worker_failed(&w, "mnist-worker-1");
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	TFJ_CHECK_STR(fx_cond(&w, "Running"), "True");
	TFJ_CHECK(fx_pod_named(&w, "mnist-worker-1") != NULL); /* kept, not recreated */
	TFJ_CHECK(fx_rs(&w, "Worker", "failed") == 1);
	TFJ_CHECK_INT((int)fx_count(&w.plan, TFJ_ACT_CREATE_POD), 0);
	fx_pod_phase(fx_pod_named(&w, "mnist-worker-0"), "Succeeded");
	fx_pod_exit(fx_pod_named(&w, "mnist-worker-0"), "tensorflow", 0, "Completed", 0);
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Succeeded"), "True");
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	fx_world_free(&w);

	/* Worker 0 decides success here: its failure fails the job. */
	dynamic_worker_failed(&w, "mnist-worker-0");
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "True");
	fx_world_free(&w);
}

int main(void)
{
	TFJ_RUN(test_failure_wins_over_restart);
	TFJ_RUN(test_status_key_order_is_not_a_change);
	TFJ_RUN(test_creates_in_batches);
	TFJ_RUN(test_creates_bounded_by_bytes);
	TFJ_RUN(test_attack_shapes);
	TFJ_RUN(test_creates_children_in_order);
	TFJ_RUN(test_same_input_same_plan);
	TFJ_RUN(test_running_condition);
	TFJ_RUN(test_success_chief_cleans_running);
	TFJ_RUN(test_success_worker0_default);
	TFJ_RUN(test_success_all_workers_and_no_rerun);
	TFJ_RUN(test_never_failure_names_replica);
	TFJ_RUN(test_failed_ps_fails_with_reason);
	TFJ_RUN(test_exitcode_retryable_restarts_same_name);
	TFJ_RUN(test_exitcode_permanent_fails);
	TFJ_RUN(test_onfailure_failed_pod_restarts);
	TFJ_RUN(test_disruption_is_not_failure);
	TFJ_RUN(test_kueue_stop_is_disruption);
	TFJ_RUN(test_missing_pod_is_recreated);
	TFJ_RUN(test_terminating_pod_is_waited_for);
	TFJ_RUN(test_backoff_counts_recreations);
	TFJ_RUN(test_backoff_counts_container_restarts);
	TFJ_RUN(test_active_deadline_timer);
	TFJ_RUN(test_ttl_deletes_job);
	TFJ_RUN(test_clean_pod_policy_all_and_none);
	TFJ_RUN(test_suspend_and_resume);
	TFJ_RUN(test_kueue_suspend_contract);
	TFJ_RUN(test_exit0_on_delete_is_no_success);
	TFJ_RUN(test_failure_names_earliest);
	TFJ_RUN(test_never_succeeded_and_failed);
	TFJ_RUN(test_invalid_spec_fails_visibly);
	TFJ_RUN(test_scale_down_deletes_excess);
	TFJ_RUN(test_not_ours_or_deleting);
	TFJ_RUN(test_bad_input_rejected);
	TFJ_RUN(test_foreign_objects_ignored_safely);
	TFJ_RUN(test_dynamic_worker_failure_tolerated);
	return tfj_test_finish();
}
