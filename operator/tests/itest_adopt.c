/*
 * itest_adopt.c - a 409 on a child's create against the test bed's real
 * kube-apiserver, with the controller in this process (tfjob/adopt.h):
 *
 *  - an orphan pod with the job's labels and name is adopted: the API server
 *    stores our controller reference on the same pod (same uid, not
 *    recreated) and an AdoptedPod event is posted;
 *  - a foreign pod of that name (no controller, not our label) is never
 *    touched: the TFJob shows ReplicaFailure/NameConflict and a NameConflict
 *    event; once that pod is deleted, our own pod is created and the
 *    condition goes.
 *
 * Exits 77 when no cluster answers. Same setup as itest_policies.c.
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

#define MANAGER "tfjob.test/itest-adopt"

static double mono_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Pod `name` made by hand: `labels` is a JSON object body ("" for none). */
static int make_pod(struct ip_env *e, const char *name, const char *labels, char *uid,
		    size_t uidlen)
{
	char body[1024], path[256];
	cJSON *o, *res = NULL;
	int rc;

	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
		 "\"labels\":{%s}},\"spec\":{\"nodeSelector\":{\"tfjob-itest/no-such-node\":"
		 "\"true\"},\"containers\":[{\"name\":\"tensorflow\","
		 "\"image\":\"localhost/tfjob-itest:1\"}]}}", name, labels);
	o = cJSON_Parse(body);
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", e->ns);
	rc = o ? tfj_kube_create(K, &res, path, o) : TFJ_EPARSE;
	if (!rc)
		snprintf(uid, uidlen, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(
						   cJSON_GetObjectItem(res, "metadata"), "uid")));
	cJSON_Delete(o);
	cJSON_Delete(res);
	return rc;
}

/* The uid of x->pod's controller reference copied into out ("" for none). */
static void pod_controller(struct ip_ctx *x, char *out, size_t outlen)
{
	char p[512];
	cJSON *o = NULL, *r;

	out[0] = '\0';
	snprintf(p, sizeof(p), "/api/v1/namespaces/%s/pods/%s", x->e->ns, x->pod);
	if (tfj_kube_get(K, &o, p))
		return;
	cJSON_ArrayForEach(r, cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"),
						  "ownerReferences"))
		if (cJSON_IsTrue(cJSON_GetObjectItem(r, "controller")))
			snprintf(out, outlen, "%s",
				 cJSON_GetStringValue(cJSON_GetObjectItem(r, "uid")));
	cJSON_Delete(o);
}

/* x->pod is controlled by the job (x->uid holds the job's uid). */
static int pod_is_ours(void *ud)
{
	struct ip_ctx *x = ud;
	char ctl[64];

	pod_controller(x, ctl, sizeof(ctl));
	return ctl[0] && !strcmp(ctl, x->uid);
}

static int job_uid(struct ip_ctx *x, char *out, size_t outlen)
{
	cJSON *j = ip_get_job(x);
	const char *u = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "metadata"),
								 "uid"));

	snprintf(out, outlen, "%s", u ? u : "");
	cJSON_Delete(j);
	return u ? 0 : -1;
}

static int no_replica_failure(void *ud)
{
	struct ip_ctx *x = ud;
	cJSON *j = ip_get_job(x);
	int yes = j && !ip_find_cond(j, "ReplicaFailure");

	cJSON_Delete(j);
	return yes;
}

