/*
 * itest_policies.c - the run policies of a TFJob against the test bed's real
 * kube-apiserver, with the controller in this process: restartPolicy
 * ExitCode (retryable 137 vs permanent 1), OnFailure with backoffLimit and
 * cleanPodPolicy Running, activeDeadlineSeconds fired by the planner's own
 * requeue timer, and the success policies (default vs AllWorkers). The
 * lifecycle policies (TTL, suspend/resume, disruption) are in
 * itest_lifecycle.c. Exits 77 when no cluster answers.
 *
 * Each test gets its own namespace and its own controller watching only
 * that namespace. The TFJobs name our own runPolicy.managedBy so an
 * operator deployed in the cluster leaves them alone; the pods carry a
 * nodeSelector no node matches, so no kubelet races the statuses this test
 * writes as a kubelet would (status subresource).
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

#define MANAGER "tfjob.test/itest-policies"

/* ExitCode: 137 is retryable (pod recreated under its name, counted);
 * 1 is permanent (job Failed, message names replica and code). */
static void test_exit_code(void)
{
	struct ip_env e;
	struct ip_ctx x;
	char uid0[64] = "", uid1[64] = "";

	if (ip_setup(&e, "ec", MANAGER))
		goto out;
	ip_ctx_init(&x, &e, "ec");
	ip_start_job(&x, 0, 2, "ExitCode", "");
	TFJ_CHECK_INT(ip_pod_uid(&e, "ec-worker-0", uid0, sizeof(uid0)), 0);

	/* 137 (SIGKILL, e.g. OOM): retryable. */
	TFJ_CHECK_INT(it_pod_phase(K, e.ns, "ec-worker-0", "Failed", 137), 0);
	x.pod = "ec-worker-0";
	snprintf(x.uid, sizeof(x.uid), "%s", uid0);
	IP_EXPECT(&x, ip_wait(ip_pod_replaced, &x, 30), "ec-worker-0 recreated with a new uid");
	x.rtype = "Worker";
	x.n = 1;
	IP_EXPECT(&x, ip_wait(ip_restarts_eq, &x, 30), "replicaStatuses.Worker.restarts == 1");
	IP_EXPECT(&x, !ip_cond(&x, "Failed"), "not Failed after a retryable exit code");
	IP_EXPECT(&x, ip_event_wait(&e, "ec", "TFJobRestarting", "exited with code 137"),
		  "event TFJobRestarting naming code 137");
	IP_EXPECT(&x, ip_event_wait(&e, "ec", "SuccessfulCreatePod", NULL),
		  "event SuccessfulCreatePod");

	/* 1: permanent, the job fails with a message naming the replica. */
	TFJ_CHECK_INT(ip_pod_uid(&e, "ec-worker-1", uid1, sizeof(uid1)), 0);
	TFJ_CHECK_INT(it_pod_phase(K, e.ns, "ec-worker-1", "Failed", 1), 0);
	x.type = "Failed";
	IP_EXPECT(&x, ip_wait(ip_cond_true, &x, 30), "Failed condition");
	IP_EXPECT(&x, ip_cond_reason_is(&x, "Failed", "TFJobFailed"), "reason TFJobFailed");
	IP_EXPECT(&x, ip_cond_msg_has(&x, "Failed", "worker replica 1"), "message names worker 1");
	IP_EXPECT(&x, ip_cond_msg_has(&x, "Failed", "exited with code 1"), "message names code 1");
	IP_EXPECT(&x, !ip_cond(&x, "Succeeded"), "not Succeeded too");
	IP_EXPECT(&x, ip_event_wait(&e, "ec", "TFJobFailed", "exited with code 1"),
		  "event TFJobFailed naming code 1");
	/* The failed pod is not recreated: it stays as evidence. */
	sleep(1);
	{
		char now[64] = "";
		TFJ_CHECK_INT(ip_pod_uid(&e, "ec-worker-1", now, sizeof(now)), 0);
		TFJ_CHECK_STR(now, uid1);
	}
out:
	ip_teardown(&e);
}

/* OnFailure, backoffLimit 1: a container restart (kubelet's restartCount)
 * plus a failed pod make 2 restarts > 1 -> BackoffLimitExceeded, then
 * cleanPodPolicy Running deletes the pods still running and their services. */
