/*
 * itest_lifecycle.c - the lifecycle of a TFJob against the test bed's real
 * kube-apiserver, with the controller in this process:
 * ttlSecondsAfterFinished deletes a finished job, suspend deletes pods but
 * keeps services and resume recreates them with a new startTime, and a
 * disruption (a pod deleted from outside, or evicted) is replaced without
 * counting against backoffLimit. Exits 77 when no cluster answers.
 *
 * Same setup as itest_policies.c (itest_policy_util.h): one namespace and
 * one controller per test, our own managedBy, pods no kubelet will run.
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

#define MANAGER "tfjob.test/itest-lifecycle"

/* ttlSecondsAfterFinished 2: the TFJob itself is deleted after success. */
static void test_ttl(void)
{
	struct ip_env e;
	struct ip_ctx x;
	struct timespec t0, t1;

	if (ip_setup(&e, "ttl", MANAGER))
		goto out;
	TFJ_CHECK_INT(ip_create_job(&e, "ttl", 0, 1, "OnFailure", "\"ttlSecondsAfterFinished\":2,",
				    ""), 0);
	ip_ctx_init(&x, &e, "ttl");
	x.n = 1;
	IP_EXPECT(&x, ip_wait(ip_live_pods_eq, &x, 30), "1 pod");
	TFJ_CHECK_INT(it_pod_phase(K, e.ns, "ttl-worker-0", "Running", 0), 0);
	TFJ_CHECK_INT(it_pod_phase(K, e.ns, "ttl-worker-0", "Succeeded", 0), 0);
	x.type = "Succeeded";
	IP_EXPECT(&x, ip_wait(ip_cond_true, &x, 30), "Succeeded condition");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	IP_EXPECT(&x, !ip_job_gone(&x), "job kept right after it finished");
	IP_EXPECT(&x, ip_wait(ip_job_gone, &x, 15), "job deleted by its TTL");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fprintf(stderr, "ttl 2 s: job deleted %.1f s after Succeeded was seen\n",
		(double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
out:
	ip_teardown(&e);
}

/* suspend: pods deleted, services kept, Suspended and STATE; resume: pods
 * recreated, Suspended False, a new startTime. */
static void test_suspend_resume(void)
{
	struct ip_env e;
	struct ip_ctx x;
	char start1[64], start2[64];

	if (ip_setup(&e, "sus", MANAGER))
		goto out;
	ip_ctx_init(&x, &e, "sus");
	ip_start_job(&x, 1, 1, "OnFailure", "");
	ip_status_str(&x, "startTime", start1, sizeof(start1));
	IP_EXPECT(&x, start1[0] != '\0', "startTime set");
	/* startTime has second resolution: make the resumed one differ. */
	sleep(2);

	TFJ_CHECK_INT(ip_suspend(&x, 1), 0);
	x.type = "Suspended";
	IP_EXPECT(&x, ip_wait(ip_cond_true, &x, 30), "Suspended condition");
	x.n = 0;
	IP_EXPECT(&x, ip_wait(ip_live_pods_eq, &x, 30), "no pods while suspended");
	IP_EXPECT(&x, ip_live(&x, "services") == 2, "both services kept while suspended");
	IP_EXPECT(&x, ip_status_str_is(&x, "phase", "Suspended"), "phase (STATE) Suspended");
	IP_EXPECT(&x, ip_status_str_is(&x, "startTime", NULL), "startTime cleared");
	IP_EXPECT(&x, !ip_cond(&x, "Running"), "not Running while suspended");
	IP_EXPECT(&x, ip_event_wait(&e, "sus", "TFJobSuspended", NULL), "event TFJobSuspended");
	/* Suspended stays suspended: nothing is recreated. */
	sleep(2);
	x.n = 0;
	IP_EXPECT(&x, ip_live_pods_eq(&x), "still no pods");

	TFJ_CHECK_INT(ip_suspend(&x, 0), 0);
	x.type = "Suspended";
	IP_EXPECT(&x, ip_wait(ip_cond_false, &x, 30), "Suspended False after resume");
	x.n = 2;
	IP_EXPECT(&x, ip_wait(ip_live_pods_eq, &x, 30), "pods recreated after resume");
	IP_EXPECT(&x, !ip_status_str_is(&x, "phase", "Suspended"), "phase no longer Suspended");
	ip_status_str(&x, "startTime", start2, sizeof(start2));
	IP_EXPECT(&x, start2[0] != '\0' && strcmp(start2, start1) > 0, "startTime reset on resume");
	IP_EXPECT(&x, ip_event_wait(&e, "sus", "TFJobResumed", NULL), "event TFJobResumed");
	ip_pods_phase(&x, 1, 1, "Running");
	x.type = "Running";
	IP_EXPECT(&x, ip_wait(ip_cond_true, &x, 30), "Running again after resume");
	IP_EXPECT(&x, ip_status_str_is(&x, "phase", "Running"), "phase Running after resume");
	IP_EXPECT(&x, !ip_cond(&x, "Failed") && !ip_cond(&x, "Succeeded"), "not finished");
out:
	ip_teardown(&e);
}

/* Disruptions with backoffLimit 0: one counted restart would fail the job. */
static void test_disruption(void)
{
	struct ip_env e;
	struct ip_ctx x;
	char p[512], uid0[64] = "", uid1[64] = "";

	if (ip_setup(&e, "dis", MANAGER))
		goto out;
	ip_ctx_init(&x, &e, "dis");
	ip_start_job(&x, 0, 2, "OnFailure", "\"backoffLimit\":0,");
	TFJ_CHECK_INT(ip_pod_uid(&e, "dis-worker-0", uid0, sizeof(uid0)), 0);
	TFJ_CHECK_INT(ip_pod_uid(&e, "dis-worker-1", uid1, sizeof(uid1)), 0);

	/* Deleted from outside (a drain, an eviction through the API). */
	snprintf(p, sizeof(p), "/api/v1/namespaces/%s/pods/dis-worker-0", e.ns);
	TFJ_CHECK_INT(tfj_kube_delete(K, p, uid0, "Background"), 0);
	x.pod = "dis-worker-0";
	snprintf(x.uid, sizeof(x.uid), "%s", uid0);
	IP_EXPECT(&x, ip_wait(ip_pod_replaced, &x, 30), "dis-worker-0 recreated after deletion");

	/* Evicted by the kubelet: phase Failed with reason Evicted. */
	{
		char path[512];
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/dis-worker-1/status", e.ns);
		TFJ_CHECK_INT(tfj_kube_patch(K, NULL, path, TFJ_KUBE_PATCH_STRATEGIC,
					     "{\"status\":{\"phase\":\"Failed\",\"reason\":\"Evicted\","
					     "\"message\":\"The node was low on resource: memory.\"}}"),
			      0);
	}
	x.pod = "dis-worker-1";
	snprintf(x.uid, sizeof(x.uid), "%s", uid1);
	IP_EXPECT(&x, ip_wait(ip_pod_replaced, &x, 30), "evicted dis-worker-1 recreated");

	sleep(2);
	IP_EXPECT(&x, !ip_cond(&x, "Failed"), "disruptions do not fail the job (backoffLimit 0)");
	x.rtype = "Worker";
	x.n = 0;
	IP_EXPECT(&x, ip_restarts_eq(&x), "disruptions not counted as restarts");
	x.n = 2;
	IP_EXPECT(&x, ip_live_pods_eq(&x), "2 pods after the replacements");
	/* And the replacements run the job to its end. */
	ip_pods_phase(&x, 0, 2, "Running");
	TFJ_CHECK_INT(it_pod_phase(K, e.ns, "dis-worker-0", "Succeeded", 0), 0);
	x.type = "Succeeded";
	IP_EXPECT(&x, ip_wait(ip_cond_true, &x, 30), "Succeeded after disruptions");
	IP_EXPECT(&x, !ip_cond(&x, "Failed"), "not Failed too");
out:
	ip_teardown(&e);
}

int main(void)
{
	tfj_log_set_component("itest");
	if (ip_init())
		return ip_init_rc();
	TFJ_RUN(test_ttl);
	TFJ_RUN(test_suspend_resume);
	TFJ_RUN(test_disruption);
	return it_finish(K, NULL);
}
