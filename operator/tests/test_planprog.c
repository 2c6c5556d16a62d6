/*
 * test_planprog.c - what the planner does with the report channel: the
 * status progress block and its write rate, hang detection
 * (progressDeadlineSeconds), what training done and success leave to the
 * agents and the bounded fallback for pods without one, and the agent's
 * reason in failure messages.
 */
#include "plan_fixtures.h"
#include "tfjob/planprog.h"

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
	/* Same values again: level-triggered, nothing to write. */
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(w.plan.n, 0);

	/* A newer step one second later: held back, with a timer for later. */
	w.now_ms += 1000;
	p.step = 200;
	p.report_ms = w.now_ms;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_WRITE_STATUS), 0);
	rq = fx_action(&w.plan, TFJ_ACT_REQUEUE, "");
	TFJ_CHECK(rq != NULL);
	TFJ_CHECK(rq && rq->after_ms == 4000);
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
	struct tfj_plan_replica_report reps[2];
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

	/* Worker 0 progressed at 30 s; worker 1 registered at the start, never progressed. */
	memset(&p, 0, sizeof(p));
	memset(reps, 0, sizeof(reps));
	snprintf(reps[0].pod_uid, sizeof(reps[0].pod_uid), "%s", uid_of(&w, "mnist-worker-0"));
	reps[0].type = TFJ_RT_WORKER;
	reps[0].index = 0;
	reps[0].progress_ms = (t0 + 30) * 1000;
	reps[0].heard_ms = (t0 + 30) * 1000;
	snprintf(reps[1].pod_uid, sizeof(reps[1].pod_uid), "%s", uid_of(&w, "mnist-worker-1"));
	reps[1].type = TFJ_RT_WORKER;
	reps[1].index = 1;
	reps[1].progress_ms = t0 * 1000;
	reps[1].heard_ms = t0 * 1000;
	p.replicas = reps;
	p.nreplicas = 2;
	p.since_ms = t0 * 1000;
	w.progress = &p;

	/* 30 s in: nobody is late; the timer is set for worker 1's deadline. */
	w.now_ms = (t0 + 30) * 1000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
	a = fx_action(&w.plan, TFJ_ACT_REQUEUE, "");
	TFJ_CHECK(a && a->after_ms == 31000);

	/*
	 * Missing reports are no evidence: worker 1's agent went silent after
	 * registering (channel down, TokenReviews failing, reports landing on a
	 * standby): an hour later it is still not hung, and no timer spins.
	 */
	w.now_ms = (t0 + 3600) * 1000;
	reps[0].progress_ms = reps[0].heard_ms = w.now_ms - 1000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
	TFJ_CHECK(fx_event(&w.plan, "ReplicaHung") == NULL);
	reps[0].progress_ms = reps[0].heard_ms = (t0 + 30) * 1000;

	/* A heartbeat 59 s after the start repeats the old record: not yet. */
	reps[1].heard_ms = (t0 + 59) * 1000;
	w.now_ms = (t0 + 61) * 1000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);

	/*
	 * The operator (re)started reconciling 50 s in (an operator restart, a
	 * leader failover): heartbeats heard since then do not yet cover a
	 * deadline, so nobody is hung at 101 s.
	 */
	p.since_ms = (t0 + 50) * 1000;
	reps[1].heard_ms = (t0 + 100) * 1000;
	w.now_ms = (t0 + 101) * 1000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
	p.since_ms = t0 * 1000;

	/* 61 s: worker 1's heartbeat of 60 s still repeats its start; worker 0 progressed at
	 * 30 s; ps is not judged. */
	reps[1].heard_ms = (t0 + 60) * 1000;
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

	/* Hung again and again (its agent heartbeating without progress): backoffLimit ends
	 * the job. */
	{
		int round;

		for (round = 0; round < 4 && strcmp(fx_cond(&w, "Failed"), "True"); round++) {
			fx_pod_phase(fx_pod_named(&w, "mnist-worker-1"), "Running");
			running_since(fx_pod_named(&w, "mnist-worker-1"), w.now_ms / 1000);
			snprintf(reps[1].pod_uid, sizeof(reps[1].pod_uid), "%s",
				 uid_of(&w, "mnist-worker-1"));
			reps[1].progress_ms = w.now_ms;
			w.now_ms += 61 * 1000;
			reps[1].heard_ms = w.now_ms;
			reps[0].progress_ms = reps[0].heard_ms = w.now_ms; /* worker 0 keeps going */
			fx_step(&w);
			fx_step(&w);
		}
		TFJ_CHECK_STR(fx_cond(&w, "Failed"), "True");
		TFJ_CHECK_STR(fx_cond_field(&w, "Failed", "reason"), "BackoffLimitExceeded");
	}
	fx_world_free(&w);
}

