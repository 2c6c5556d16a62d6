/*
 * itest_netpol.c - the job's NetworkPolicy kept by the planner, against the
 * test bed's real kube-apiserver with the controller in this process
 * (tfjob/plan.h, tfjob/plannetpol.h):
 *
 *  - the job's tfjob-port is edited: `<job>-training` follows (same object,
 *    patched, the new port in its training rule);
 *  - a stranger's NetworkPolicy holds the name: the job's pods are created
 *    anyway, the TFJob shows NetworkPolicyFailure (reason
 *    FailedCreateNetworkPolicy, the name in the message) and a Warning
 *    event; once the stranger's policy is gone, ours is created and the
 *    condition goes.
 *
 * Exits 77 when no cluster answers. Same setup as itest_policies.c.
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

#define MANAGER "tfjob.test/itest-netpol"

/* GET x->job's NetworkPolicy `<job>-training` (NULL when missing). */
static cJSON *get_policy(struct ip_ctx *x)
{
	char p[512];
	cJSON *o = NULL;

	snprintf(p, sizeof(p), "/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies/%s-training",
		 x->e->ns, x->job);
	return tfj_kube_get(K, &o, p) ? NULL : o;
}

/* The first port of the policy's training rule (-1 when none). */
static int policy_port(struct ip_ctx *x, char *uid, size_t uidlen)
{
	cJSON *o = get_policy(x), *rule, *port;
	int v = -1;

	if (!o)
		return -1;
	rule = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "spec"), "ingress"), 0);
	port = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(rule, "ports"), 0), "port");
	if (cJSON_IsNumber(port))
		v = port->valueint;
	if (uid)
		snprintf(uid, uidlen, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(
						    cJSON_GetObjectItem(o, "metadata"), "uid")));
	cJSON_Delete(o);
	return v;
}

/* The policy's training port is x->n. */
static int port_is(void *ud)
{
	struct ip_ctx *x = ud;

	return policy_port(x, NULL, 0) == x->n;
}

/* The policy exists and is controlled by the job (x->uid). */
static int policy_ours(void *ud)
{
	struct ip_ctx *x = ud;
	cJSON *o = get_policy(x), *r;
	int yes = 0;

	cJSON_ArrayForEach(r, cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"),
						  "ownerReferences"))
		if (cJSON_IsTrue(cJSON_GetObjectItem(r, "controller")) &&
		    !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(r, "uid")) ?
			    cJSON_GetStringValue(cJSON_GetObjectItem(r, "uid")) : "", x->uid))
			yes = 1;
	cJSON_Delete(o);
	return yes;
}

static int no_netpol_failure(void *ud)
{
	struct ip_ctx *x = ud;
	cJSON *j = ip_get_job(x);
	int yes = j && !ip_find_cond(j, "NetworkPolicyFailure");

	cJSON_Delete(j);
	return yes;
}

static void test_port_follows(void)
{
	struct ip_env e;
	struct ip_ctx x;
	char p[512], uid0[64] = "", uid1[64] = "";

	if (ip_setup(&e, "ports", MANAGER))
		goto out;
	ip_ctx_init(&x, &e, "ports");
	TFJ_CHECK_INT(ip_create_job(&e, "ports", 0, 1, "OnFailure", "", ""), 0);
	x.n = 2222;
	IP_EXPECT(&x, ip_wait(port_is, &x, 30), "policy made on the default port");
	TFJ_CHECK_INT(policy_port(&x, uid0, sizeof(uid0)), 2222);
	/* The user moves the training port. */
	snprintf(p, sizeof(p), "/apis/kubeflow.org/v1/namespaces/%s/tfjobs/ports", e.ns);
	TFJ_CHECK_OK(tfj_kube_patch(K, NULL, p, TFJ_KUBE_PATCH_MERGE,
		"{\"spec\":{\"tfReplicaSpecs\":{\"Worker\":{\"template\":{\"spec\":{\"containers\":"
		"[{\"name\":\"tensorflow\",\"image\":\"localhost/tfjob-itest:1\",\"ports\":"
		"[{\"name\":\"tfjob-port\",\"containerPort\":2345}]}]}}}}}}"));
	x.n = 2345;
	IP_EXPECT(&x, ip_wait(port_is, &x, 30), "policy follows the new port");
	TFJ_CHECK_INT(policy_port(&x, uid1, sizeof(uid1)), 2345);
	TFJ_CHECK_STR(uid1, uid0); /* patched, not made again */
	IP_EXPECT(&x, ip_event_wait(&e, "ports", "UpdatedNetworkPolicy", NULL),
		  "UpdatedNetworkPolicy event");
out:
	ip_teardown(&e);
}

static void test_failure_visible(void)
{
	struct ip_env e;
	struct ip_ctx x;
	char p[512];
	cJSON *np;

	if (ip_setup(&e, "npfail", MANAGER))
		goto out;
	/* A stranger's policy (no owner, no label) holds the name. */
	np = cJSON_Parse("{\"apiVersion\":\"networking.k8s.io/v1\",\"kind\":\"NetworkPolicy\","
			 "\"metadata\":{\"name\":\"fenced-training\"},"
			 "\"spec\":{\"podSelector\":{},\"policyTypes\":[\"Ingress\"]}}");
	snprintf(p, sizeof(p), "/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies", e.ns);
	TFJ_CHECK_OK(np ? tfj_kube_create(K, NULL, p, np) : TFJ_EPARSE);
	cJSON_Delete(np);
	ip_ctx_init(&x, &e, "fenced");
	TFJ_CHECK_INT(ip_create_job(&e, "fenced", 0, 1, "OnFailure", "", ""), 0);
	/* The pods do not wait for the policy. */
	x.n = 1;
	IP_EXPECT(&x, ip_wait(ip_live_pods_eq, &x, 30), "the pod created all the same");
	x.type = "NetworkPolicyFailure";
	IP_EXPECT(&x, ip_wait(ip_cond_true, &x, 30), "NetworkPolicyFailure True");
	IP_EXPECT(&x, ip_cond_reason_is(&x, "NetworkPolicyFailure", "FailedCreateNetworkPolicy"),
		  "reason FailedCreateNetworkPolicy");
	IP_EXPECT(&x, ip_cond_msg_has(&x, "NetworkPolicyFailure", "fenced-training"),
		  "message names the policy");
	IP_EXPECT(&x, ip_event_wait(&e, "fenced", "FailedCreateNetworkPolicy", "fenced-training"),
		  "Warning event");
	/* The stranger leaves: ours comes with the next try, the condition goes. */
	snprintf(p, sizeof(p), "/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies/"
		 "fenced-training", e.ns);
	TFJ_CHECK_OK(tfj_kube_delete(K, p, NULL, "Background"));
	{
		cJSON *j = ip_get_job(&x);
		const char *u = cJSON_GetStringValue(cJSON_GetObjectItem(
			cJSON_GetObjectItem(j, "metadata"), "uid"));

		snprintf(x.uid, sizeof(x.uid), "%s", u ? u : "");
		cJSON_Delete(j);
	}
	IP_EXPECT(&x, ip_wait(policy_ours, &x, 90), "our policy created after the stranger left");
	IP_EXPECT(&x, ip_wait(no_netpol_failure, &x, 30), "NetworkPolicyFailure removed");
out:
	ip_teardown(&e);
}

int main(void)
{
	tfj_log_set_component("itest");
	if (ip_init())
		return ip_init_rc();
	TFJ_RUN(test_port_follows);
	TFJ_RUN(test_failure_visible);
	return it_finish(K, NULL);
}
