/*
 * test_plankueue.c - Kueue's pod-group mode (tfjob/kueue.h,
 * tfjob/plankueue.h) through the real planner on a tiny world
 * (plan_fixtures.h), with Kueue's webhook played by kueue_admit_pods():
 *
 *  - the pods of a job that names its LocalQueue carry the queue label,
 *    the group name and the group's total count; not without
 *    --kueue-pod-groups, not without a queue; a queue annotation that is no
 *    label value fails the job (InvalidSpec);
 *  - gated pods: no failure, and activeDeadlineSeconds does not run until
 *    the group is admitted (startTime cleared, then set at admission);
 *  - Kueue's finalizer comes off settled pods being deleted (RELEASE_POD
 *    with the entry's index and the pod's uid), never off a pod still
 *    running, never without the flag, and also while the job is deleted;
 *  - preemption: Kueue's TerminationTarget, deletion; released, made
 *    again, gated again; no restart counted, the job does not fail.
 */
#include <string.h>

#include "plan_fixtures.h"
#include "tfjob/kueue.h"

#define UID "0f6c1d2e-1111-2222-3333-444455556666"

/* A PS and two workers queued to LocalQueue `queue` by annotation (or label). */
static cJSON *queued_job(const char *queue, int by_label)
{
	cJSON *j = fx_job("mnist"), *m = cJSON_GetObjectItem(j, "metadata");

	cJSON_ReplaceItemInObject(m, "uid", cJSON_CreateString(UID));
	if (queue)
		cJSON_AddStringToObject(cJSON_AddObjectToObject(m, by_label ? "labels" : "annotations"),
					by_label ? TFJ_KUEUE_LABEL_QUEUE : TFJ_KUEUE_ANN_QUEUE, queue);
	fx_replica(j, "PS", 1, NULL);
	fx_replica(j, "Worker", 2, NULL);
	return j;
}

static const char *label(cJSON *pod, const char *key)
{
	cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "metadata"),
							   "labels"), key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

static const char *annotation(cJSON *pod, const char *key)
{
	cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "metadata"),
							   "annotations"), key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

/* What Kueue's pod webhook does to a new pod of a group: its finalizer and its gate. */
static void kueue_admit_pods(struct fx_world *w)
{
	for (size_t i = 0; i < w->npods; i++) {
		cJSON *m = cJSON_GetObjectItem(w->pods[i], "metadata"), *spec, *g, *f;

		if (cJSON_GetObjectItem(m, "finalizers"))
			continue;
		f = cJSON_AddArrayToObject(m, "finalizers");
		cJSON_AddItemToArray(f, cJSON_CreateString("example.com/keep"));
		cJSON_AddItemToArray(f, cJSON_CreateString(TFJ_KUEUE_FINALIZER));
		if (!(spec = cJSON_GetObjectItem(w->pods[i], "spec")))
			spec = cJSON_AddObjectToObject(w->pods[i], "spec");
		cJSON_DeleteItemFromObject(spec, "schedulingGates");
		g = cJSON_CreateObject();
		cJSON_AddStringToObject(g, "name", TFJ_KUEUE_GATE);
		cJSON_AddItemToArray(cJSON_AddArrayToObject(spec, "schedulingGates"), g);
	}
}

/* Kueue admits the group: gates off; the scheduler binds and the pods run. */
static void kueue_run_pods(struct fx_world *w)
{
	for (size_t i = 0; i < w->npods; i++) {
		cJSON *spec = cJSON_GetObjectItem(w->pods[i], "spec");

		cJSON_DeleteItemFromObject(spec, "schedulingGates");
		cJSON_DeleteItemFromObject(spec, "nodeName");
		cJSON_AddStringToObject(spec, "nodeName", "node-1");
		fx_pod_phase(w->pods[i], "Running");
	}
}

static void mark_deleting(cJSON *pod)
{
	cJSON_AddStringToObject(cJSON_GetObjectItem(pod, "metadata"), "deletionTimestamp",
				"2023-11-14T22:20:00Z");
}

