/*
 * test_gang.c - gang scheduling through the whole controller against the
 * local HTTPS server: with --gang-scheduler-name the PodGroup is created
 * before any pod and the pods carry the scheduler name and the PodGroup
 * label; without the PodGroup CRD (POST answers 404) no pod is created, the
 * job gets a Warning PodGroupUnavailable and the controller does not retry
 * fast; once the API is served the job starts.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <tfj/err.h>

#include "app/controller.h"
#include "fakeapi.h"
#include "kube/kube.h"
#include "tfj_test.h"

static struct fake F;
static struct tfj_kube *K;

#define PG_PATH "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ml/podgroups"

static void create_job(const char *name)
{
	char buf[1024];
	cJSON *job;

	snprintf(buf, sizeof(buf),
		 "{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
		 "\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"generation\":1},"
		 "\"spec\":{\"runPolicy\":{\"schedulingPolicy\":{\"minAvailable\":2}},"
		 "\"tfReplicaSpecs\":{\"Worker\":{\"replicas\":2,\"template\":{\"spec\":"
		 "{\"containers\":[{\"name\":\"tensorflow\",\"image\":\"localhost/rt:1\","
		 "\"resources\":{\"requests\":{\"cpu\":\"250m\"}}}]}}}}}}",
		 name);
	job = cJSON_Parse(buf);
	TFJ_CHECK_OK(tfj_kube_create(K, NULL, "/apis/kubeflow.org/v1/namespaces/ml/tfjobs", job));
	cJSON_Delete(job);
}

static struct tfj_controller *start_controller(void)
{
	struct tfj_controller_opts o = { 0 };
	struct tfj_controller *c = NULL;

	o.namespace = "ml";
	o.workers = 2;
	o.watch_timeout_s = 5;
	o.gang_scheduler = "scheduler-plugins";
	TFJ_CHECK_OK(tfj_controller_new(&c, K, &o));
	if (c)
		TFJ_CHECK_OK(tfj_controller_start(c, 10000));
	return c;
}

/* The reasons of the events posted so far, space-separated. */
static void event_reasons(char *out, size_t len)
{
	cJSON *list = NULL, *e;
	size_t n = 0;

	out[0] = '\0';
	if (tfj_kube_list(K, &list, "/api/v1/namespaces/ml/events"))
		return;
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(list, "items")) {
		const char *r = cJSON_GetStringValue(cJSON_GetObjectItem(e, "reason"));
		if (r && n < len)
			n += (size_t)snprintf(out + n, len - n, "%s ", r);
	}
	cJSON_Delete(list);
}

static void test_no_crd(void)
{
	struct tfj_controller *c;
	char reasons[2048] = "";
	int attempts, i;

	/* Every POST of a PodGroup answers 404, as without the CRD. */
	fake_inject(&F, 1000, 404, "/podgroups", "POST", NULL);
	create_job("nocrd");
	c = start_controller();
	if (!c)
		return;
	for (i = 0; i < 200 && !strstr(reasons, "PodGroupUnavailable"); i++) {
		tfj_controller_flush_events(c, 1000);
		event_reasons(reasons, sizeof(reasons));
		usleep(20000);
	}
	TFJ_CHECK(strstr(reasons, "PodGroupUnavailable") != NULL);
	sleep(2); /* a fast retry loop would post hundreds of times in this while */
	attempts = 1000 - F.fail_n;
	TFJ_CHECK_GE(attempts, 1);
	TFJ_CHECK_LE(attempts, 3);
	TFJ_CHECK_INT(fake_count(&F, "pods", "ml"), 0);
	TFJ_CHECK_INT(F.posts[0], 0);
	tfj_controller_free(c);
	fake_inject(&F, 0, 0, NULL, NULL, NULL);
}

static void test_podgroup_before_pods(void)
{
	struct tfj_controller *c;
	cJSON *pg = NULL, *pod = NULL;
	char reasons[2048] = "";
	int i;

	create_job("gang");
	c = start_controller();
	if (!c)
		return;
	/* The PodGroup API is served now: this job starts, and so does the one
	 * of test_no_crd (its PodGroup is made on the next reconcile). */
	for (i = 0; i < 300 && fake_count(&F, "pods", "ml") < 4; i++)
		usleep(20000);
	TFJ_CHECK_INT(fake_count(&F, "pods", "ml"), 4);
	TFJ_CHECK_INT(fake_count(&F, "podgroups", "ml"), 2);
	TFJ_CHECK_OK(tfj_kube_get(K, &pg, PG_PATH "/gang"));
	TFJ_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(pg, "apiVersion")),
		      "scheduling.x-k8s.io/v1alpha1");
	TFJ_CHECK_INT(cJSON_GetObjectItem(cJSON_GetObjectItem(pg, "spec"), "minMember")->valueint, 2);
	TFJ_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(
			      cJSON_GetObjectItem(pg, "spec"), "minResources"), "cpu")), "500m");
	TFJ_CHECK_OK(tfj_kube_get(K, &pod, "/api/v1/namespaces/ml/pods/gang-worker-1"));
	TFJ_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"),
							       "schedulerName")), "scheduler-plugins");
	TFJ_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
			      pod, "metadata"), "labels"), "scheduling.x-k8s.io/pod-group")), "gang");
	tfj_controller_flush_events(c, 2000);
	event_reasons(reasons, sizeof(reasons));
	TFJ_CHECK(strstr(reasons, "SuccessfulCreatePodGroup") != NULL);
	cJSON_Delete(pg);
	cJSON_Delete(pod);
	tfj_controller_free(c);
}

int main(void)
{
	int rc = fake_start(&F, "tok");

	if (fake_unavailable(&F, rc))
		return 77;
	TFJ_CHECK_INT(rc, 0);
	K = fake_client(&F, NULL);
	if (rc == 0 && K) {
		TFJ_RUN(test_no_crd);
		TFJ_RUN(test_podgroup_before_pods);
	}
	tfj_kube_free(K);
	fake_stop(&F);
	return tfj_test_finish();
}
