/*
 * itest_operator.c - the controller (as a library, in this process)
 * against the test bed's real kube-apiserver: apply the CRD, create a
 * TFJob, see its pods, headless services and TF_CONFIG; restart the
 * controller mid-job and see no duplicate or recreated pods; play kubelet
 * (pods Running, then workers Succeeded) and see the job Succeeded with the
 * still-running PS pod cleaned up. Exits 77 when no cluster answers.
 *
 * The pods carry a nodeSelector no node matches, so no real kubelet races
 * the statuses this test writes.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <tfj/err.h>
#include <tfj/log.h>

#include "app/controller.h"
#include "itest_common.h"
#include "kube/kube.h"
#include "tfj_test.h"

static struct tfj_kube *K;
static char NS[64];
static char KC[512];

#define JOB "mnist"
/* Our own managedBy value, so an operator deployed in the cluster (the
 * packaging tests install one) leaves this test's jobs alone. */
#define MANAGER "tfjob.test/itest-operator"

#define JOB_FMT \
	"{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\"," \
	"\"metadata\":{\"name\":\"" JOB "\",\"namespace\":\"%s\"}," \
	"\"spec\":{\"runPolicy\":{\"cleanPodPolicy\":\"Running\",\"managedBy\":\"" MANAGER "\"},\"tfReplicaSpecs\":{" \
	"\"PS\":{\"replicas\":1,\"template\":{\"spec\":{" \
	"\"nodeSelector\":{\"tfjob-itest/no-such-node\":\"true\"}," \
	"\"containers\":[{\"name\":\"tensorflow\",\"image\":\"localhost/tfjob-itest:1\"}]}}}," \
	"\"Worker\":{\"replicas\":2,\"restartPolicy\":\"OnFailure\",\"template\":{\"spec\":{" \
	"\"nodeSelector\":{\"tfjob-itest/no-such-node\":\"true\"}," \
	"\"containers\":[{\"name\":\"tensorflow\",\"image\":\"localhost/tfjob-itest:1\"}]}}}}}}"

static struct tfj_controller *start(void)
{
	struct tfj_controller_opts o = { 0 };
	struct tfj_controller *c = NULL;
	o.namespace = NS;
	o.workers = 2;
	o.manager = MANAGER;
	TFJ_CHECK_INT(tfj_controller_new(&c, K, &o), 0);
	if (c)
		TFJ_CHECK_INT(tfj_controller_start(c, 30000), 0);
	return c;
}

static int have_children(void *ud)
{
	return it_count(K, NS, JOB, "pods") == 3 && it_count(K, NS, JOB, "services") == 3;
}

static int cond_created(void *ud)
{
	return it_job_condition(K, NS, JOB, "Created");
}

static int cond_running(void *ud)
{
	return it_job_condition(K, NS, JOB, "Running");
}

static int cond_succeeded(void *ud)
{
	return it_job_condition(K, NS, JOB, "Succeeded");
}

static int ps_gone(void *ud)
{
	char p[256];
	cJSON *o = NULL;
	int rc;
	snprintf(p, sizeof(p), "/api/v1/namespaces/%s/pods/" JOB "-ps-0", NS);
	rc = tfj_kube_get(K, &o, p);
	if (rc == 0) {
		/* Terminating counts as gone: no kubelet will finish the deletion
		 * quickly for an unscheduled pod, but the API marks it. */
		int del = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"),
					      "deletionTimestamp") != NULL;
		cJSON_Delete(o);
		return del;
	}
	return rc == TFJ_ENOTFOUND;
}

/* "name=uid;" for each pod, sorted by the server's order (by name). */
static void pod_uids(char *out, size_t outlen)
{
	cJSON *l = it_job_pods(K, NS, JOB, "pods"), *p;
	size_t o = 0;
	out[0] = '\0';
	cJSON_ArrayForEach(p, cJSON_GetObjectItem(l, "items")) {
		cJSON *m = cJSON_GetObjectItem(p, "metadata");
		int n = snprintf(out + o, outlen - o, "%s=%s;",
				 cJSON_GetStringValue(cJSON_GetObjectItem(m, "name")),
				 cJSON_GetStringValue(cJSON_GetObjectItem(m, "uid")));
		if (n > 0 && (size_t)n < outlen - o)
			o += (size_t)n;
	}
	cJSON_Delete(l);
}

