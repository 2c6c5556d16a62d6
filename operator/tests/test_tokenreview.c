/*
 * test_tokenreview.c - reading TokenReview results and the authorization
 * decision for a report: the token's pod against the pod the report names
 * and the job/replica that pod belongs to.
 */
#include <stdio.h>
#include <string.h>

#include <tfj/json.h>
#include <tfj_test.h>

#include "tfjob/podspec.h"
#include "report/tokenreview.h"

static cJSON *parse(const char *s)
{
	cJSON *j = NULL;

	TFJ_CHECK_INT(tfj_json_parse(&j, s, strlen(s), 1 << 20), 0);
	return j;
}

/* A TokenReview response as kube-apiserver writes it for a pod-bound token. */
static cJSON *review(const char *ns, const char *pod, const char *uid, const char *aud)
{
	char buf[2048];

	snprintf(buf, sizeof(buf),
		 "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\","
		 "\"status\":{\"authenticated\":true,\"audiences\":[\"%s\"],"
		 "\"user\":{\"username\":\"system:serviceaccount:%s:default\",\"uid\":\"sa-uid\","
		 "\"groups\":[\"system:serviceaccounts\"],\"extra\":{"
		 "\"authentication.kubernetes.io/credential-id\":[\"JTI=x\"],"
		 "\"authentication.kubernetes.io/pod-name\":[\"%s\"],"
		 "\"authentication.kubernetes.io/pod-uid\":[\"%s\"]}}}}",
		 aud, ns, pod, uid);
	return parse(buf);
}

static cJSON *pod(const char *ns, const char *name, const char *uid, const char *job,
		  const char *type, const char *idx, const char *owner_uid)
{
	char buf[2048];

	snprintf(buf, sizeof(buf),
		 "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":\"%s\","
		 "\"labels\":{\"" TFJ_LABEL_JOB_NAME "\":\"%s\",\"" TFJ_LABEL_REPLICA_TYPE "\":\"%s\","
		 "\"" TFJ_LABEL_REPLICA_INDEX "\":\"%s\"},"
		 "\"ownerReferences\":[{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
		 "\"name\":\"%s\",\"uid\":\"%s\",\"controller\":true}]}}",
		 name, ns, uid, job, type, idx, job, owner_uid);
	return parse(buf);
}

static struct tfj_reportmsg_ref ref(void)
{
	struct tfj_reportmsg_ref r;

	memset(&r, 0, sizeof(r));
	strcpy(r.ns, "team-a");
	strcpy(r.job, "mnist");
	strcpy(r.job_uid, "job-1");
	r.type = TFJ_RT_WORKER;
	r.index = 1;
	strcpy(r.pod, "mnist-worker-1");
	return r;
}

static void test_parse(void)
{
	struct tfj_tokenreview tr;
	cJSON *j = review("team-a", "mnist-worker-1", "pod-1", "tfjob-report");

	TFJ_CHECK_INT(tfj_tokenreview_parse(&tr, j, "tfjob-report"), 0);
	TFJ_CHECK_INT(tr.authenticated, 1);
	TFJ_CHECK_STR(tr.ns, "team-a");
	TFJ_CHECK_STR(tr.sa, "default");
	TFJ_CHECK_STR(tr.pod, "mnist-worker-1");
	TFJ_CHECK_STR(tr.pod_uid, "pod-1");
	/* The audience we asked for must be confirmed. */
	TFJ_CHECK_INT(tfj_tokenreview_parse(&tr, j, "other"), 0);
	TFJ_CHECK_INT(tr.authenticated, 0);
	cJSON_Delete(j);

	j = parse("{\"status\":{\"authenticated\":false,\"error\":\"invalid bearer token\"}}");
	TFJ_CHECK_INT(tfj_tokenreview_parse(&tr, j, "tfjob-report"), 0);
	TFJ_CHECK_INT(tr.authenticated, 0);
	cJSON_Delete(j);
	j = parse("{\"status\":{}}");
	TFJ_CHECK_INT(tfj_tokenreview_parse(&tr, j, NULL), 0);
	TFJ_CHECK_INT(tr.authenticated, 0);
	cJSON_Delete(j);

	/* Malformed answers are errors, not identities. */
	j = parse("{\"status\":{\"authenticated\":true,\"user\":{\"username\":7}}}");
	TFJ_CHECK_LT(tfj_tokenreview_parse(&tr, j, NULL), 0);
	TFJ_CHECK_INT(tr.authenticated, 0);
	cJSON_Delete(j);
	j = parse("{\"status\":{\"authenticated\":true,\"user\":{\"username\":"
		  "\"system:serviceaccount:nocolon\"}}}");
	TFJ_CHECK_LT(tfj_tokenreview_parse(&tr, j, NULL), 0);
	cJSON_Delete(j);
	j = parse("{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"alice\","
		  "\"extra\":{\"authentication.kubernetes.io/pod-name\":\"notarray\"}}}}");
	TFJ_CHECK_LT(tfj_tokenreview_parse(&tr, j, NULL), 0);
	cJSON_Delete(j);
	j = parse("[]");
	TFJ_CHECK_LT(tfj_tokenreview_parse(&tr, j, NULL), 0);
	cJSON_Delete(j);
}