static void test_pods_carry_group_marks(void)
{
	struct fx_world w;
	cJSON *p;

	fx_world_init(&w, queued_job("team-a", 0));
	w.cfg.kueue_pod_groups = 1;
	fx_step(&w);
	TFJ_CHECK_INT(w.npods, 3);
	for (size_t i = 0; i < w.npods; i++) {
		p = w.pods[i];
		TFJ_CHECK_STR(label(p, TFJ_KUEUE_LABEL_QUEUE), "team-a");
		TFJ_CHECK_STR(label(p, TFJ_KUEUE_LABEL_GROUP), "mnist-0f6c1d2e");
		TFJ_CHECK_STR(annotation(p, TFJ_KUEUE_ANN_TOTAL), "3");
		/* Kueue's TFJob integration selects by these: they stay. */
		TFJ_CHECK_STR(label(p, TFJ_LABEL_OPERATOR), "tfjob-controller");
		TFJ_CHECK_STR(annotation(p, "note"), "kept");
	}
	fx_world_free(&w);

	/* The label names the queue too (Kueue v0.19+, TFJob integration off). */
	fx_world_init(&w, queued_job("team-b", 1));
	w.cfg.kueue_pod_groups = 1;
	fx_step(&w);
	TFJ_CHECK_STR(label(fx_pod_named(&w, "mnist-worker-1"), TFJ_KUEUE_LABEL_GROUP),
		      "mnist-0f6c1d2e");
	TFJ_CHECK_STR(label(fx_pod_named(&w, "mnist-worker-1"), TFJ_KUEUE_LABEL_QUEUE), "team-b");
	fx_world_free(&w);

	/* Without the flag (Kueue's TFJob integration admits the job), or without a queue: none. */
	fx_world_init(&w, queued_job("team-a", 0));
	fx_step(&w);
	TFJ_CHECK_STR(label(fx_pod_named(&w, "mnist-ps-0"), TFJ_KUEUE_LABEL_GROUP), "");
	TFJ_CHECK_STR(annotation(fx_pod_named(&w, "mnist-ps-0"), TFJ_KUEUE_ANN_TOTAL), "");
	fx_world_free(&w);
	fx_world_init(&w, queued_job(NULL, 0));
	w.cfg.kueue_pod_groups = 1;
	fx_step(&w);
	TFJ_CHECK_STR(label(fx_pod_named(&w, "mnist-ps-0"), TFJ_KUEUE_LABEL_QUEUE), "");
	fx_world_free(&w);
}

static void test_bad_queue_annotation_fails(void)
{
	struct fx_world w;

	fx_world_init(&w, queued_job("team a\"}", 0));
	w.cfg.kueue_pod_groups = 1;
	fx_step(&w);
	TFJ_CHECK_INT(w.npods, 0);
	TFJ_CHECK_STR(fx_cond_field(&w, "Failed", "reason"), "InvalidSpec");
	TFJ_CHECK(strstr(fx_cond_field(&w, "Failed", "message"), TFJ_KUEUE_ANN_QUEUE) != NULL);
	fx_world_free(&w);
}

static void test_gated_group_stops_the_deadline(void)
{
	struct fx_world w;
	cJSON *j = queued_job("team-a", 0);

	cJSON_AddNumberToObject(fx_run_policy(j), "activeDeadlineSeconds", 60);
	fx_world_init(&w, j);
	w.cfg.kueue_pod_groups = 1;
	fx_step(&w);
	kueue_admit_pods(&w);
	/* Queued twice the deadline: no failure, no clock. */
	w.now_ms += 120000;
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	TFJ_CHECK_STR(fx_status_str(&w, "startTime"), "");
	TFJ_CHECK_INT(w.npods, 3);
	/* Admitted: the clock starts now and runs its 60 s from here. */
	kueue_run_pods(&w);
	fx_step(&w);
	TFJ_CHECK_STR(fx_status_str(&w, "startTime"), "2023-11-14T22:15:20Z");
	TFJ_CHECK_STR(fx_cond(&w, "Running"), "True");
	w.now_ms += 59000;
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	w.now_ms += 1000;
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond_field(&w, "Failed", "reason"), "DeadlineExceeded");
	fx_world_free(&w);
}

