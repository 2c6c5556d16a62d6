/*
 * test_jobstatus.c - conditions, phase, indexes, times and the JSON form.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

#include "tfjob/jobstatus.h"
#include "tfj_test.h"

static void test_time_roundtrip(void)
{
	char buf[32];
	int64_t t;

	TFJ_CHECK_INT(tfj_jobstatus_parse_time(&t, "1970-01-01T00:00:00Z"), 0);
	TFJ_CHECK_INT(t, 0);
	TFJ_CHECK_INT(tfj_jobstatus_parse_time(&t, "2024-02-29T12:34:56Z"), 0);
	TFJ_CHECK_INT(t, 1709210096);
	TFJ_CHECK_INT(tfj_jobstatus_format_time(buf, sizeof(buf), t), 0);
	TFJ_CHECK_STR(buf, "2024-02-29T12:34:56Z");
	TFJ_CHECK_INT(tfj_jobstatus_parse_time(&t, "2024-02-29T14:34:56.123456+02:00"), 0);
	TFJ_CHECK_INT(t, 1709210096);
	TFJ_CHECK(tfj_jobstatus_parse_time(&t, "2024-13-01T00:00:00Z") == TFJ_ERANGE);
	TFJ_CHECK(tfj_jobstatus_parse_time(&t, "2024-01-01 00:00:00Z") == TFJ_EPARSE);
	TFJ_CHECK(tfj_jobstatus_parse_time(&t, "2024-01-01T00:00:00") == TFJ_EPARSE);
	TFJ_CHECK(tfj_jobstatus_parse_time(&t, "2024-01-01T00:00:00.Z") == TFJ_EPARSE);
	TFJ_CHECK(tfj_jobstatus_parse_time(&t, NULL) == TFJ_EPARSE);
	TFJ_CHECK(tfj_jobstatus_format_time(buf, 5, 0) == TFJ_ERANGE);
}

static void test_indexes(void)
{
	struct tfj_replica_status rs;
	char *s = NULL;

	memset(&rs, 0, sizeof(rs));
	TFJ_CHECK_INT(tfj_jobstatus_parse_indexes(&rs, "0,2-4,7", 4096), 0);
	TFJ_CHECK_INT(rs.succeeded, 5);
	TFJ_CHECK(tfj_jobstatus_completed(&rs, 3) && !tfj_jobstatus_completed(&rs, 5));
	tfj_jobstatus_mark_completed(&rs, 5);
	tfj_jobstatus_mark_completed(&rs, 5); /* idempotent */
	TFJ_CHECK_INT(rs.succeeded, 6);
	TFJ_CHECK_INT(tfj_jobstatus_format_indexes(&s, &rs), 0);
	TFJ_CHECK_STR(s, "0,2-5,7");
	free(s);
	tfj_jobstatus_mark_completed(&rs, 4095);
	tfj_jobstatus_mark_completed(&rs, 4096); /* out of range: ignored */
	TFJ_CHECK_INT(tfj_jobstatus_format_indexes(&s, &rs), 0);
	TFJ_CHECK_STR(s, "0,2-5,7,4095");
	free(s);
	TFJ_CHECK(tfj_jobstatus_parse_indexes(&rs, "4-2", 4096) == TFJ_EPARSE);
	TFJ_CHECK(tfj_jobstatus_parse_indexes(&rs, "1,x", 4096) == TFJ_EPARSE);
	TFJ_CHECK(tfj_jobstatus_parse_indexes(&rs, "5000", 4096) == TFJ_ERANGE);
	TFJ_CHECK(tfj_jobstatus_parse_indexes(&rs, "-1", 4096) == TFJ_EPARSE);
	TFJ_CHECK(tfj_jobstatus_parse_indexes(&rs, "", 4096) == 0 && rs.succeeded == 0);
}

static void test_conditions(void)
{
	struct tfj_job_status st;

	memset(&st, 0, sizeof(st));
	TFJ_CHECK_STR(tfj_jobstatus_phase(&st), "");
	TFJ_CHECK_INT(tfj_jobstatus_set(&st, TFJ_COND_CREATED, 1, "TFJobCreated", "c", 100), 0);
	TFJ_CHECK_INT(tfj_jobstatus_set(&st, TFJ_COND_RUNNING, 1, "TFJobRunning", "r", 110), 0);
	TFJ_CHECK_STR(tfj_jobstatus_phase(&st), "Running");
	/* Same values: timestamps stay. */
	TFJ_CHECK_INT(tfj_jobstatus_set(&st, TFJ_COND_RUNNING, 1, "TFJobRunning", "r", 200), 0);
	TFJ_CHECK_INT(st.cond[TFJ_COND_RUNNING].last_transition, 110);
	TFJ_CHECK_INT(st.cond[TFJ_COND_RUNNING].last_update, 110);
	/* Running and Restarting exclude each other. */
	TFJ_CHECK_INT(tfj_jobstatus_set(&st, TFJ_COND_RESTARTING, 1, "TFJobRestarting", "x", 300), 0);
	TFJ_CHECK(!tfj_jobstatus_is(&st, TFJ_COND_RUNNING));
	TFJ_CHECK_STR(tfj_jobstatus_phase(&st), "Restarting");
	TFJ_CHECK_INT(tfj_jobstatus_set(&st, TFJ_COND_RUNNING, 1, "TFJobRunning", "r", 400), 0);
	TFJ_CHECK(!tfj_jobstatus_is(&st, TFJ_COND_RESTARTING));
	TFJ_CHECK_INT(st.cond[TFJ_COND_RUNNING].last_transition, 400);
	/* A job ends once. */
	TFJ_CHECK_INT(tfj_jobstatus_set(&st, TFJ_COND_SUCCEEDED, 1, "TFJobSucceeded", "ok", 500), 0);
	TFJ_CHECK(!tfj_jobstatus_is(&st, TFJ_COND_RUNNING));
	TFJ_CHECK(tfj_jobstatus_finished(&st));
	TFJ_CHECK(tfj_jobstatus_set(&st, TFJ_COND_FAILED, 1, "TFJobFailed", "no", 600) == TFJ_ESTATE);
	TFJ_CHECK(!st.cond[TFJ_COND_FAILED].present);
	TFJ_CHECK_STR(tfj_jobstatus_phase(&st), "Succeeded");
	TFJ_CHECK(tfj_jobstatus_set(&st, TFJ_COND_COUNT, 1, "x", "y", 1) == TFJ_EINVAL);
}

