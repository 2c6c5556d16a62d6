/*
 * test_poison.c - what is noted and written for a TFJob the informer
 * could not decode: the status update (Failed/InvalidSpec, phase, message)
 * and the jobs that are left alone (no readable key, already ended).
 */
#include <stdlib.h>
#include <string.h>

#include <tfj/json.h>

#include "fakeapi.h"
#include "app/poison.h"
#include "tfjob/jobstatus.h"
#include "tfjob/tfjob.h"
#include "tfj_test.h"

static void test_status(void)
{
	struct tfj_job_status st;
	const cJSON *status, *meta;
	const char *s;
	cJSON *doc = NULL;

	TFJ_CHECK_OK(tfj_poison_status(&doc, "t", "p", "41", "TFJob t/p cannot be decoded (depth)",
				       1700000000));
	TFJ_CHECK_NOT_NULL(doc);
	if (!doc)
		return;
	TFJ_CHECK_OK(tfj_json_get_object(&meta, doc, "metadata"));
	TFJ_CHECK_OK(tfj_json_get_string(&s, meta, "resourceVersion"));
	TFJ_CHECK_STR(s, "41");
	TFJ_CHECK_OK(tfj_json_get_string(&s, meta, "namespace"));
	TFJ_CHECK_STR(s, "t");
	TFJ_CHECK_OK(tfj_json_get_string(&s, doc, "kind"));
	TFJ_CHECK_STR(s, "TFJob");
	TFJ_CHECK_OK(tfj_json_get_object(&status, doc, "status"));
	TFJ_CHECK_OK(tfj_jobstatus_decode(&st, status));
	TFJ_CHECK(tfj_jobstatus_is(&st, TFJ_COND_FAILED));
	TFJ_CHECK_STR(st.cond[TFJ_COND_FAILED].reason, "InvalidSpec");
	TFJ_CHECK_STR(st.cond[TFJ_COND_FAILED].message, "TFJob t/p cannot be decoded (depth)");
	TFJ_CHECK_STR(tfj_jobstatus_phase(&st), "Failed");
	TFJ_CHECK_EQ(st.completion_time, 1700000000);
	TFJ_CHECK_OK(tfj_json_get_string(&s, status, "phase"));
	TFJ_CHECK_STR(s, "Failed");
	cJSON_Delete(doc);
}