static void test_orphan_adopted(void)
{
	struct ip_env e;
	struct ip_ctx x;
	char orphan_uid[64] = "", now_uid[64] = "";
	double t0;

	if (ip_setup(&e, "orphan", MANAGER))
		goto out;
	TFJ_CHECK_OK(make_pod(&e, "orphan-worker-0",
			      "\"training.kubeflow.org/job-name\":\"orphan\","
			      "\"training.kubeflow.org/replica-type\":\"worker\","
			      "\"training.kubeflow.org/replica-index\":\"0\"", orphan_uid,
			      sizeof(orphan_uid)));
	TFJ_CHECK_INT(ip_create_job(&e, "orphan", 0, 1, "OnFailure", "", ""), 0);
	ip_ctx_init(&x, &e, "orphan");
	x.pod = "orphan-worker-0";
	TFJ_CHECK_OK(job_uid(&x, x.uid, sizeof(x.uid)));
	t0 = mono_s();
	IP_EXPECT(&x, ip_wait(pod_is_ours, &x, 30), "orphan pod adopted");
	fprintf(stderr, "orphan adopted %.1f s after the TFJob was created\n", mono_s() - t0);
	TFJ_CHECK_OK(ip_pod_uid(&e, "orphan-worker-0", now_uid, sizeof(now_uid)));
	TFJ_CHECK_STR(now_uid, orphan_uid); /* the same pod, not a new one */
	IP_EXPECT(&x, ip_event_wait(&e, "orphan", "AdoptedPod", "orphan-worker-0"),
		  "AdoptedPod event");
	x.n = 1;
	IP_EXPECT(&x, ip_live_pods_eq(&x), "one pod");
	IP_EXPECT(&x, no_replica_failure(&x), "no ReplicaFailure");
out:
	ip_teardown(&e);
}

static void test_foreign_name_visible(void)
{
	struct ip_env e;
	struct ip_ctx x;
	char foreign_uid[64] = "", ctl[64], p[256];
	double t0;

	if (ip_setup(&e, "foreign", MANAGER))
		goto out;
	/* A stranger took the name: no controller, not our label. */
	TFJ_CHECK_OK(make_pod(&e, "taken-worker-0", "\"app\":\"someone-else\"", foreign_uid,
			      sizeof(foreign_uid)));
	TFJ_CHECK_INT(ip_create_job(&e, "taken", 0, 1, "OnFailure", "", ""), 0);
	t0 = mono_s();
	ip_ctx_init(&x, &e, "taken");
	x.pod = "taken-worker-0";
	x.type = "ReplicaFailure";
	IP_EXPECT(&x, ip_wait(ip_cond_true, &x, 60), "ReplicaFailure True");
	fprintf(stderr, "NameConflict visible %.1f s after the TFJob was created\n", mono_s() - t0);
	IP_EXPECT(&x, ip_cond_reason_is(&x, "ReplicaFailure", "NameConflict"),
		  "reason NameConflict");
	IP_EXPECT(&x, ip_cond_msg_has(&x, "ReplicaFailure", "taken-worker-0"),
		  "message names the pod");
	IP_EXPECT(&x, ip_event_wait(&e, "taken", "NameConflict", "taken-worker-0"),
		  "NameConflict event");
	pod_controller(&x, ctl, sizeof(ctl));
	TFJ_CHECK_STR(ctl, ""); /* never touched */
	/* The stranger leaves: our own pod comes (after the backoff) and the
	 * condition goes. */
	snprintf(p, sizeof(p), "/api/v1/namespaces/%s/pods/taken-worker-0", e.ns);
	TFJ_CHECK_OK(tfj_kube_delete(K, p, foreign_uid, "Background"));
	t0 = mono_s();
	TFJ_CHECK_OK(job_uid(&x, x.uid, sizeof(x.uid)));
	IP_EXPECT(&x, ip_wait(pod_is_ours, &x, 90), "our pod created after the stranger left");
	IP_EXPECT(&x, ip_wait(no_replica_failure, &x, 30), "ReplicaFailure removed");
	fprintf(stderr, "own pod created and ReplicaFailure removed %.1f s after the stranger "
		"was deleted (the next try after the backoff)\n", mono_s() - t0);
out:
	ip_teardown(&e);
}

int main(void)
{
	tfj_log_set_component("itest");
	if (ip_init())
		return ip_init_rc();
	TFJ_RUN(test_orphan_adopted);
	TFJ_RUN(test_foreign_name_visible);
	return it_finish(K, NULL);
}