static void test_json_roundtrip(void)
{
	struct tfj_job_status st, back;
	cJSON *a = NULL, *b = NULL;
	char *s;

	memset(&st, 0, sizeof(st));
	tfj_jobstatus_set(&st, TFJ_COND_CREATED, 1, "TFJobCreated", "created", 1700000000);
	tfj_jobstatus_set(&st, TFJ_COND_RUNNING, 1, "TFJobRunning", "running", 1700000100);
	st.rs[3].present = 1;
	st.rs[3].active = 2;
	st.rs[3].restarts = 4;
	st.rs[3].expected = 3;
	tfj_jobstatus_mark_completed(&st.rs[3], 2);
	st.start_time = 1700000000;
	st.observed_generation = 7;
	/* "Training done" is kept with the progress, so it outlives the operator. */
	st.progress.present = 1;
	st.progress.has_step = 1;
	st.progress.step = 900;
	snprintf(st.progress.done_pod, sizeof(st.progress.done_pod), "pod-uid-1");
	TFJ_CHECK_INT(tfj_jobstatus_encode(&a, &st), 0);
	s = cJSON_PrintUnformatted(a);
	TFJ_CHECK(strstr(s, "\"trainingDonePodUID\":\"pod-uid-1\"") != NULL);
	TFJ_CHECK(strstr(s, "\"phase\":\"Running\"") != NULL);
	TFJ_CHECK(strstr(s, "\"replicaSummary\":\"worker 3/3\"") != NULL);
	TFJ_CHECK(strstr(s, "\"completedIndexes\":\"2\"") != NULL);
	TFJ_CHECK(strstr(s, "\"startTime\":\"2023-11-14T22:13:20Z\"") != NULL);
	free(s);
	TFJ_CHECK_INT(tfj_jobstatus_decode(&back, a), 0);
	TFJ_CHECK_STR(back.progress.done_pod, "pod-uid-1");
	back.rs[3].expected = 3; /* not part of the JSON */
	TFJ_CHECK_INT(tfj_jobstatus_encode(&b, &back), 0);
	TFJ_CHECK(cJSON_Compare(a, b, 1));
	cJSON_Delete(a);
	cJSON_Delete(b);
}

static void test_decode_rejects_malformed(void)
{
	struct tfj_job_status st;
	cJSON *j;

	j = cJSON_Parse("{\"conditions\":{}}");
	TFJ_CHECK(tfj_jobstatus_decode(&st, j) == TFJ_ETYPE);
	cJSON_Delete(j);
	j = cJSON_Parse("{\"startTime\":\"yesterday\"}");
	TFJ_CHECK(tfj_jobstatus_decode(&st, j) == TFJ_EPARSE);
	TFJ_CHECK_INT(st.start_time, 0);
	cJSON_Delete(j);
	j = cJSON_Parse("{\"replicaStatuses\":{\"Worker\":{\"restarts\":-1}}}");
	TFJ_CHECK(tfj_jobstatus_decode(&st, j) == TFJ_ERANGE);
	cJSON_Delete(j);
	j = cJSON_Parse("{\"conditions\":[{\"type\":\"Custom\",\"status\":\"True\"}]}");
	TFJ_CHECK_INT(tfj_jobstatus_decode(&st, j), 0); /* foreign condition ignored */
	TFJ_CHECK_STR(tfj_jobstatus_phase(&st), "");
	cJSON_Delete(j);
	TFJ_CHECK_INT(tfj_jobstatus_decode(&st, NULL), 0);
}

int main(void)
{
	TFJ_RUN(test_time_roundtrip);
	TFJ_RUN(test_indexes);
	TFJ_RUN(test_conditions);
	TFJ_RUN(test_json_roundtrip);
	TFJ_RUN(test_decode_rejects_malformed);
	return tfj_test_finish();
}