static void test_job_end_to_end(void)
{
	char path[256], body[4096], before[2048], after[2048];
	struct tfj_controller *c;
	cJSON *job, *pod = NULL, *svc = NULL, *e;
	const char *tfconfig = NULL;

	snprintf(body, sizeof(body), JOB_FMT, NS);
	job = cJSON_Parse(body);
	snprintf(path, sizeof(path), "/apis/kubeflow.org/v1/namespaces/%s/tfjobs", NS);
	TFJ_CHECK_INT(tfj_kube_create(K, NULL, path, job), 0);
	cJSON_Delete(job);

	c = start();
	if (!c)
		return;
	TFJ_CHECK(it_wait(have_children, NULL, 60));
	TFJ_CHECK(it_wait(cond_created, NULL, 30));

	/* TF_CONFIG of worker 1 and the headless service of the PS. */
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/" JOB "-worker-1", NS);
	TFJ_CHECK_INT(tfj_kube_get(K, &pod, path), 0);
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
		cJSON_GetObjectItem(pod, "spec"), "containers"), 0), "env")) {
		const char *n = cJSON_GetStringValue(cJSON_GetObjectItem(e, "name"));
		if (n && !strcmp(n, "TF_CONFIG"))
			tfconfig = cJSON_GetStringValue(cJSON_GetObjectItem(e, "value"));
	}
	TFJ_CHECK(tfconfig != NULL);
	if (tfconfig) {
		char want[128];
		fprintf(stderr, "TF_CONFIG of worker 1: %s\n", tfconfig);
		snprintf(want, sizeof(want), JOB "-ps-0.%s.svc:2222", NS);
		TFJ_CHECK(strstr(tfconfig, want) != NULL);
		TFJ_CHECK(strstr(tfconfig, "\"type\":\"worker\"") != NULL);
		TFJ_CHECK(strstr(tfconfig, "\"index\":1") != NULL);
	}
	cJSON_Delete(pod);
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/services/" JOB "-ps-0", NS);
	TFJ_CHECK_INT(tfj_kube_get(K, &svc, path), 0);
	TFJ_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(svc, "spec"),
								"clusterIP")), "None");
	cJSON_Delete(svc);

	/* Restart mid-job: a new controller with cold caches creates nothing. */
	pod_uids(before, sizeof(before));
	tfj_controller_free(c);
	c = start();
	if (!c)
		return;
	sleep(3);
	pod_uids(after, sizeof(after));
	TFJ_CHECK_STR(after, before);
	TFJ_CHECK_INT(it_count(K, NS, JOB, "pods"), 3);

	/* Kubelet's part: everything runs, then both workers exit 0. */
	TFJ_CHECK_INT(it_pod_phase(K, NS, JOB "-ps-0", "Running", 0), 0);
	TFJ_CHECK_INT(it_pod_phase(K, NS, JOB "-worker-0", "Running", 0), 0);
	TFJ_CHECK_INT(it_pod_phase(K, NS, JOB "-worker-1", "Running", 0), 0);
	TFJ_CHECK(it_wait(cond_running, NULL, 30));
	TFJ_CHECK_INT(it_pod_phase(K, NS, JOB "-worker-1", "Succeeded", 0), 0);
	TFJ_CHECK_INT(it_pod_phase(K, NS, JOB "-worker-0", "Succeeded", 0), 0);
	TFJ_CHECK(it_wait(cond_succeeded, NULL, 30));
	TFJ_CHECK(!it_job_condition(K, NS, JOB, "Failed"));
	/* cleanPodPolicy Running: the PS still running at the end is deleted. */
	TFJ_CHECK(it_wait(ps_gone, NULL, 30));
	{
		struct tfj_buf m = TFJ_BUF_INIT(1 << 20);
		TFJ_CHECK_INT(tfj_controller_metrics(c, &m), 0);
		TFJ_CHECK(strstr(tfj_buf_cstr(&m), "tfjob_operator_jobs_succeeded_total 1\n") != NULL);
		tfj_buf_free(&m);
	}
	/* Every create was announced as a core/v1 Event on the TFJob. */
	TFJ_CHECK_INT(tfj_controller_flush_events(c, 30000), 0);
	{
		cJSON *ev = NULL, *it;
		int creates = 0;
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", NS);
		TFJ_CHECK_INT(tfj_kube_list(K, &ev, path), 0);
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(ev, "items")) {
			const char *r = cJSON_GetStringValue(cJSON_GetObjectItem(it, "reason"));
			const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(
				cJSON_GetObjectItem(it, "involvedObject"), "kind"));
			if (r && kind && !strcmp(r, "SuccessfulCreatePod") && !strcmp(kind, "TFJob"))
				creates++;
		}
		TFJ_CHECK_INT(creates, 3);
		cJSON_Delete(ev);
	}
	tfj_controller_free(c);
}

int main(void)
{
	int rc;

	tfj_log_set_component("itest");
	rc = it_start(&K, KC, sizeof(KC), NS, sizeof(NS), "op");
	if (rc)
		return rc;
	TFJ_RUN(test_job_end_to_end);
	return it_finish(K, NS);
}
