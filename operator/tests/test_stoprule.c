/*
 * test_stoprule.c - which replicas are stopped once a TFJob has succeeded
 * (tfjob/stoprule.h): by type, with and without a chief, by restart
 * policy, and only after success.
 */
#include "plan_fixtures.h"
#include "tfjob/stoprule.h"

/* A job of the given replica types ("Chief", "PS"...), all with `policy`. */
static void decode(struct tfj_tfjob *job, const char *const *types, size_t n, const char *policy,
		   const char *status)
{
	cJSON *j = fx_job("mnist");
	size_t i;

	for (i = 0; i < n; i++)
		fx_replica(j, types[i], 1, policy);
	if (status)
		cJSON_AddItemToObject(j, "status", cJSON_Parse(status));
	TFJ_CHECK_INT(tfj_tfjob_from_json(job, j), 0);
	cJSON_Delete(j);
}

#define SUCCEEDED "{\"conditions\":[{\"type\":\"Succeeded\",\"status\":\"True\"}]}"
#define FAILED "{\"conditions\":[{\"type\":\"Failed\",\"status\":\"True\"}]}"
#define RUNNING "{\"conditions\":[{\"type\":\"Running\",\"status\":\"True\"}]}"

static void test_by_type(void)
{
	static const char *const with_chief[] = { "Chief", "PS", "Worker", "Evaluator" };
	static const char *const with_master[] = { "Master", "PS", "Worker" };
	static const char *const no_chief[] = { "PS", "Worker", "Evaluator" };
	struct tfj_tfjob job;

	decode(&job, with_chief, 4, NULL, SUCCEEDED);
	TFJ_CHECK_INT(tfj_stoprule_of(&job, TFJ_RT_CHIEF), TFJ_STOP_NONE);
	TFJ_CHECK_INT(tfj_stoprule_of(&job, TFJ_RT_PS), TFJ_STOP_AGENT);
	TFJ_CHECK_INT(tfj_stoprule_of(&job, TFJ_RT_WORKER), TFJ_STOP_AGENT);
	TFJ_CHECK_INT(tfj_stoprule_of(&job, TFJ_RT_EVALUATOR), TFJ_STOP_AGENT);
	/* A type the job does not have, or no type at all. */
	TFJ_CHECK_INT(tfj_stoprule_of(&job, TFJ_RT_MASTER), TFJ_STOP_NONE);
	TFJ_CHECK_INT(tfj_stoprule_of(&job, -1), TFJ_STOP_NONE);
	TFJ_CHECK_INT(tfj_stoprule_of(&job, TFJ_RT_COUNT), TFJ_STOP_NONE);
	tfj_tfjob_free(&job);

	/* Master is a chief too. */
	decode(&job, with_master, 3, NULL, SUCCEEDED);
	TFJ_CHECK_INT(tfj_stoprule_of(&job, TFJ_RT_MASTER), TFJ_STOP_NONE);
	TFJ_CHECK_INT(tfj_stoprule_of(&job, TFJ_RT_WORKER), TFJ_STOP_AGENT);
	tfj_tfjob_free(&job);

	/* Without a chief, workers end on their own and worker 0 decides. */
	decode(&job, no_chief, 3, NULL, SUCCEEDED);
	TFJ_CHECK_INT(tfj_stoprule_of(&job, TFJ_RT_PS), TFJ_STOP_AGENT);
	TFJ_CHECK_INT(tfj_stoprule_of(&job, TFJ_RT_WORKER), TFJ_STOP_NONE);
	TFJ_CHECK_INT(tfj_stoprule_of(&job, TFJ_RT_EVALUATOR), TFJ_STOP_AGENT);
	TFJ_CHECK_INT(tfj_stoprule_stop_now(&job, TFJ_RT_WORKER), 0);
	tfj_tfjob_free(&job);
	TFJ_CHECK_INT(tfj_stoprule_of(NULL, TFJ_RT_PS), TFJ_STOP_NONE);
}

/* Pods whose container would be restarted after exit 0 are deleted instead. */
static void test_by_restart_policy(void)
{
	static const char *const types[] = { "Chief", "PS", "Worker", "Evaluator" };
	static const char *const keep[] = { "Never", "OnFailure", "ExitCode" };
	struct tfj_tfjob job;
	size_t i;

	for (i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		decode(&job, types, 4, keep[i], SUCCEEDED);
		TFJ_CHECK_INT(tfj_stoprule_of(&job, TFJ_RT_PS), TFJ_STOP_AGENT);
		TFJ_CHECK_INT(tfj_stoprule_of(&job, TFJ_RT_WORKER), TFJ_STOP_AGENT);
		TFJ_CHECK_INT(tfj_stoprule_stop_now(&job, TFJ_RT_PS), 1);
		tfj_tfjob_free(&job);
	}
	decode(&job, types, 4, "Always", SUCCEEDED);
	TFJ_CHECK_INT(tfj_stoprule_of(&job, TFJ_RT_CHIEF), TFJ_STOP_NONE);
	TFJ_CHECK_INT(tfj_stoprule_of(&job, TFJ_RT_PS), TFJ_STOP_DELETE);
	TFJ_CHECK_INT(tfj_stoprule_of(&job, TFJ_RT_WORKER), TFJ_STOP_DELETE);
	TFJ_CHECK_INT(tfj_stoprule_of(&job, TFJ_RT_EVALUATOR), TFJ_STOP_DELETE);
	/* Their agents are never told to stop: kubelet would start them again. */
	TFJ_CHECK_INT(tfj_stoprule_stop_now(&job, TFJ_RT_PS), 0);
	tfj_tfjob_free(&job);
}

/* The stop goes out only once the job has succeeded. */
static void test_only_after_success(void)
{
	static const char *const types[] = { "Chief", "PS", "Worker" };
	static const char *const states[] = { NULL, RUNNING, FAILED,
		"{\"conditions\":[{\"type\":\"Succeeded\",\"status\":\"False\"}]}",
		"{\"conditions\":[{\"type\":\"Succeeded\",\"status\":\"True\"},"
		"{\"type\":\"Failed\",\"status\":\"True\"}]}" };
	struct tfj_tfjob job;
	size_t i;

	for (i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		decode(&job, types, 3, NULL, states[i]);
		TFJ_CHECK_INT(tfj_stoprule_succeeded(&job), 0);
		TFJ_CHECK_INT(tfj_stoprule_stop_now(&job, TFJ_RT_PS), 0);
		TFJ_CHECK_INT(tfj_stoprule_stop_now(&job, TFJ_RT_WORKER), 0);
		tfj_tfjob_free(&job);
	}
	decode(&job, types, 3, NULL, SUCCEEDED);
	TFJ_CHECK_INT(tfj_stoprule_succeeded(&job), 1);
	TFJ_CHECK_INT(tfj_stoprule_stop_now(&job, TFJ_RT_PS), 1);
	TFJ_CHECK_INT(tfj_stoprule_stop_now(&job, TFJ_RT_WORKER), 1);
	TFJ_CHECK_INT(tfj_stoprule_stop_now(&job, TFJ_RT_CHIEF), 0);
	tfj_tfjob_free(&job);
	TFJ_CHECK_INT(tfj_stoprule_succeeded(NULL), 0);
}

int main(void)
{
	TFJ_RUN(test_by_type);
	TFJ_RUN(test_by_restart_policy);
	TFJ_RUN(test_only_after_success);
	return tfj_test_finish();
}
