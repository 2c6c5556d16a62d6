/*
 * test_adopt.c - the 409 decision: ours, orphan (adopted), stale (an earlier
 * incarnation or a terminating orphan), foreign; and the adoption patch.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <tfj/err.h>

#include "plan_fixtures.h"
#include "tfjob/adopt.h"
#include "tfj_test.h"

static cJSON *obj(const char *json)
{
	cJSON *o = cJSON_Parse(json);

	TFJ_CHECK_NOT_NULL(o);
	return o;
}

#define REF(kind, name, uid, ctl) \
	"{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"" kind "\",\"name\":\"" name \
	"\",\"uid\":\"" uid "\",\"controller\":" ctl "}"

/* The labels of the pod the job wants, mnist-worker-0. */
#define WANT_LABELS "\"labels\":{\"training.kubeflow.org/job-name\":\"mnist\"," \
	"\"training.kubeflow.org/replica-type\":\"worker\"," \
	"\"training.kubeflow.org/replica-index\":\"0\"}"

static enum tfj_adopt_verdict decide(const struct tfj_tfjob *job, const char *json, char *why,
				     size_t n)
{
	cJSON *o = obj(json), *want = obj("{\"metadata\":{\"name\":\"mnist-worker-0\","
					  WANT_LABELS "}}");
	enum tfj_adopt_verdict v = tfj_adopt_decide(why, n, o, want, job);

	cJSON_Delete(want);
	cJSON_Delete(o);
	return v;
}

static void test_verdicts(void)
{
	struct tfj_tfjob job;
	cJSON *j = fx_job("mnist");
	char why[512];

	fx_replica(j, "Worker", 1, NULL);
	TFJ_CHECK_INT(tfj_tfjob_from_json(&job, j), 0);
	/* ours: the controller reference carries our uid */
	TFJ_CHECK_INT(decide(&job, "{\"metadata\":{\"name\":\"mnist-worker-0\",\"ownerReferences\":["
			     REF("TFJob", "mnist", "job-uid-1", "true") "]}}", why, sizeof(why)),
		      TFJ_ADOPT_OURS);
	/* an orphan with our label (its owner deleted with propagation Orphan,
	 * or its reference removed by hand); a non-controller reference is no
	 * owner */
	TFJ_CHECK_INT(decide(&job, "{\"metadata\":{\"name\":\"mnist-worker-0\",\"uid\":\"p1\","
			     WANT_LABELS ",\"ownerReferences\":["
			     REF("ConfigMap", "x", "u9", "false") "]}}",
			     why, sizeof(why)), TFJ_ADOPT_ORPHAN);
	TFJ_CHECK(strstr(why, "adopting") != NULL);
	/* our job-name but another replica's labels: adopted, the planner would
	 * delete it as excess; not ours to take */
	TFJ_CHECK_INT(decide(&job, "{\"metadata\":{\"name\":\"mnist-worker-0\",\"uid\":\"p1\","
			     "\"labels\":{\"training.kubeflow.org/job-name\":\"mnist\","
			     "\"training.kubeflow.org/replica-type\":\"ps\","
			     "\"training.kubeflow.org/replica-index\":\"0\"}}}",
			     why, sizeof(why)), TFJ_ADOPT_FOREIGN);
	TFJ_CHECK_INT(decide(&job, "{\"metadata\":{\"name\":\"mnist-worker-0\",\"uid\":\"p1\","
			     "\"labels\":{\"training.kubeflow.org/job-name\":\"mnist\"}}}",
			     why, sizeof(why)), TFJ_ADOPT_FOREIGN);
	/* the same orphan being deleted: wait for it */
	TFJ_CHECK_INT(decide(&job, "{\"metadata\":{\"name\":\"mnist-worker-0\",\"uid\":\"p1\","
			     "\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"," WANT_LABELS "}}",
			     why, sizeof(why)), TFJ_ADOPT_STALE);
	/* an earlier TFJob of the same name: the garbage collector's */
	TFJ_CHECK_INT(decide(&job, "{\"metadata\":{\"name\":\"mnist-worker-0\",\"ownerReferences\":["
			     REF("TFJob", "mnist", "old-uid", "true") "]}}", why, sizeof(why)),
		      TFJ_ADOPT_STALE);
	TFJ_CHECK(strstr(why, "old-uid") != NULL);
	/* another controller, even with our label */
	TFJ_CHECK_INT(decide(&job, "{\"metadata\":{\"name\":\"mnist-worker-0\","
			     WANT_LABELS ",\"ownerReferences\":["
			     REF("ReplicaSet", "web", "u2", "true") "]}}",
			     why, sizeof(why)), TFJ_ADOPT_FOREIGN);
	TFJ_CHECK(strstr(why, "ReplicaSet web") != NULL);
	/* a stranger: no controller, not our label (or another job's) */
	TFJ_CHECK_INT(decide(&job, "{\"metadata\":{\"name\":\"mnist-worker-0\"}}", why,
			     sizeof(why)), TFJ_ADOPT_FOREIGN);
	TFJ_CHECK_INT(decide(&job, "{\"metadata\":{\"name\":\"mnist-worker-0\","
			     "\"labels\":{\"training.kubeflow.org/job-name\":\"other\"}}}",
			     why, sizeof(why)), TFJ_ADOPT_FOREIGN);
	/* malformed metadata never crashes and is never adopted */
	TFJ_CHECK_INT(decide(&job, "{\"metadata\":{\"labels\":7,\"ownerReferences\":{}}}", why,
			     sizeof(why)), TFJ_ADOPT_FOREIGN);
	TFJ_CHECK_STR(tfj_adopt_name(TFJ_ADOPT_ORPHAN), "orphan");
	tfj_tfjob_free(&job);
	cJSON_Delete(j);
}

static void test_patch(void)
{
	struct tfj_tfjob job;
	cJSON *j = fx_job("mnist"), *o, *p, *ref;
	char *s = NULL;

	fx_replica(j, "Worker", 1, NULL);
	TFJ_CHECK_INT(tfj_tfjob_from_json(&job, j), 0);
	o = obj("{\"metadata\":{\"name\":\"mnist-worker-0\",\"uid\":\"pod-uid-7\"}}");
	TFJ_CHECK_OK(tfj_adopt_patch(&s, o, &job));
	p = s ? cJSON_Parse(s) : NULL;
	TFJ_CHECK_NOT_NULL(p);
	ref = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "metadata"),
						     "ownerReferences"), 0);
	TFJ_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(ref, "uid")), "job-uid-1");
	TFJ_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(ref, "kind")), "TFJob");
	TFJ_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(ref, "controller")));
	/* the precondition: only this incarnation of the name is adopted */
	TFJ_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "metadata"),
							       "uid")), "pod-uid-7");
	cJSON_Delete(p);
	free(s);
	cJSON_Delete(o);
	o = obj("{\"metadata\":{\"name\":\"mnist-worker-0\"}}");
	TFJ_CHECK_INT(tfj_adopt_patch(&s, o, &job), TFJ_EINVAL);
	TFJ_CHECK_NULL(s);
	cJSON_Delete(o);
	tfj_tfjob_free(&job);
	cJSON_Delete(j);
}

int main(void)
{
	TFJ_RUN(test_verdicts);
	TFJ_RUN(test_patch);
	return tfj_test_finish();
}
