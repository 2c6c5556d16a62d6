/*
 * test_poison.c - what is noted and written for a TFJob the informer
 * could not decode: the merge patch (Failed/InvalidSpec, phase, message)
 * and the jobs that are left alone (no readable key, already ended).
 */
#include <stdlib.h>
#include <string.h>

#include <tfj/json.h>

#include "app/poison.h"
#include "tfjob/jobstatus.h"
#include "tfj_test.h"

static void test_patch(void)
{
	struct tfj_job_status st;
	const cJSON *status;
	cJSON *root = NULL;
	char *body = NULL;

	TFJ_CHECK_OK(tfj_poison_patch(&body, "TFJob t/p cannot be decoded (depth)", 1700000000));
	TFJ_CHECK_NOT_NULL(body);
	if (!body)
		return;
	TFJ_CHECK_OK(tfj_json_parse(&root, body, strlen(body), 1u << 16));
	TFJ_CHECK_OK(tfj_json_get_object(&status, root, "status"));
	TFJ_CHECK_OK(tfj_jobstatus_decode(&st, status));
	TFJ_CHECK(tfj_jobstatus_is(&st, TFJ_COND_FAILED));
	TFJ_CHECK_STR(st.cond[TFJ_COND_FAILED].reason, "InvalidSpec");
	TFJ_CHECK_STR(st.cond[TFJ_COND_FAILED].message, "TFJob t/p cannot be decoded (depth)");
	TFJ_CHECK_STR(tfj_jobstatus_phase(&st), "Failed");
	TFJ_CHECK_EQ(st.completion_time, 1700000000);
	cJSON_Delete(root);
	free(body);
}

static void test_note(void)
{
	struct tfj_poison *p = NULL;
	struct tfj_informer_reject r = { "t/p", "depth", "too deep", NULL, 0 };
	const char *running = "{\"metadata\":{\"name\":\"p\",\"uid\":\"u1\"},\"status\":{\"phase\":\"Running\"}}";
	const char *ended = "{\"metadata\":{\"name\":\"p\"},\"status\":{\"phase\":\"Succeeded\"}}";
	int handled = 1;

	TFJ_CHECK_OK(tfj_poison_new(&p, NULL, NULL));
	if (!p)
		return;
	r.text = ended;
	r.len = strlen(ended);
	TFJ_CHECK_INT(tfj_poison_note(p, &r), 0);
	r.text = running;
	r.len = strlen(running);
	r.key = NULL;
	TFJ_CHECK_INT(tfj_poison_note(p, &r), 0);
	r.key = "t/p";
	TFJ_CHECK_INT(tfj_poison_note(p, &r), 1);
	/* A key never noted is not handled (no API call is made). */
	TFJ_CHECK_OK(tfj_poison_write(p, "t/other", &handled));
	TFJ_CHECK_INT(handled, 0);
	TFJ_CHECK_EQ(tfj_poison_written(p), 0);
	tfj_poison_free(p);
}

int main(void)
{
	TFJ_RUN(test_patch);
	TFJ_RUN(test_note);
	return tfj_test_finish();
}