static void test_backoff_limit(void)
{
	struct ip_env e;
	struct ip_ctx x;

	if (ip_setup(&e, "bo", MANAGER))
		goto out;
	ip_ctx_init(&x, &e, "bo");
	ip_start_job(&x, 1, 2, "OnFailure", "\"backoffLimit\":1,\"cleanPodPolicy\":\"Running\",");

	/* First failure: the kubelet restarted worker 0's container in place. */
	TFJ_CHECK_INT(ip_pod_running(&e, "bo-worker-0", 1), 0);
	sleep(2);
	IP_EXPECT(&x, !ip_cond(&x, "Failed"), "1 restart is within backoffLimit 1");
	x.n = 3;
	IP_EXPECT(&x, ip_live_pods_eq(&x), "no pod deleted for an in-place restart");

	/* Second failure: worker 1's pod ends Failed. */
	TFJ_CHECK_INT(it_pod_phase(K, e.ns, "bo-worker-1", "Failed", 2), 0);
	x.type = "Failed";
	IP_EXPECT(&x, ip_wait(ip_cond_true, &x, 30), "Failed condition");
	IP_EXPECT(&x, ip_cond_reason_is(&x, "Failed", "BackoffLimitExceeded"),
		  "reason BackoffLimitExceeded");
	IP_EXPECT(&x, ip_cond_msg_has(&x, "Failed", "backoffLimit 1"), "message names the limit");
	IP_EXPECT(&x, !ip_cond(&x, "Succeeded"), "not Succeeded too");
	IP_EXPECT(&x, ip_event_wait(&e, "bo", "BackoffLimitExceeded", NULL),
		  "event BackoffLimitExceeded");
	/* cleanPodPolicy Running: the running ps-0 and worker-0 go with their
	 * services; the failed worker-1 pod is not running and stays. */
	x.pod = "bo-ps-0";
	IP_EXPECT(&x, ip_wait(ip_pod_gone, &x, 30), "bo-ps-0 deleted by cleanPodPolicy");
	x.pod = "bo-worker-0";
	IP_EXPECT(&x, ip_wait(ip_pod_gone, &x, 30), "bo-worker-0 deleted by cleanPodPolicy");
	x.pod = "bo-worker-1";
	IP_EXPECT(&x, !ip_pod_gone(&x), "failed bo-worker-1 kept");
	x.svc = "bo-ps-0";
	IP_EXPECT(&x, ip_wait(ip_svc_gone, &x, 30), "service bo-ps-0 deleted");
	x.svc = "bo-worker-0";
	IP_EXPECT(&x, ip_wait(ip_svc_gone, &x, 30), "service bo-worker-0 deleted");
out:
	ip_teardown(&e);
}

/* activeDeadlineSeconds 3: nothing but the planner's requeue timer wakes
 * the controller (no pod status is written), and the job fails on time. */
static void test_deadline(void)
{
	struct ip_env e;
	struct ip_ctx x;
	struct timespec t0, t1;
	double took;

	if (ip_setup(&e, "dl", MANAGER))
		goto out;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	TFJ_CHECK_INT(ip_create_job(&e, "dl", 0, 1, "OnFailure",
				    "\"activeDeadlineSeconds\":3,\"cleanPodPolicy\":\"Running\",", ""),
		      0);
	ip_ctx_init(&x, &e, "dl");
	x.type = "Failed";
	IP_EXPECT(&x, ip_wait(ip_cond_true, &x, 12), "Failed within 12 s of creation");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	fprintf(stderr, "deadline 3 s: Failed after %.1f s\n", took);
	TFJ_CHECK_GE(took, 2.0);
	IP_EXPECT(&x, ip_cond_reason_is(&x, "Failed", "DeadlineExceeded"), "reason DeadlineExceeded");
	IP_EXPECT(&x, ip_event_wait(&e, "dl", "DeadlineExceeded", NULL), "event DeadlineExceeded");
	/* One finish path: the pending worker is cleaned up (cleanPodPolicy
	 * Running). */
	x.pod = "dl-worker-0";
	IP_EXPECT(&x, ip_wait(ip_pod_gone, &x, 30), "pending dl-worker-0 deleted");
out:
	ip_teardown(&e);
}