static void test_note(void)
{
	struct tfj_poison *p = NULL;
	struct tfj_informer_reject r = { "t/p", "depth", "too deep", NULL, 0 };
	const char *running = "{\"metadata\":{\"name\":\"p\",\"uid\":\"u1\"},\"status\":{\"phase\":\"Running\"}}";
	const char *ended = "{\"metadata\":{\"name\":\"p\"},\"status\":{\"phase\":\"Succeeded\"}}";
	int handled = 1;

	TFJ_CHECK_OK(tfj_poison_new(&p, NULL, NULL, NULL));
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

/* Another controller's job is never noted, so nothing is written for it. */
static void test_note_filters_manager(void)
{
	static const char other[] = "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"runPolicy\":"
		"{\"managedBy\":\"example.com/other\"}}}";
	static const char mine[] = "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"runPolicy\":"
		"{\"managedBy\":\"example.com/me\"}}}";
	static const char odd[] = "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"runPolicy\":"
		"{\"managedBy\":{\"a\":1}}}}";
	static const char dflt[] = "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"runPolicy\":"
		"{\"managedBy\":\"" TFJ_TFJOB_MANAGER "\"}}}";
	struct tfj_informer_reject r = { "t/p", "depth", "too deep", other, sizeof(other) - 1 };
	struct tfj_poison *p = NULL, *d = NULL;

	TFJ_CHECK_OK(tfj_poison_new(&p, NULL, NULL, "example.com/me"));
	TFJ_CHECK_OK(tfj_poison_new(&d, NULL, NULL, NULL));
	if (!p || !d)
		goto out;
	TFJ_CHECK_INT(tfj_poison_note(p, &r), 0);
	TFJ_CHECK_INT(tfj_poison_note(d, &r), 0);
	r.text = odd;
	r.len = sizeof(odd) - 1;
	TFJ_CHECK_INT(tfj_poison_note(p, &r), 0);
	r.text = mine;
	r.len = sizeof(mine) - 1;
	TFJ_CHECK_INT(tfj_poison_note(p, &r), 1);
	TFJ_CHECK_INT(tfj_poison_note(d, &r), 0);
	r.text = dflt;
	r.len = sizeof(dflt) - 1;
	TFJ_CHECK_INT(tfj_poison_note(d, &r), 1);
	TFJ_CHECK_INT(tfj_poison_note(p, &r), 0);
out:
	tfj_poison_free(p);
	tfj_poison_free(d);
}

static struct fake F;

/* Against the fake API server: a stale resourceVersion (409) is read again
 * and the status written once; a deleted TFJob counts as done. */
static void test_write(void)
{
	const char *coll = "/apis/kubeflow.org/v1/namespaces/t/tfjobs";
	const char *stale = "{\"metadata\":{\"name\":\"p\",\"uid\":\"u\",\"resourceVersion\":\"1\"}}";
	struct tfj_informer_reject r = { "t/p", "depth", "too deep", stale, 0 };
	struct tfj_kube *k = fake_client(&F, NULL);
	struct tfj_poison *p = NULL;
	cJSON *job = cJSON_Parse("{\"metadata\":{\"name\":\"p\"},\"spec\":{}}"), *got = NULL;
	const cJSON *st = NULL;
	const char *phase = "";
	int handled = 0;

	TFJ_CHECK_NOT_NULL(k);
	if (!k)
		return;
	TFJ_CHECK_OK(tfj_kube_create(k, NULL, coll, job));
	cJSON_Delete(job);
	fake_put_status(&F, "tfjobs", "t", "p", "{\"phase\":\"Running\"}"); /* rv moves on */
	TFJ_CHECK_OK(tfj_poison_new(&p, k, NULL, NULL));
	r.len = strlen(stale);
	TFJ_CHECK_INT(tfj_poison_note(p, &r), 1);
	TFJ_CHECK_OK(tfj_poison_write(p, "t/p", &handled));
	TFJ_CHECK_INT(handled, 1);
	TFJ_CHECK_EQ(tfj_poison_written(p), 1);
	TFJ_CHECK_OK(tfj_kube_get(k, &got, "/apis/kubeflow.org/v1/namespaces/t/tfjobs/p"));
	TFJ_CHECK_OK(tfj_json_get_object(&st, got, "status"));
	TFJ_CHECK_OK(tfj_json_get_string(&phase, st, "phase"));
	TFJ_CHECK_STR(phase, "Failed");
	cJSON_Delete(got);
	/* Written once: the key is no longer noted. */
	TFJ_CHECK_OK(tfj_poison_write(p, "t/p", &handled));
	TFJ_CHECK_INT(handled, 0);
	/* Gone before the write: done, nothing counted. */
	r.key = "t/gone";
	TFJ_CHECK_INT(tfj_poison_note(p, &r), 1);
	TFJ_CHECK_OK(tfj_poison_write(p, "t/gone", &handled));
	TFJ_CHECK_INT(handled, 1);
	TFJ_CHECK_EQ(tfj_poison_written(p), 1);
	tfj_poison_free(p);
	tfj_kube_free(k);
}

int main(void)
{
	int rc;

	TFJ_RUN(test_status);
	TFJ_RUN(test_note);
	TFJ_RUN(test_note_filters_manager);
	rc = fake_start(&F, "tok");
	if (fake_unavailable(&F, rc))
		return tfj_test_finish();
	TFJ_CHECK_INT(rc, 0);
	if (rc == 0)
		TFJ_RUN(test_write);
	fake_stop(&F);
	return tfj_test_finish();
}
