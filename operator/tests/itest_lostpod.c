/*
 * itest_lostpod.c - a pod left terminating on a node that never answers
 * (tfjob/planlost.h), against the test bed's real kube-apiserver with the
 * controller in this process (--lost-pod-timeout 2 s):
 *
 *  - the job's worker pod is bound to a node no kubelet serves (the binding
 *    subresource, as the scheduler binds) and deleted with a 3 s grace
 *    period, so it stays terminating as on a lost node;
 *  - the controller force-deletes it no earlier than its grace period plus
 *    the timeout, the API server removes it at once (grace 0 with the uid
 *    precondition), a new pod of the same name comes, a NodeLost event
 *    names the old pod and its node, the job is not Failed
 *    (backoffLimit 0) and no restart is counted.
 *
 * The node is never created: pod GC would remove a pod bound to a missing
 * node after its 40 s quarantine, well after this test's ~6 s. Exits 77
 * when no cluster answers.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tfj/err.h>
#include <tfj/log.h>

#include "app/controller.h"
#include "itest_common.h"
#include "itest_policy_util.h"
#include "kube/kube.h"
#include "tfj_test.h"

#define MANAGER "tfjob.test/itest-lostpod"
#define GRACE_S 3
#define TIMEOUT_S 2

static double mono_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Binds pod `pod` of the namespace to node `node`, as the scheduler does. */
static int bind_pod(struct ip_env *e, const char *pod, const char *node)
{
	char body[512], path[256];
	cJSON *o;
	int rc;

	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"%s\"},"
		 "\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"%s\"}}", pod, node);
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/binding", e->ns, pod);
	o = cJSON_Parse(body);
	rc = o ? tfj_kube_create(K, NULL, path, o) : TFJ_EPARSE;
	cJSON_Delete(o);
	return rc;
}

/* x->pod exists (terminating or not); its uid in x->uid. */
static int pod_exists(void *ud)
{
	struct ip_ctx *x = ud;

	return ip_pod_uid(x->e, x->pod, x->uid, sizeof(x->uid)) == 0;
}

/* The pod of x->pod still has uid `old` and is terminating. */
static int still_terminating(struct ip_ctx *x, const char *old)
{
	char p[512];
	cJSON *o = NULL, *m;
	int yes;

	snprintf(p, sizeof(p), "/api/v1/namespaces/%s/pods/%s", x->e->ns, x->pod);
	if (tfj_kube_get(K, &o, p))
		return 0;
	m = cJSON_GetObjectItem(o, "metadata");
	yes = cJSON_GetObjectItem(m, "deletionTimestamp") &&
	      cJSON_IsString(cJSON_GetObjectItem(m, "uid")) &&
	      !strcmp(cJSON_GetObjectItem(m, "uid")->valuestring, old);
	cJSON_Delete(o);
	return yes;
}

static void test_lost_node_pod_replaced(void)
{
	struct tfj_controller_opts o = { 0 };
	struct ip_env e;
	struct ip_ctx x;
	char node[64], old[64], p[512], part[256];
	double t0, took;
	cJSON *j, *r;

	o.lost_pod_timeout_s = TIMEOUT_S;
	if (ip_setup_opts(&e, "lost", MANAGER, &o))
		goto out;
	snprintf(node, sizeof(node), "tfj-itest-gone-%ld", (long)getpid());
	TFJ_CHECK_INT(ip_create_job(&e, "lost", 0, 1, "Never", "\"backoffLimit\":0,", ""), 0);
	ip_ctx_init(&x, &e, "lost");
	x.pod = "lost-worker-0";
	IP_EXPECT(&x, ip_wait(pod_exists, &x, 30), "worker pod created");
	snprintf(old, sizeof(old), "%s", x.uid);
	TFJ_CHECK_OK(bind_pod(&e, x.pod, node));
	snprintf(p, sizeof(p), "/api/v1/namespaces/%s/pods/%s", e.ns, x.pod);
	t0 = mono_s();
	TFJ_CHECK_OK(tfj_kube_delete_grace(K, p, old, "Background", GRACE_S));
	/* No kubelet confirms: the API server keeps it, terminating. */
	IP_EXPECT(&x, still_terminating(&x, old), "bound pod terminating after a graceful delete");
	snprintf(x.uid, sizeof(x.uid), "%s", old);
	IP_EXPECT(&x, ip_wait(ip_pod_replaced, &x, 30), "pod force-deleted and recreated");
	took = mono_s() - t0;
	fprintf(stderr, "replaced %.1f s after the delete (grace %d s + timeout %d s)\n", took,
		GRACE_S, TIMEOUT_S);
	/* deletionTimestamp has whole seconds: it may be up to 1 s early. */
	TFJ_CHECK(took >= GRACE_S + TIMEOUT_S - 1);
	snprintf(part, sizeof(part), "Force-deleted worker replica 0 (pod lost-worker-0 on node %s, "
		 "uid %s)", node, old);
	IP_EXPECT(&x, ip_event_wait(&e, "lost", "NodeLost", part), "NodeLost event naming the pod");
	j = ip_get_job(&x);
	TFJ_CHECK(j && !ip_find_cond(j, "Failed"));
	r = cJSON_GetObjectItem(ip_replica_status(j, "Worker"), "restarts");
	TFJ_CHECK(!r || (cJSON_IsNumber(r) && r->valuedouble == 0));
	cJSON_Delete(j);
out:
	ip_teardown(&e);
}

int main(void)
{
	tfj_log_set_component("itest");
	if (ip_init())
		return ip_init_rc();
	TFJ_RUN(test_lost_node_pod_replaced);
	return it_finish(K, NULL);
}