/* Default success policy: worker 0 done -> Succeeded. AllWorkers: only when
 * every worker is done. Never Succeeded and Failed together. */
static void test_success_policies(void)
{
	struct ip_env e;
	struct ip_ctx d, a;

	if (ip_setup(&e, "sp", MANAGER))
		goto out;
	TFJ_CHECK_INT(ip_create_job(&e, "spd", 0, 2, "OnFailure", "\"cleanPodPolicy\":\"Running\",",
				    ""), 0);
	TFJ_CHECK_INT(ip_create_job(&e, "spa", 0, 2, "OnFailure", "",
				    "\"successPolicy\":\"AllWorkers\","), 0);
	ip_ctx_init(&d, &e, "spd");
	ip_ctx_init(&a, &e, "spa");
	d.n = a.n = 2;
	IP_EXPECT(&d, ip_wait(ip_live_pods_eq, &d, 30), "2 pods");
	IP_EXPECT(&a, ip_wait(ip_live_pods_eq, &a, 30), "2 pods");
	ip_pods_phase(&d, 0, 2, "Running");
	ip_pods_phase(&a, 0, 2, "Running");
	d.type = a.type = "Running";
	IP_EXPECT(&d, ip_wait(ip_cond_true, &d, 30), "Running condition");
	IP_EXPECT(&a, ip_wait(ip_cond_true, &a, 30), "Running condition");

	TFJ_CHECK_INT(it_pod_phase(K, e.ns, "spd-worker-0", "Succeeded", 0), 0);
	TFJ_CHECK_INT(it_pod_phase(K, e.ns, "spa-worker-0", "Succeeded", 0), 0);
	d.type = "Succeeded";
	IP_EXPECT(&d, ip_wait(ip_cond_true, &d, 30), "default policy: Succeeded on worker 0");
	IP_EXPECT(&d, !ip_cond(&d, "Failed"), "not Failed too");
	IP_EXPECT(&d, ip_status_str_is(&d, "phase", "Succeeded"), "phase Succeeded");
	/* The default job's still-running worker 1 is cleaned up (cleanPodPolicy Running). */
	d.pod = "spd-worker-1";
	IP_EXPECT(&d, ip_wait(ip_pod_gone, &d, 30), "spd-worker-1 deleted by cleanPodPolicy");

	/* AllWorkers: worker 1 still runs, so not yet (the default job above
	 * took a reconcile of its own in the same time). */
	sleep(3);
	IP_EXPECT(&a, !ip_cond(&a, "Succeeded"), "AllWorkers: not Succeeded with worker 1 running");
	IP_EXPECT(&a, !ip_cond(&a, "Failed"), "AllWorkers: not Failed");
	a.rtype = "Worker";
	IP_EXPECT(&a, ip_completed_is(&a, "0"), "completedIndexes 0");
	TFJ_CHECK_INT(it_pod_phase(K, e.ns, "spa-worker-1", "Succeeded", 0), 0);
	a.type = "Succeeded";
	IP_EXPECT(&a, ip_wait(ip_cond_true, &a, 30), "AllWorkers: Succeeded once both are done");
	IP_EXPECT(&a, !ip_cond(&a, "Failed"), "not Failed too");
	IP_EXPECT(&a, ip_event_wait(&e, "spa", "TFJobSucceeded", NULL), "event TFJobSucceeded");
	sleep(1);
	IP_EXPECT(&d, !(ip_cond(&d, "Succeeded") && ip_cond(&d, "Failed")), "never both");
	IP_EXPECT(&a, !(ip_cond(&a, "Succeeded") && ip_cond(&a, "Failed")), "never both");
out:
	ip_teardown(&e);
}

int main(void)
{
	tfj_log_set_component("itest");
	if (ip_init())
		return ip_init_rc();
	TFJ_RUN(test_exit_code);
	TFJ_RUN(test_backoff_limit);
	TFJ_RUN(test_deadline);
	TFJ_RUN(test_success_policies);
	return it_finish(K, NULL);
}
