/*
 * test_planprog.c - what the planner does with the report channel: the
 * status progress block and its write rate, hang detection
 * (progressDeadlineSeconds), stopping ps/evaluator once the chief reported
 * success, and the agent's reason in failure messages.
 */
#include "plan_fixtures.h"

static void start(struct fx_world *w)
{
	fx_step(w);
	fx_all_pods(w, "Running");
	fx_step(w);
}

static const char *uid_of(struct fx_world *w, const char *name)
{
	cJSON *p = fx_pod_named(w, name);

	return cJSON_GetObjectItem(cJSON_GetObjectItem(p, "metadata"), "uid")->valuestring;
}

/* The tensorflow container has been running since unix second t. */
static void running_since(cJSON *pod, int64_t t)
{
	cJSON *st = cJSON_GetObjectItem(pod, "status"), *list, *cs, *state, *r;
	char buf[32];

	TFJ_CHECK_INT(tfj_jobstatus_format_time(buf, sizeof(buf), t), 0);
	cJSON_DeleteItemFromObject(st, "containerStatuses");
	list = cJSON_AddArrayToObject(st, "containerStatuses");
	cs = cJSON_CreateObject();
	cJSON_AddItemToArray(list, cs);
	cJSON_AddStringToObject(cs, "name", "tensorflow");
	cJSON_AddNumberToObject(cs, "restartCount", 0);
	state = cJSON_AddObjectToObject(cs, "state");
	r = cJSON_AddObjectToObject(state, "running");
	cJSON_AddStringToObject(r, "startedAt", buf);
}

static cJSON *progress_obj(struct fx_world *w)
{
	return cJSON_GetObjectItem(cJSON_GetObjectItem(w->job, "status"), "progress");
}

static void test_progress_in_status_bounded(void)
{
	struct fx_world w;
	struct tfj_plan_progress p;
	cJSON *j = fx_job("mnist"), *po;
	const struct tfj_action *rq;

	fx_replica(j, "PS", 1, NULL);
	fx_replica(j, "Worker", 2, NULL);
	fx_world_init(&w, j);
	start(&w);
	TFJ_CHECK(progress_obj(&w) == NULL);

	memset(&p, 0, sizeof(p));
	w.progress = &p;
	/* Channel on, nothing reported yet: nothing to write. */
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(w.plan.n, 0);

	p.has_step = p.has_loss = p.has_accuracy = p.has_eps = 1;
	p.step = 100;
	p.loss = 0.5;
	p.accuracy = 0.8125;
	p.eps = 1000;
	p.report_ms = w.now_ms;
	fx_step(&w);
	TFJ_CHECK_INT(w.status_writes, 3);
	po = progress_obj(&w);
	TFJ_CHECK(po != NULL);
	TFJ_CHECK_INT((int)cJSON_GetObjectItem(po, "globalStep")->valuedouble, 100);
	TFJ_CHECK(cJSON_GetObjectItem(po, "loss")->valuedouble == 0.5);
	TFJ_CHECK(cJSON_GetObjectItem(po, "accuracy")->valuedouble == 0.8125);
	TFJ_CHECK(cJSON_GetObjectItem(po, "examplesPerSecond")->valuedouble == 1000);
	TFJ_CHECK_STR(cJSON_GetObjectItem(po, "lastReportTime")->valuestring,
		      "2023-11-14T22:13:20Z");
	/* Same values again: level-triggered, nothing to write; already durable. */
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(w.plan.n, 0);
	TFJ_CHECK_INT(w.plan.progress_durable, 1);

	/* A newer step one second later: held back, with a timer for later. */
	w.now_ms += 1000;
	p.step = 200;
	p.report_ms = w.now_ms;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_WRITE_STATUS), 0);
	rq = fx_action(&w.plan, TFJ_ACT_REQUEUE, "");
	TFJ_CHECK(rq != NULL);
	TFJ_CHECK(rq && rq->after_ms == 4000);
	/* Held back: the status does not hold the input, nothing may be acked. */
	TFJ_CHECK_INT(w.plan.progress_durable, 0);
	/* When the timer fires, the newest values are written. */
	w.now_ms += 4000;
	fx_step(&w);
	TFJ_CHECK_INT(w.status_writes, 4);
	TFJ_CHECK_INT((int)cJSON_GetObjectItem(progress_obj(&w), "globalStep")->valuedouble, 200);

	/* A decoded status keeps the block (round trip) and the channel going off keeps it. */
	w.progress = NULL;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(w.plan.n, 0);
	fx_world_free(&w);
}