/*
 * A pod no report ever arrived for (an image without the agent, TokenReviews
 * failing from the start) is never hung, however long it runs, and sets no
 * timer; a pod whose agent reports keeps its timer.
 */
static void test_no_reports_never_hung(void)
{
	struct fx_world w;
	struct tfj_plan_progress p;
	cJSON *j = fx_job("mnist");
	int64_t t0;

	fx_replica(j, "Worker", 1, "OnFailure");
	cJSON_AddNumberToObject(fx_run_policy(j), "progressDeadlineSeconds", 60);
	fx_world_init(&w, j);
	start(&w);
	t0 = w.now_ms / 1000;
	running_since(fx_pod_named(&w, "mnist-worker-0"), t0);
	memset(&p, 0, sizeof(p));
	p.since_ms = t0 * 1000;
	w.progress = &p;
	w.now_ms = (t0 + 7200) * 1000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
	TFJ_CHECK(fx_event(&w.plan, "ReplicaHung") == NULL);
	TFJ_CHECK(fx_action(&w.plan, TFJ_ACT_REQUEUE, "") == NULL);
	fx_world_free(&w);
}

/* A report that pod `name` (type t) is alive, into reps[n]. */
static void reported(struct fx_world *w, struct tfj_plan_replica_report *r, const char *name, int t)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->pod_uid, sizeof(r->pod_uid), "%s", uid_of(w, name));
	r->type = t;
}

/* Starts job j running, with the report channel on: n reports, heard since since_ms. */
static void hear(struct fx_world *w, cJSON *j, struct tfj_plan_progress *p,
		 struct tfj_plan_replica_report *reps, size_t n, int64_t since_ms)
{
	fx_world_init(w, j);
	start(w);
	memset(p, 0, sizeof(*p));
	p->replicas = reps;
	p->nreplicas = n;
	p->since_ms = since_ms;
	w->progress = p;
}

static int deleted(struct fx_world *w, const char *name)
{
	return fx_action(&w->plan, TFJ_ACT_DELETE_POD, name) != NULL;
}

/*
 * Training done (the chief's Exit 0) deletes nothing; once the job has
 * succeeded, the replicas that never end on their own are left to their
 * agents under cleanPodPolicy None, and their pods end Succeeded.
 */
static void test_done_and_success_keep_pods(void)
{
	struct fx_world w;
	struct tfj_plan_progress p;
	struct tfj_plan_replica_report reps[5];
	cJSON *j = fx_job("mnist");
	const char *linger[] = { "mnist-ps-0", "mnist-ps-1", "mnist-worker-0", "mnist-evaluator-0" };
	const struct tfj_action *rq;
	size_t i;

	fx_replica(j, "Chief", 1, NULL);
	fx_replica(j, "PS", 2, NULL);
	fx_replica(j, "Worker", 1, NULL);
	fx_replica(j, "Evaluator", 1, NULL);
	cJSON_AddStringToObject(fx_run_policy(j), "cleanPodPolicy", "None");
	hear(&w, j, &p, reps, 5, FX_T0_MS - 1000 * 1000);
	reported(&w, &reps[0], "mnist-chief-0", TFJ_RT_CHIEF);
	reported(&w, &reps[1], "mnist-ps-0", TFJ_RT_PS);
	reported(&w, &reps[2], "mnist-ps-1", TFJ_RT_PS);
	reported(&w, &reps[3], "mnist-worker-0", TFJ_RT_WORKER);
	reported(&w, &reps[4], "mnist-evaluator-0", TFJ_RT_EVALUATOR);

	/* The chief reports success: nothing is deleted, even a failing ps is not judged. */
	reps[0].exited = 1;
	fx_pod_phase(fx_pod_named(&w, "mnist-ps-1"), "Failed");
	fx_pod_exit(fx_pod_named(&w, "mnist-ps-1"), "tensorflow", 1, "Error", 0);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 0);
	TFJ_CHECK_STR(fx_cond(&w, "Failed"), "");
	fx_apply(&w);
	fx_pod_phase(fx_pod_named(&w, "mnist-ps-1"), "Running");
	/* The chief's pod succeeds: the job too; with None no pod is deleted. */
	fx_pod_phase(fx_pod_named(&w, "mnist-chief-0"), "Succeeded");
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Succeeded"), "True");
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
	/* Every lingering pod has an agent: the bound is 300 s after success. */
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK((rq = fx_action(&w.plan, TFJ_ACT_REQUEUE, "")) != NULL);
	if (rq)
		TFJ_CHECK_INT(rq->after_ms, TFJ_PLANPROG_STOP_MAX_S * 1000);
	w.now_ms += (TFJ_PLANPROG_STOP_GRACE_S + 1) * 1000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
	/* The agents stop them: their pods end Succeeded and stay, the job stays Succeeded. */
	for (i = 0; i < sizeof(linger) / sizeof(linger[0]); i++)
		fx_pod_phase(fx_pod_named(&w, linger[i]), "Succeeded");
	fx_step(&w);
	w.now_ms += 3600 * 1000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(w.plan.n, 0);
	TFJ_CHECK_STR(fx_cond(&w, "Succeeded"), "True");
	TFJ_CHECK_INT(fx_rs(&w, "PS", "active"), 0);
	fx_world_free(&w);
}

