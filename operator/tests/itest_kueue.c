/*
 * itest_kueue.c - Kueue's pod-group mode against the test bed's real
 * kube-apiserver, with the controller in this process (--kueue-pod-groups)
 * and Kueue's part played by the test: the pod of a job that names its
 * LocalQueue carries the queue label, the group name and the total count;
 * a pod Kueue stops (its finalizer kueue.x-k8s.io/managed, the condition
 * TerminationTarget, a delete) is released by the operator's JSON patch,
 * goes, and is made again under a new uid, with no failure and no restart
 * counted. Without the release the old pod would stay forever and no
 * replacement could be made (same name). A job deleted in the foreground
 * or the background: its pod, held by Kueue's finalizer, still goes.
 * Exits 77 when no cluster answers.
 *
 * Same setup as itest_lifecycle.c (itest_policy_util.h): one namespace and
 * one controller per test, our own managedBy, pods no kubelet will run.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <tfj/err.h>
#include <tfj/log.h>

#include "app/controller.h"
#include "itest_common.h"
#include "itest_policy_util.h"
#include "kube/kube.h"
#include "tfj_test.h"
#include "tfjob/kueue.h"

#define MANAGER "tfjob.test/itest-kueue"

/* ip_setup with Kueue's pod-group mode on. */
static int setup(struct ip_env *e, const char *tag)
{
	struct tfj_controller_opts o = { 0 };

	memset(e, 0, sizeof(*e));
	snprintf(e->ns, sizeof(e->ns), "tfj-itk-%s-%ld", tag, (long)getpid());
	if (it_create_ns(K, e->ns)) {
		tfj_test_fail(__FILE__, __LINE__, "create namespace %s: %s", e->ns, tfj_err_detail());
		return -1;
	}
	e->ns_made = 1;
	e->manager = MANAGER;
	o.namespace = e->ns;
	o.workers = 2;
	o.manager = MANAGER;
	o.kueue_pod_groups = 1;
	if (tfj_controller_new(&e->c, K, &o) || tfj_controller_start(e->c, 30000)) {
		tfj_test_fail(__FILE__, __LINE__, "controller: %s", tfj_err_detail());
		return -1;
	}
	return 0;
}

static int create_job(struct ip_env *e, const char *name)
{
	char body[2048], path[256];
	cJSON *o;
	int rc;

	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
		 "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\","
		 "\"annotations\":{\"" TFJ_KUEUE_ANN_QUEUE "\":\"lq\"}},"
		 "\"spec\":{\"runPolicy\":{\"backoffLimit\":0,\"managedBy\":\"%s\"},"
		 "\"tfReplicaSpecs\":{\"Worker\":{\"replicas\":1,\"template\":{\"spec\":{"
		 "\"nodeSelector\":{\"tfjob-itest/no-such-node\":\"true\"},"
		 "\"containers\":[{\"name\":\"tensorflow\",\"image\":\"localhost/tfjob-itest:1\"}]}}}}}}",
		 name, e->ns, MANAGER);
	if (!(o = cJSON_Parse(body)))
		return -1;
	snprintf(path, sizeof(path), "/apis/kubeflow.org/v1/namespaces/%s/tfjobs", e->ns);
	rc = tfj_kube_create(K, NULL, path, o);
	cJSON_Delete(o);
	return rc;
}

/* A string at metadata.<map>.<key> of pod, or "". */
static const char *meta_str(const cJSON *pod, const char *map, const char *key)
{
	const cJSON *m = cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "metadata"), map);
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(m, key));

	return v ? v : "";
}

/* What Kueue does to a pod of a group it preempts: finalizer (its webhook's), condition, delete. */
static void kueue_stop(struct ip_env *e, const char *pod, const char *uid)
{
	char p[512];

	snprintf(p, sizeof(p), "/api/v1/namespaces/%s/pods/%s", e->ns, pod);
	TFJ_CHECK_INT(tfj_kube_patch(K, NULL, p, TFJ_KUBE_PATCH_MERGE,
				     "{\"metadata\":{\"finalizers\":[\"" TFJ_KUEUE_FINALIZER "\"]}}"), 0);
	snprintf(p, sizeof(p), "/api/v1/namespaces/%s/pods/%s/status", e->ns, pod);
	TFJ_CHECK_INT(tfj_kube_patch(K, NULL, p, TFJ_KUBE_PATCH_STRATEGIC,
				     "{\"status\":{\"conditions\":[{\"type\":\"TerminationTarget\","
				     "\"status\":\"True\",\"reason\":\"Preempted\"}]}}"), 0);
	snprintf(p, sizeof(p), "/api/v1/namespaces/%s/pods/%s", e->ns, pod);
	TFJ_CHECK_INT(tfj_kube_delete(K, p, uid, "Background"), 0);
}