static void test_hang_detection(void)
{
	struct fx_world w;
	struct tfj_plan_progress p;
	struct tfj_plan_replica_report reps[1];
	cJSON *j = fx_job("mnist"), *rp;
	const struct tfj_action *a;
	int64_t t0;

	fx_replica(j, "PS", 1, NULL);
	fx_replica(j, "Worker", 2, "OnFailure");
	rp = fx_run_policy(j);
	cJSON_AddNumberToObject(rp, "progressDeadlineSeconds", 60);
	cJSON_AddNumberToObject(rp, "backoffLimit", 3);
	fx_world_init(&w, j);
	start(&w);
	t0 = w.now_ms / 1000;
	running_since(fx_pod_named(&w, "mnist-ps-0"), t0);
	running_since(fx_pod_named(&w, "mnist-worker-0"), t0);
	running_since(fx_pod_named(&w, "mnist-worker-1"), t0);

	/* The channel is off: never judged, however long. */
	w.now_ms += 3600 * 1000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
	w.now_ms = t0 * 1000;

	memset(&p, 0, sizeof(p));
	memset(reps, 0, sizeof(reps));
	snprintf(reps[0].pod_uid, sizeof(reps[0].pod_uid), "%s", uid_of(&w, "mnist-worker-0"));
	reps[0].type = TFJ_RT_WORKER;
	reps[0].index = 0;
	reps[0].progress_ms = (t0 + 30) * 1000;
	p.replicas = reps;
	p.nreplicas = 1;
	w.progress = &p;

	/*
	 * The operator (re)started reconciling 50 s in: it has seen no
	 * progress before, so nobody is hung at 61 s.
	 */
	p.since_ms = (t0 + 50) * 1000;
	w.now_ms = (t0 + 61) * 1000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
	p.since_ms = t0 * 1000;

	/* 30 s in: nobody is late; the timer is set for worker 1's deadline. */
	w.now_ms = (t0 + 30) * 1000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
	a = fx_action(&w.plan, TFJ_ACT_REQUEUE, "");
	TFJ_CHECK(a && a->after_ms == 31000);

	/* 61 s: worker 1 never progressed; worker 0 did at 30 s; ps is not judged. */
	w.now_ms = (t0 + 61) * 1000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 1);
	a = fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-worker-1");
	TFJ_CHECK(a != NULL);
	TFJ_CHECK(a && a->reason == TFJ_DEL_RESTART);
	a = fx_event(&w.plan, "ReplicaHung");
	TFJ_CHECK(a != NULL);
	TFJ_CHECK(a && strstr(a->ev_message, "worker replica 1 (pod mnist-worker-1) made no progress "
			      "for 61 s (progressDeadlineSeconds 60)") != NULL);
	TFJ_CHECK(fx_event(&w.plan, "TFJobRestarting") != NULL);
	fx_apply(&w);
	/* Counted against backoffLimit like any retryable failure. */
	TFJ_CHECK(fx_rs(&w, "Worker", "restarts") == 1);
	TFJ_CHECK_STR(fx_cond(&w, "Restarting"), "True");
	/* The replacement is created and gets its own clock. */
	fx_step(&w);
	TFJ_CHECK(fx_pod_named(&w, "mnist-worker-1") != NULL);

	/* Hung again and again: backoffLimit ends the job. */
	{
		int round;

		for (round = 0; round < 4 && strcmp(fx_cond(&w, "Failed"), "True"); round++) {
			fx_pod_phase(fx_pod_named(&w, "mnist-worker-1"), "Running");
			running_since(fx_pod_named(&w, "mnist-worker-1"), w.now_ms / 1000);
			w.now_ms += 61 * 1000;
			reps[0].progress_ms = w.now_ms; /* worker 0 keeps going */
			fx_step(&w);
			fx_step(&w);
		}
		TFJ_CHECK_STR(fx_cond(&w, "Failed"), "True");
		TFJ_CHECK_STR(fx_cond_field(&w, "Failed", "reason"), "BackoffLimitExceeded");
	}
	fx_world_free(&w);
}