static void test_release_settled_pods(void)
{
	struct fx_world w;
	const struct tfj_action *a;

	fx_world_init(&w, queued_job("team-a", 0));
	w.cfg.kueue_pod_groups = 1;
	fx_step(&w);
	kueue_admit_pods(&w);
	kueue_run_pods(&w);
	fx_step(&w);
	/* Being deleted but still running: Kueue must see it end first. */
	mark_deleting(fx_pod_named(&w, "mnist-worker-1"));
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_RELEASE_POD), 0);
	/* Settled: released, by uid and the entry's index. */
	fx_pod_phase(fx_pod_named(&w, "mnist-worker-1"), "Failed");
	TFJ_CHECK_INT(fx_plan(&w), 0);
	a = fx_action(&w.plan, TFJ_ACT_RELEASE_POD, "mnist-worker-1");
	TFJ_CHECK(a != NULL);
	TFJ_CHECK(a && a->index == 1);
	TFJ_CHECK_STR(a ? a->uid : "",
		      cJSON_GetObjectItem(cJSON_GetObjectItem(fx_pod_named(&w, "mnist-worker-1"),
							      "metadata"), "uid")->valuestring);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_RELEASE_POD), 1);
	/* Without the flag the operator leaves Kueue's finalizer alone. */
	w.cfg.kueue_pod_groups = 0;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_RELEASE_POD), 0);
	w.cfg.kueue_pod_groups = 1;
	/* The job is being deleted: its pods still must not stay stuck. */
	cJSON_AddStringToObject(cJSON_GetObjectItem(w.job, "metadata"), "deletionTimestamp",
				"2023-11-14T22:20:00Z");
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_RELEASE_POD, "mnist-worker-1") != NULL);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 0);
	fx_world_free(&w);
}

static void test_preempted_group_comes_back_gated(void)
{
	struct fx_world w;
	cJSON *j = queued_job("team-a", 0);
	size_t i;

	cJSON_AddNumberToObject(fx_run_policy(j), "backoffLimit", 0);
	fx_world_init(&w, j);
	w.cfg.kueue_pod_groups = 1;
	fx_step(&w);
	kueue_admit_pods(&w);
	kueue_run_pods(&w);
	fx_step(&w);
	/* Kueue preempts: TerminationTarget, delete; the trainers die of the SIGTERM. */
	for (i = 0; i < w.npods; i++) {
		cJSON *c = cJSON_CreateObject();

		cJSON_AddStringToObject(c, "type", "TerminationTarget");
		cJSON_AddStringToObject(c, "status", "True");
		cJSON_AddStringToObject(c, "reason", "Preempted");
		cJSON_AddItemToArray(cJSON_AddArrayToObject(cJSON_GetObjectItem(w.pods[i], "status"),
							    "conditions"), c);
		mark_deleting(w.pods[i]);
		fx_pod_phase(w.pods[i], "Failed");
		fx_pod_exit(w.pods[i], "tensorflow", 143, "Error", 0);
	}
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_RELEASE_POD), 3);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	/* Released: the API server removes them; the job makes them again. */
	while (w.npods)
		fx_remove(w.pods, &w.npods, 0);
	fx_step(&w);
	TFJ_CHECK_INT(w.npods, 3);
	kueue_admit_pods(&w);
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	TFJ_CHECK_STR(fx_status_str(&w, "startTime"), "");
	TFJ_CHECK(fx_rs(&w, "Worker", "restarts") <= 0);
	TFJ_CHECK_STR(label(fx_pod_named(&w, "mnist-worker-0"), TFJ_KUEUE_LABEL_GROUP),
		      "mnist-0f6c1d2e");
	fx_world_free(&w);
}

/* Kueue's TFJob integration, a key spelled "worker": a Warning when the job is first suspended. */
static void test_replica_key_case_warned(void)
{
	static const char *const keys[3] = { "worker", "Worker", "worker" };
	static const int labelled[3] = { 1, 1, 0 };
	struct fx_world w;
	cJSON *j;
	int i;

	for (i = 0; i < 3; i++) {
		j = fx_job("mnist");
		if (labelled[i])
			cJSON_AddStringToObject(cJSON_AddObjectToObject(cJSON_GetObjectItem(j, "metadata"),
									"labels"), TFJ_KUEUE_LABEL_QUEUE, "lq");
		fx_replica(j, keys[i], 2, NULL);
		cJSON_AddTrueToObject(fx_run_policy(j), "suspend");
		fx_world_init(&w, j);
		TFJ_CHECK_INT(fx_plan(&w), 0);
		TFJ_CHECK_INT(fx_event(&w.plan, "KueueReplicaTypeCase") != NULL, i == 0);
		fx_apply(&w);
		TFJ_CHECK_INT(fx_plan(&w), 0); /* said once */
		TFJ_CHECK(fx_event(&w.plan, "KueueReplicaTypeCase") == NULL);
		fx_world_free(&w);
	}
}

int main(void)
{
	TFJ_RUN(test_pods_carry_group_marks);
	TFJ_RUN(test_bad_queue_annotation_fails);
	TFJ_RUN(test_gated_group_stops_the_deadline);
	TFJ_RUN(test_release_settled_pods);
	TFJ_RUN(test_preempted_group_comes_back_gated);
	TFJ_RUN(test_replica_key_case_warned);
	return tfj_test_finish();
}