static void test_pod_group(void)
{
	struct ip_env e;
	struct ip_ctx x;
	char p[512], uid0[64] = "", jobuid[64] = "", group[80];
	cJSON *pod = NULL, *job;

	if (setup(&e, "pg"))
		goto out;
	ip_ctx_init(&x, &e, "kq");
	TFJ_CHECK_INT(create_job(&e, "kq"), 0);
	x.n = 1;
	IP_EXPECT(&x, ip_wait(ip_live_pods_eq, &x, 30), "1 pod");
	job = ip_get_job(&x);
	snprintf(jobuid, sizeof(jobuid), "%s",
		 cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(job, "metadata"), "uid")));
	cJSON_Delete(job);
	snprintf(group, sizeof(group), "kq-%.8s", jobuid);
	snprintf(p, sizeof(p), "/api/v1/namespaces/%s/pods/kq-worker-0", e.ns);
	TFJ_CHECK_INT(tfj_kube_get(K, &pod, p), 0);
	TFJ_CHECK_STR(meta_str(pod, "labels", TFJ_KUEUE_LABEL_QUEUE), "lq");
	TFJ_CHECK_STR(meta_str(pod, "labels", TFJ_KUEUE_LABEL_GROUP), group);
	TFJ_CHECK_STR(meta_str(pod, "annotations", TFJ_KUEUE_ANN_TOTAL), "1");
	cJSON_Delete(pod);

	TFJ_CHECK_INT(ip_pod_uid(&e, "kq-worker-0", uid0, sizeof(uid0)), 0);
	kueue_stop(&e, "kq-worker-0", uid0);
	x.pod = "kq-worker-0";
	snprintf(x.uid, sizeof(x.uid), "%s", uid0);
	IP_EXPECT(&x, ip_wait(ip_pod_replaced, &x, 30),
		  "kq-worker-0 released from Kueue's finalizer and made again");
	IP_EXPECT(&x, !ip_cond(&x, "Failed"), "a pod Kueue stopped does not fail the job");
	x.rtype = "Worker";
	x.n = 0;
	IP_EXPECT(&x, ip_restarts_eq(&x), "no restart counted");
out:
	/* Should the release have failed, no Kueue is there to take the
	 * finalizer off: the namespace would never go. */
	snprintf(p, sizeof(p), "/api/v1/namespaces/%s/pods/kq-worker-0", e.ns);
	if (e.ns_made)
		tfj_kube_patch(K, NULL, p, TFJ_KUBE_PATCH_MERGE, "{\"metadata\":{\"finalizers\":null}}");
	ip_teardown(&e);
}

/* The pod is gone from the API (not only terminating). */
static int pod_absent(void *ud)
{
	struct ip_ctx *x = ud;
	char p[512];
	cJSON *o = NULL;
	int rc;

	snprintf(p, sizeof(p), "/api/v1/namespaces/%s/pods/%s", x->e->ns, x->pod);
	rc = tfj_kube_get(K, &o, p);
	cJSON_Delete(o);
	return rc == TFJ_ENOTFOUND;
}

/*
 * The TFJob deleted, in the foreground (the job waits for its pods) and in
 * the background (the job is gone first): either way the garbage collector's
 * delete of the pod must not hang on Kueue's finalizer.
 */
static void test_job_deleted(void)
{
	static const char *const how[2] = { "Foreground", "Background" };
	struct ip_env e;
	struct ip_ctx x;
	char p[512];

	for (int i = 0; i < 2; i++) {
		if (setup(&e, i ? "bg" : "fg"))
			goto out;
		ip_ctx_init(&x, &e, "kq");
		TFJ_CHECK_INT(create_job(&e, "kq"), 0);
		x.n = 1;
		IP_EXPECT(&x, ip_wait(ip_live_pods_eq, &x, 30), "1 pod");
		snprintf(p, sizeof(p), "/api/v1/namespaces/%s/pods/kq-worker-0", e.ns);
		TFJ_CHECK_INT(tfj_kube_patch(K, NULL, p, TFJ_KUBE_PATCH_MERGE,
					     "{\"metadata\":{\"finalizers\":[\"" TFJ_KUEUE_FINALIZER "\"]}}"),
			      0);
		snprintf(p, sizeof(p), "/apis/kubeflow.org/v1/namespaces/%s/tfjobs/kq", e.ns);
		TFJ_CHECK_INT(tfj_kube_delete(K, p, NULL, how[i]), 0);
		x.pod = "kq-worker-0";
		IP_EXPECT(&x, ip_wait(pod_absent, &x, 30), how[i]);
out:
		snprintf(p, sizeof(p), "/api/v1/namespaces/%s/pods/kq-worker-0", e.ns);
		if (e.ns_made)
			tfj_kube_patch(K, NULL, p, TFJ_KUBE_PATCH_MERGE,
				       "{\"metadata\":{\"finalizers\":null}}");
		ip_teardown(&e);
	}
}

int main(void)
{
	tfj_log_set_component("itest");
	if (ip_init())
		return ip_init_rc();
	TFJ_RUN(test_pod_group);
	TFJ_RUN(test_job_deleted);
	return it_finish(K, NULL);
}