/*
 * A running job of a chief, `ps` ps, `workers` workers and an evaluator
 * with cleanPodPolicy None; the channel on with one (empty) report in reps.
 */
static void chief_ps_evaluator(struct fx_world *w, struct tfj_plan_progress *p,
			       struct tfj_plan_replica_report *reps, int ps, int workers)
{
	cJSON *j = fx_job("mnist");

	fx_replica(j, "Chief", 1, NULL);
	fx_replica(j, "PS", ps, NULL);
	if (workers)
		fx_replica(j, "Worker", workers, NULL);
	fx_replica(j, "Evaluator", 1, NULL);
	cJSON_AddStringToObject(fx_run_policy(j), "cleanPodPolicy", "None");
	fx_world_init(w, j);
	start(w);
	memset(p, 0, sizeof(*p));
	memset(reps, 0, sizeof(*reps));
	p->replicas = reps;
	p->nreplicas = 1;
	w->progress = p;
}

static void test_chief_done_stops_ps_and_evaluator(void)
{
	struct fx_world w;
	struct tfj_plan_progress p;
	struct tfj_plan_replica_report reps[1];

	chief_ps_evaluator(&w, &p, reps, 2, 1);

	/* A successful Exit from someone else (worker 0 with a chief) changes nothing. */
	snprintf(reps[0].pod_uid, sizeof(reps[0].pod_uid), "%s", uid_of(&w, "mnist-worker-0"));
	reps[0].type = TFJ_RT_WORKER;
	reps[0].exited = 1;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
	/* A failed Exit from the chief changes nothing either. */
	snprintf(reps[0].pod_uid, sizeof(reps[0].pod_uid), "%s", uid_of(&w, "mnist-chief-0"));
	reps[0].type = TFJ_RT_CHIEF;
	reps[0].exit_code = 1;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);

	/* The chief reports success: ps and evaluator are asked to stop, even with None. */
	reps[0].exit_code = 0;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 3);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-ps-0") != NULL);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-ps-1") != NULL);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-evaluator-0") != NULL);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-ps-0")->reason == TFJ_DEL_CLEANUP);
	fx_apply(&w);
	/* They are not recreated, and their stop is not a restart. */
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 0);
	TFJ_CHECK(fx_rs(&w, "PS", "restarts") == 0);
	fx_apply(&w);
	/* Then the chief's pod succeeds and the job with it. */
	fx_pod_phase(fx_pod_named(&w, "mnist-chief-0"), "Succeeded");
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Succeeded"), "True");
	fx_world_free(&w);
}

/*
 * "Training done" outlives the operator: the plan that sees the chief's
 * Exit 0 writes the chief's pod into status.progress.trainingDonePodUID; a
 * restarted operator (an empty progress input) still stops ps/evaluator
 * and does not recreate them. A status naming another pod (an older chief)
 * means nothing.
 */