static void test_authorize(void)
{
	struct tfj_reportmsg_ref r = ref();
	struct tfj_tokenreview tr;
	cJSON *rv = review("team-a", "mnist-worker-1", "pod-1", "tfjob-report");
	cJSON *p = pod("team-a", "mnist-worker-1", "pod-1", "mnist", "worker", "1", "job-1");
	cJSON *q;

	TFJ_CHECK_INT(tfj_tokenreview_parse(&tr, rv, "tfjob-report"), 0);
	TFJ_CHECK_INT(tfj_tokenreview_authorize(&tr, p, &r), TFJ_AUTHZ_OK);

	/* Not authenticated at all. */
	{
		struct tfj_tokenreview none;

		memset(&none, 0, sizeof(none));
		TFJ_CHECK_INT(tfj_tokenreview_authorize(&none, p, &r), TFJ_AUTHZ_INVALID_TOKEN);
		TFJ_CHECK_INT(tfj_tokenreview_authorize(NULL, p, &r), TFJ_AUTHZ_INVALID_TOKEN);
	}
	/* A token of another pod of the same job claims to be worker 1. */
	r.index = 0;
	strcpy(r.pod, "mnist-worker-0");
	TFJ_CHECK_INT(tfj_tokenreview_authorize(&tr, p, &r), TFJ_AUTHZ_POD_MISMATCH);
	r = ref();
	/* Same pod name in another namespace. */
	strcpy(r.ns, "team-b");
	TFJ_CHECK_INT(tfj_tokenreview_authorize(&tr, p, &r), TFJ_AUTHZ_POD_MISMATCH);
	r = ref();
	/* The pod is not (or no longer) in the cache. */
	TFJ_CHECK_INT(tfj_tokenreview_authorize(&tr, NULL, &r), TFJ_AUTHZ_POD_UNKNOWN);
	/* The pod was re-created under the same name: the old token's uid differs. */
	q = pod("team-a", "mnist-worker-1", "pod-2", "mnist", "worker", "1", "job-1");
	TFJ_CHECK_INT(tfj_tokenreview_authorize(&tr, q, &r), TFJ_AUTHZ_POD_MISMATCH);
	cJSON_Delete(q);
	/* The report claims another job, type or index than the pod has. */
	strcpy(r.job, "other");
	TFJ_CHECK_INT(tfj_tokenreview_authorize(&tr, p, &r), TFJ_AUTHZ_WRONG_REPLICA);
	r = ref();
	r.type = TFJ_RT_CHIEF;
	TFJ_CHECK_INT(tfj_tokenreview_authorize(&tr, p, &r), TFJ_AUTHZ_WRONG_REPLICA);
	r = ref();
	r.index = 2;
	TFJ_CHECK_INT(tfj_tokenreview_authorize(&tr, p, &r), TFJ_AUTHZ_WRONG_REPLICA);
	r = ref();
	/* A re-created TFJob of the same name: the owner uid differs. */
	strcpy(r.job_uid, "job-2");
	TFJ_CHECK_INT(tfj_tokenreview_authorize(&tr, p, &r), TFJ_AUTHZ_WRONG_REPLICA);
	r = ref();
	/* A pod with the right labels but not controlled by a TFJob. */
	q = parse("{\"metadata\":{\"name\":\"mnist-worker-1\",\"namespace\":\"team-a\","
		  "\"uid\":\"pod-1\",\"labels\":{\"" TFJ_LABEL_JOB_NAME "\":\"mnist\","
		  "\"" TFJ_LABEL_REPLICA_TYPE "\":\"worker\",\"" TFJ_LABEL_REPLICA_INDEX "\":\"1\"},"
		  "\"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"uid\":\"job-1\","
		  "\"controller\":true}]}}");
	TFJ_CHECK_INT(tfj_tokenreview_authorize(&tr, q, &r), TFJ_AUTHZ_WRONG_REPLICA);
	cJSON_Delete(q);
	cJSON_Delete(rv);

	/* A valid token that is not bound to a pod (kubectl create token without --bound-*). */
	rv = parse("{\"status\":{\"authenticated\":true,\"audiences\":[\"tfjob-report\"],"
		   "\"user\":{\"username\":\"system:serviceaccount:team-a:default\"}}}");
	TFJ_CHECK_INT(tfj_tokenreview_parse(&tr, rv, "tfjob-report"), 0);
	TFJ_CHECK_INT(tr.authenticated, 1);
	TFJ_CHECK_INT(tfj_tokenreview_authorize(&tr, p, &r), TFJ_AUTHZ_NOT_POD_BOUND);
	cJSON_Delete(rv);
	/* A user that is not a service account. */
	rv = parse("{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"alice\"}}}");
	TFJ_CHECK_INT(tfj_tokenreview_parse(&tr, rv, NULL), 0);
	TFJ_CHECK_INT(tfj_tokenreview_authorize(&tr, p, &r), TFJ_AUTHZ_NOT_POD_BOUND);
	cJSON_Delete(rv);
	cJSON_Delete(p);
	TFJ_CHECK_STR(tfj_tokenreview_reason(TFJ_AUTHZ_WRONG_REPLICA), "wrong_replica");
}

int main(void)
{
	TFJ_RUN(test_parse);
	TFJ_RUN(test_authorize);
	return tfj_test_finish();
}