/* A running 1 ps + 1 worker job under `policy` whose worker 0 just succeeded. */
static void ps_worker_done(struct fx_world *w, const char *policy,
			   const struct tfj_plan_progress *p)
{
	cJSON *j = fx_job("mnist");

	fx_replica(j, "PS", 1, NULL);
	fx_replica(j, "Worker", 1, NULL);
	cJSON_AddStringToObject(fx_run_policy(j), "cleanPodPolicy", policy);
	fx_world_init(w, j);
	start(w);
	w->progress = p;
	fx_pod_phase(fx_pod_named(w, "mnist-worker-0"), "Succeeded");
}

/*
 * The bounded fallback: a lingering pod no agent reported for is deleted
 * TFJ_PLANPROG_STOP_GRACE_S after success (or after this operator started
 * hearing reports), one with an agent after TFJ_PLANPROG_STOP_MAX_S;
 * restartPolicy Always pods at once; workers without a chief never.
 */
static void test_linger_fallback(void)
{
	struct fx_world w;
	struct tfj_plan_progress p;
	struct tfj_plan_replica_report reps[1];
	cJSON *j = fx_job("mnist");
	const struct tfj_action *rq;

	fx_replica(j, "PS", 2, NULL);
	fx_replica(j, "Worker", 2, NULL);
	fx_replica(j, "Evaluator", 1, "Always");
	cJSON_AddStringToObject(fx_run_policy(j), "cleanPodPolicy", "None");
	/* This operator started hearing reports 30 s after the job's success. */
	hear(&w, j, &p, reps, 1, FX_T0_MS + 30 * 1000);
	reported(&w, &reps[0], "mnist-ps-0", TFJ_RT_PS);
	fx_pod_phase(fx_pod_named(&w, "mnist-worker-0"), "Succeeded");
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_STR(w.plan.phase, "Succeeded");
	/* Always: no agent can complete it, it goes now. */
	TFJ_CHECK(deleted(&w, "mnist-evaluator-0"));
	TFJ_CHECK(!deleted(&w, "mnist-ps-0"));
	TFJ_CHECK(!deleted(&w, "mnist-ps-1"));
	TFJ_CHECK(!deleted(&w, "mnist-worker-1"));
	TFJ_CHECK((rq = fx_action(&w.plan, TFJ_ACT_REQUEUE, "")) != NULL);
	if (rq)
		TFJ_CHECK_INT(rq->after_ms, (31 + TFJ_PLANPROG_STOP_GRACE_S) * 1000);
	fx_apply(&w);
	/* Just before the grace ends: nothing. */
	w.now_ms = FX_T0_MS + (30 + TFJ_PLANPROG_STOP_GRACE_S) * 1000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
	/* After it: ps-1 (no agent) goes; ps-0 has an agent; worker-1 ends on its own. */
	w.now_ms += 1000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 1);
	TFJ_CHECK(deleted(&w, "mnist-ps-1"));
	if (deleted(&w, "mnist-ps-1")) {
		TFJ_CHECK_INT(fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-ps-1")->reason,
			      TFJ_DEL_CLEANUP);
		TFJ_CHECK(strstr(fx_action(&w.plan, TFJ_ACT_DELETE_POD, "mnist-ps-1")->ev_message,
				 "no agent reported") != NULL);
	}
	fx_apply(&w);
	/* The bound for a pod whose agent did not end it. */
	w.now_ms = FX_T0_MS + (31 + TFJ_PLANPROG_STOP_MAX_S) * 1000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 1);
	TFJ_CHECK(deleted(&w, "mnist-ps-0"));
	fx_apply(&w);
	w.now_ms += 3600 * 1000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
	fx_world_free(&w);

	/* Channel off: the same grace, counted from the success. */
	ps_worker_done(&w, "None", NULL);
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Succeeded"), "True");
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
	w.now_ms += TFJ_PLANPROG_STOP_GRACE_S * 1000;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK(deleted(&w, "mnist-ps-0"));
	fx_world_free(&w);

	/* cleanPodPolicy Running deletes the running ps at success, as before. */
	ps_worker_done(&w, "Running", &p);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK(deleted(&w, "mnist-ps-0"));
	TFJ_CHECK(!deleted(&w, "mnist-worker-0"));
	fx_world_free(&w);
}

