/*
 * test_createfail.c - permanent create failures: which errors count, the
 * capped exponential backoff, and the ReplicaFailure condition the planner
 * writes from the record (set after a few failures, kept while unknown,
 * removed once creates work), round after round with the real planner.
 */
#include <string.h>

#include <tfj/err.h>

#include "plan_fixtures.h"
#include "tfjob/createfail.h"
#include "tfj_test.h"

static void test_permanent_errors(void)
{
	TFJ_CHECK_INT(tfj_createfail_permanent(TFJ_EFORBIDDEN), 1); /* 403: PSA, quota */
	TFJ_CHECK_INT(tfj_createfail_permanent(TFJ_EINVAL), 1);     /* 400/422 */
	TFJ_CHECK_INT(tfj_createfail_permanent(TFJ_ENOTFOUND), 1);  /* 404 */
	TFJ_CHECK_INT(tfj_createfail_permanent(TFJ_EEXIST), 1);     /* foreign name */
	TFJ_CHECK_INT(tfj_createfail_permanent(TFJ_EUNAVAIL), 0);   /* 429/5xx */
	TFJ_CHECK_INT(tfj_createfail_permanent(TFJ_ETIMEOUT), 0);
	TFJ_CHECK_INT(tfj_createfail_permanent(TFJ_ECONFLICT), 0);
	TFJ_CHECK_INT(tfj_createfail_permanent(TFJ_ENOMEM), 0);
}

static void test_backoff_doubles_and_caps(void)
{
	struct tfj_createfail cf;
	int64_t now = 1000000;

	TFJ_CHECK_EQ(tfj_createfail_delay_ms(1), TFJ_CREATEFAIL_BASE_MS);
	TFJ_CHECK_EQ(tfj_createfail_delay_ms(2), 2 * TFJ_CREATEFAIL_BASE_MS);
	TFJ_CHECK_EQ(tfj_createfail_delay_ms(4), 8 * TFJ_CREATEFAIL_BASE_MS);
	TFJ_CHECK_EQ(tfj_createfail_delay_ms(30), TFJ_CREATEFAIL_MAX_MS);
	TFJ_CHECK_EQ(tfj_createfail_delay_ms(2000000000), TFJ_CREATEFAIL_MAX_MS);
	memset(&cf, 0, sizeof(cf));
	TFJ_CHECK_EQ(tfj_createfail_wait_ms(&cf, now), 0);
	TFJ_CHECK_EQ(tfj_createfail_wait_ms(NULL, now), 0);
	tfj_createfail_fail(&cf, "FailedCreatePod", "forbidden", now);
	TFJ_CHECK_EQ(tfj_createfail_wait_ms(&cf, now), TFJ_CREATEFAIL_BASE_MS);
	TFJ_CHECK_EQ(tfj_createfail_wait_ms(&cf, now + 400), TFJ_CREATEFAIL_BASE_MS - 400);
	TFJ_CHECK_EQ(tfj_createfail_wait_ms(&cf, now + TFJ_CREATEFAIL_BASE_MS), 0);
	tfj_createfail_fail(&cf, "FailedCreatePod", "forbidden", now);
	TFJ_CHECK_EQ(tfj_createfail_wait_ms(&cf, now), 2 * TFJ_CREATEFAIL_BASE_MS);
	tfj_createfail_ok(&cf);
	TFJ_CHECK_EQ(cf.failures, 0);
	TFJ_CHECK_EQ(tfj_createfail_wait_ms(&cf, now), 0);
}

static void test_condition_rules(void)
{
	struct tfj_job_status st;
	struct tfj_createfail cf;
	const struct tfj_condition *c = &st.cond[TFJ_COND_REPLICA_FAILURE];
	int i;

	memset(&st, 0, sizeof(st));
	memset(&cf, 0, sizeof(cf));
	TFJ_CHECK_OK(tfj_jobstatus_set(&st, TFJ_COND_CREATED, 1, "TFJobCreated", "m", 10));
	for (i = 1; i < TFJ_CREATEFAIL_VISIBLE_AFTER; i++) {
		tfj_createfail_fail(&cf, "FailedCreatePod", "pods \"a\" is forbidden", 1000);
		TFJ_CHECK_OK(tfj_createfail_condition(&st, &cf, 20));
		TFJ_CHECK_EQ(c->present, 0); /* not yet: one failure may be a fluke */
	}
	tfj_createfail_fail(&cf, "FailedCreatePod", "pods \"a\" is forbidden", 1000);
	TFJ_CHECK_OK(tfj_createfail_condition(&st, &cf, 20));
	TFJ_CHECK_EQ(c->present, 1);
	TFJ_CHECK_EQ(c->status, 1);
	TFJ_CHECK_STR(c->reason, "FailedCreatePod");
	TFJ_CHECK_STR(c->message, "pods \"a\" is forbidden");
	TFJ_CHECK_STR(tfj_jobstatus_phase(&st), "Created"); /* the phase is not touched */
	/* Unknown (NULL) and a fresh count below the threshold keep it. */
	TFJ_CHECK_OK(tfj_createfail_condition(&st, NULL, 30));
	TFJ_CHECK_EQ(c->present, 1);
	tfj_createfail_ok(&cf);
	tfj_createfail_fail(&cf, "FailedCreatePod", "again", 1000);
	TFJ_CHECK_OK(tfj_createfail_condition(&st, &cf, 30));
	TFJ_CHECK_STR(c->message, "pods \"a\" is forbidden");
	tfj_createfail_ok(&cf);
	TFJ_CHECK_OK(tfj_createfail_condition(&st, &cf, 40));
	TFJ_CHECK_EQ(c->present, 0);
	TFJ_CHECK_STR(tfj_jobstatus_cond_name(TFJ_COND_REPLICA_FAILURE), "ReplicaFailure");
}

/* The planner round by round: the condition appears in the status it writes
 * once the record says so, survives a decode, and goes when creates work. */
static void test_planner_writes_condition(void)
{
	struct fx_world w;
	struct tfj_createfail cf;
	cJSON *j = fx_job("psa");
	int i;

	fx_replica(j, "Worker", 1, NULL);
	fx_world_init(&w, j);
	memset(&cf, 0, sizeof(cf));
	w.create_failure = &cf;
	/* First plan: Created, creates; the API server refuses them (nothing applied). */
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 1);
	for (i = 0; i < TFJ_CREATEFAIL_VISIBLE_AFTER; i++)
		tfj_createfail_fail(&cf, "FailedCreatePod",
				    "Error creating pod psa-worker-0: violates PodSecurity", w.now_ms);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_WRITE_STATUS), 1);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 1); /* the planner still wants it */
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "ReplicaFailure"), "True");
	TFJ_CHECK_STR(fx_cond_field(&w, "ReplicaFailure", "reason"), "FailedCreatePod");
	TFJ_CHECK(strstr(fx_cond_field(&w, "ReplicaFailure", "message"), "PodSecurity") != NULL);
	TFJ_CHECK_STR(fx_status_str(&w, "phase"), "Created");
	/* Nothing known (an operator restart): the condition stays through the
	 * next status write. */
	w.create_failure = NULL;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "ReplicaFailure"), "True");
	/* Creates work again: removed. */
	tfj_createfail_ok(&cf);
	w.create_failure = &cf;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "ReplicaFailure"), "");
	fx_world_free(&w);
}

int main(void)
{
	TFJ_RUN(test_permanent_errors);
	TFJ_RUN(test_backoff_doubles_and_caps);
	TFJ_RUN(test_condition_rules);
	TFJ_RUN(test_planner_writes_condition);
	return tfj_test_finish();
}