static void test_training_done_survives_restart(void)
{
	struct fx_world w;
	struct tfj_plan_progress p, empty;
	struct tfj_plan_replica_report reps[1];
	const struct tfj_action *ws;
	cJSON *po;

	chief_ps_evaluator(&w, &p, reps, 1, 0);
	memset(&empty, 0, sizeof(empty));
	snprintf(reps[0].pod_uid, sizeof(reps[0].pod_uid), "%s", uid_of(&w, "mnist-chief-0"));
	reps[0].type = TFJ_RT_CHIEF;
	reps[0].exited = 1;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 2);
	TFJ_CHECK_INT(w.plan.progress_durable, 1);
	ws = fx_action(&w.plan, TFJ_ACT_WRITE_STATUS, "mnist");
	TFJ_CHECK(ws != NULL);
	if (!ws) {
		fx_world_free(&w);
		return;
	}
	/* The operator dies right after the status write, before the deletes. */
	cJSON_DeleteItemFromObject(w.job, "status");
	cJSON_AddItemToObject(w.job, "status", cJSON_Duplicate(ws->body, 1));
	po = progress_obj(&w);
	TFJ_CHECK(po != NULL);
	TFJ_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(po, "trainingDonePodUID")),
		      uid_of(&w, "mnist-chief-0"));
	w.progress = &empty;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 2);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-ps-0") != NULL);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-evaluator-0") != NULL);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_WRITE_STATUS), 0);
	fx_apply(&w);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 0);
	/* Another chief pod than the one that said so: training is not done. */
	cJSON_ReplaceItemInObject(progress_obj(&w), "trainingDonePodUID",
				  cJSON_CreateString("uid-of-an-older-chief"));
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 2);
	/* The channel off: nothing is durable for anyone. */
	w.progress = NULL;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(w.plan.progress_durable, 0);
	fx_world_free(&w);
}

static void test_agent_reason_in_failure(void)
{
	struct fx_world w;
	struct tfj_plan_progress p;
	struct tfj_plan_replica_report reps[1];
	cJSON *j = fx_job("mnist"), *pod, *t;

	fx_replica(j, "Worker", 2, "ExitCode");
	fx_world_init(&w, j);
	start(&w);
	/* The agent's termination message names the real reason. */
	pod = fx_pod_named(&w, "mnist-worker-1");
	fx_pod_phase(pod, "Failed");
	fx_pod_exit(pod, "tensorflow", 2, "Error", 0);
	t = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
		cJSON_GetObjectItem(pod, "status"), "containerStatuses"), 0), "state"), "terminated");
	cJSON_AddStringToObject(t, "message", "{\"reason\":\"InvalidTFConfig\",\"exitCode\":2,"
				"\"retryable\":false,\"message\":\"TF_CONFIG: bad host\\nsee docs\"}");
	/* An Exit report with another reason loses to the termination message. */
	memset(&p, 0, sizeof(p));
	memset(reps, 0, sizeof(reps));
	snprintf(reps[0].pod_uid, sizeof(reps[0].pod_uid), "%s", uid_of(&w, "mnist-worker-1"));
	reps[0].exited = 1;
	reps[0].exit_code = 2;
	snprintf(reps[0].reason, sizeof(reps[0].reason), "Error");
	p.replicas = reps;
	p.nreplicas = 1;
	w.progress = &p;
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "True");
	TFJ_CHECK(strstr(fx_cond_field(&w, "Failed", "message"),
			 "container tensorflow exited with code 2 (InvalidTFConfig): TF_CONFIG: bad "
			 "host; see docs") != NULL);
	fx_world_free(&w);

	/* Without a termination message, the Exit report's reason is used. */
	j = fx_job("mnist");
	fx_replica(j, "Worker", 2, "ExitCode");
	fx_world_init(&w, j);
	start(&w);
	pod = fx_pod_named(&w, "mnist-worker-0");
	fx_pod_phase(pod, "Failed");
	fx_pod_exit(pod, "tensorflow", 3, "Error", 0);
	snprintf(reps[0].pod_uid, sizeof(reps[0].pod_uid), "%s", uid_of(&w, "mnist-worker-0"));
	reps[0].exit_code = 3;
	snprintf(reps[0].reason, sizeof(reps[0].reason), "DataError");
	snprintf(reps[0].message, sizeof(reps[0].message), "cannot read dataset");
	w.progress = &p;
	fx_step(&w);
	TFJ_CHECK(strstr(fx_cond_field(&w, "Failed", "message"),
			 "exited with code 3 (DataError): cannot read dataset") != NULL);
	fx_world_free(&w);
}

int main(void)
{
	TFJ_RUN(test_progress_in_status_bounded);
	TFJ_RUN(test_hang_detection);
	TFJ_RUN(test_chief_done_stops_ps_and_evaluator);
	TFJ_RUN(test_training_done_survives_restart);
	TFJ_RUN(test_agent_reason_in_failure);
	return tfj_test_finish();
}