/*
 * Training done outlives the operator: the chief's Exit 0 is written to
 * status.progress.trainingDonePodUID, and a restarted operator (or a new
 * leader) that never heard the Exit still leaves the ps and evaluator alone:
 * a ps pod that vanished is not recreated. Another chief pod than the one
 * named there does not count.
 */
static void test_training_done_survives_restart(void)
{
	struct fx_world w;
	struct tfj_plan_progress p, empty;
	struct tfj_plan_replica_report reps[1];
	const struct tfj_action *ws;
	cJSON *j = fx_job("mnist"), *po;
	int i;

	fx_replica(j, "Chief", 1, NULL);
	fx_replica(j, "PS", 1, NULL);
	fx_replica(j, "Evaluator", 1, NULL);
	cJSON_AddStringToObject(fx_run_policy(j), "cleanPodPolicy", "None");
	hear(&w, j, &p, reps, 1, FX_T0_MS - 1000 * 1000);
	memset(&empty, 0, sizeof(empty));
	reported(&w, &reps[0], "mnist-chief-0", TFJ_RT_CHIEF);
	reps[0].exited = 1;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
	TFJ_CHECK_INT(w.plan.progress_durable, 1);
	ws = fx_action(&w.plan, TFJ_ACT_WRITE_STATUS, "mnist");
	TFJ_CHECK_NOT_NULL(ws);
	if (!ws) {
		fx_world_free(&w);
		return;
	}
	/* The operator dies right after the status write. */
	cJSON_DeleteItemFromObject(w.job, "status");
	cJSON_AddItemToObject(w.job, "status", cJSON_Duplicate(ws->body, 1));
	po = progress_obj(&w);
	TFJ_CHECK_NOT_NULL(po);
	TFJ_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(po, "trainingDonePodUID")),
		      uid_of(&w, "mnist-chief-0"));
	/* Restarted, nothing heard yet; meanwhile the ps pod is gone. */
	w.progress = &empty;
	i = fx_find(w.pods, w.npods, "mnist-ps-0");
	TFJ_CHECK_GE(i, 0);
	if (i >= 0)
		fx_remove(w.pods, &w.npods, i);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_POD), 0);
	/* Another chief pod than the one that said so: training is not done. */
	cJSON_ReplaceItemInObject(progress_obj(&w), "trainingDonePodUID",
				  cJSON_CreateString("uid-of-an-older-chief"));
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_NOT_NULL(fx_action(&w.plan, TFJ_ACT_CREATE_POD, "mnist-ps-0"));
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

/* The lead pod completed with this termination message (finishedAt = fin). */
static void completed_with(cJSON *pod, const char *termmsg, int64_t fin)
{
	cJSON *t;
	char buf[32];

	fx_pod_phase(pod, "Succeeded");
	fx_pod_exit(pod, "tensorflow", 0, "Completed", 0);
	t = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
		cJSON_GetObjectItem(pod, "status"), "containerStatuses"), 0), "state"), "terminated");
	cJSON_AddStringToObject(t, "message", termmsg);
	TFJ_CHECK_INT(tfj_jobstatus_format_time(buf, sizeof(buf), fin), 0);
	cJSON_AddStringToObject(t, "finishedAt", buf);
}

/*
 * The final record never reached the operator (the channel lost it): the
 * status ends with the lead replica's final figures from its termination
 * message, which kubelet keeps in the pod status.
 */
static void test_final_figures_from_termination_message(void)
{
	static const char *msg = "{\"reason\":\"Completed\",\"exitCode\":0,\"retryable\":false,"
				 "\"lastStep\":20000,\"loss\":6.00689e-07,\"accuracy\":0.8734,"
				 "\"signal\":0}";
	struct fx_world w;
	struct tfj_plan_progress p;
	cJSON *j, *po;
	int off;

	for (off = 0; off < 2; off++) {
		j = fx_job("mnist");
		fx_replica(j, "PS", 1, NULL);
		fx_replica(j, "Worker", 2, NULL);
		fx_world_init(&w, j);
		start(&w);
		memset(&p, 0, sizeof(p));
		/* The last record that got through: step 3999, a loss, no accuracy yet. */
		p.has_step = p.has_loss = p.has_eps = 1;
		p.step = 3999;
		p.loss = 0.25;
		p.eps = 1000;
		p.report_ms = w.now_ms;
		w.progress = &p;
		fx_step(&w);
		TFJ_CHECK_INT((int)cJSON_GetObjectItem(progress_obj(&w), "globalStep")->valuedouble, 3999);
		/* With the channel off the status keeps its block (and gets the fallback). */
		if (off)
			w.progress = NULL;
		w.now_ms += 60000;
		completed_with(fx_pod_named(&w, "mnist-worker-0"), msg, w.now_ms / 1000 - 2);
		fx_step(&w);
		po = progress_obj(&w);
		TFJ_CHECK(po != NULL);
		if (!po)
			break;
		TFJ_CHECK_INT((int)cJSON_GetObjectItem(po, "globalStep")->valuedouble, 20000);
		TFJ_CHECK(cJSON_GetObjectItem(po, "accuracy") &&
			  cJSON_GetObjectItem(po, "accuracy")->valuedouble == 0.8734);
		TFJ_CHECK(cJSON_GetObjectItem(po, "loss") &&
			  cJSON_GetObjectItem(po, "loss")->valuedouble == 6.00689e-07);
		/* Said at the container's end, not when we read it. */
		{
			char want[32];

			TFJ_CHECK_INT(tfj_jobstatus_format_time(want, sizeof(want),
								w.now_ms / 1000 - 2), 0);
			TFJ_CHECK_STR(cJSON_GetObjectItem(po, "lastReportTime")->valuestring, want);
		}
		/* Level-triggered: nothing more to write. */
		TFJ_CHECK_INT(fx_plan(&w), 0);
		TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_WRITE_STATUS), 0);
		fx_world_free(&w);
	}

	/* Reports that got there first (same or later step) are left alone. */
	j = fx_job("mnist");
	fx_replica(j, "Worker", 1, NULL);
	fx_world_init(&w, j);
	start(&w);
	memset(&p, 0, sizeof(p));
	p.has_step = p.has_accuracy = 1;
	p.step = 20000;
	p.accuracy = 0.875;
	p.report_ms = w.now_ms;
	w.progress = &p;
	fx_step(&w);
	w.now_ms += 60000;
	completed_with(fx_pod_named(&w, "mnist-worker-0"), msg, w.now_ms / 1000);
	fx_step(&w);
	po = progress_obj(&w);
	TFJ_CHECK(po && cJSON_GetObjectItem(po, "accuracy")->valuedouble == 0.875);
	fx_world_free(&w);

	/* Only a completed lead pod counts: a failed one's figures are no result. */
	j = fx_job("mnist");
	fx_replica(j, "Worker", 1, "ExitCode");
	fx_world_init(&w, j);
	start(&w);
	completed_with(fx_pod_named(&w, "mnist-worker-0"), msg, w.now_ms / 1000);
	fx_pod_phase(fx_pod_named(&w, "mnist-worker-0"), "Failed");
	fx_step(&w);
	TFJ_CHECK(progress_obj(&w) == NULL);
	fx_world_free(&w);
}

int main(void)
{
	TFJ_RUN(test_progress_in_status_bounded);
	TFJ_RUN(test_hang_detection);
	TFJ_RUN(test_no_reports_never_hung);
	TFJ_RUN(test_done_and_success_keep_pods);
	TFJ_RUN(test_linger_fallback);
	TFJ_RUN(test_training_done_survives_restart);
	TFJ_RUN(test_agent_reason_in_failure);
	TFJ_RUN(test_final_figures_from_termination_message);
	return tfj_test_finish();
}
