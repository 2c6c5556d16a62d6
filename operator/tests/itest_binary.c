/*
 * itest_binary.c - the tfjob-operator binary against the test bed's real
 * kube-apiserver: two replicas with --leader-elect, one leads (Lease
 * holder, creates the job's pods), the other stands by (ready, leader gauge
 * 0); SIGTERM makes the leader exit 0 and release the Lease, the standby
 * takes over and repairs a deleted pod; /healthz, /readyz and /metrics
 * answer. Exits 77 when no cluster answers.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <curl/curl.h>

#include <tfj/err.h>
#include <tfj/log.h>

#include "itest_common.h"
#include "kube/kube.h"
#include "tfj_test.h"
#include "tfj_testutil.h"

static struct tfj_kube *K;
static char NS[64], KC[512], BIN[600];

#define JOB "lead"
/* Our own managedBy value, so an operator deployed in the cluster (the
 * packaging tests install one) leaves this test's jobs alone. */
#define MANAGER "tfjob.test/itest-binary"

struct op {
	pid_t pid;
	int port;
	char identity[320];
};

/* GET http://127.0.0.1:port/path; returns the HTTP code, body into out. */
static long http_get(int port, const char *path, char *out, size_t outlen);

struct body {
	char *p;
	size_t len, cap;
};

static size_t on_body(char *d, size_t s, size_t n, void *ud)
{
	struct body *b = ud;
	size_t k = s * n;
	if (b->len + k + 1 > b->cap)
		k = b->cap > b->len + 1 ? b->cap - b->len - 1 : 0;
	memcpy(b->p + b->len, d, k);
	b->len += k;
	b->p[b->len] = '\0';
	return s * n;
}

static long http_get(int port, const char *path, char *out, size_t outlen)
{
	CURL *h = curl_easy_init();
	char url[256];
	struct body b = { out, 0, outlen };
	long code = 0;
	out[0] = '\0';
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 5L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(h);
	return code;
}

static int spawn(struct op *o, int port)
{
	char addr[64], logp[128];
	struct tfj_testutil_spawn sp = { 0 };
	char *argv[16];
	int n = 0;

	o->port = port;
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	snprintf(logp, sizeof(logp), "/tmp/tfj-itest-binary-%d.log", port);
	argv[n++] = "--kubeconfig";
	argv[n++] = KC;
	argv[n++] = "--namespace";
	argv[n++] = NS;
	argv[n++] = "--leader-elect";
	argv[n++] = "--leader-elect-namespace";
	argv[n++] = NS;
	argv[n++] = "--metrics-addr";
	argv[n++] = addr;
	argv[n++] = "--workers";
	argv[n++] = "2";
	argv[n++] = "--managed-by";
	argv[n++] = MANAGER;
	argv[n] = NULL;
	sp.exe = BIN;
	sp.args = argv;
	sp.stderr_path = logp;
	o->pid = tfj_testutil_spawn(&sp);
	return o->pid < 0 ? -1 : 0;
}

/*
 * 1 once the operator's /metrics answers; its leader-election identity
 * (random per process, kube/leader.h) is then read from
 * tfjob_operator_identity_info into o->identity.
 */
static int healthy_identity(void *ud)
{
	static char buf[65536];
	struct op *o = ud;
	const char *key = "tfjob_operator_identity_info{identity=\"", *p;
	size_t n;

	if (http_get(o->port, "/metrics", buf, sizeof(buf)) != 200 || !(p = strstr(buf, key)))
		return 0;
	p += strlen(key);
	n = strcspn(p, "\"");
	snprintf(o->identity, sizeof(o->identity), "%.*s", (int)n, p);
	return n > 0;
}

/* Waits for the child to exit; its exit status, or -1 on timeout/signal. */
static int reap(struct op *o, int seconds)
{
	for (int i = 0; i < seconds * 10; i++) {
		int st;
		pid_t r = waitpid(o->pid, &st, WNOHANG);
		if (r == o->pid) {
			o->pid = 0;
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		}
		usleep(100000);
	}
	return -1;
}

static void kill_hard(struct op *o)
{
	if (o->pid > 0) {
		tfj_testutil_kill(o->pid, SIGKILL);
		reap(o, 5);
	}
}

static void lease_holder(char *out, size_t outlen)
{
	char p[256];
	cJSON *l = NULL;
	const char *h;
	out[0] = '\0';
	snprintf(p, sizeof(p), "/apis/coordination.k8s.io/v1/namespaces/%s/leases/tfjob-operator",
		 NS);
	if (tfj_kube_get(K, &l, p))
		return;
	h = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(l, "spec"),
						     "holderIdentity"));
	snprintf(out, outlen, "%s", h ? h : "");
	cJSON_Delete(l);
}

static int holder_is(void *ud)
{
	char h[320];
	lease_holder(h, sizeof(h));
	return strcmp(h, ((struct op *)ud)->identity) == 0;
}

static int healthy(void *ud)
{
	char b[64];
	return http_get(((struct op *)ud)->port, "/healthz", b, sizeof(b)) == 200;
}

/* 1 once the Events' own client has posted an Event (a series of its own on /metrics). */
static int events_counted(void *ud)
{
	static char buf[65536];
	struct op *o = ud;

	return http_get(o->port, "/metrics", buf, sizeof(buf)) == 200 &&
	       strstr(buf, "\ntfjob_operator_event_api_requests_total{verb=\"POST\",code=\"201\"} ");
}

static int three_pods(void *ud)
{
	return it_count(K, NS, JOB, "pods") == 3;
}

static const char *metric(const char *text, const char *name, char *val, size_t vlen)
{
	const char *p = strstr(text, name);
	size_t n;
	val[0] = '\0';
	if (!p)
		return NULL;
	p += strlen(name);
	n = strcspn(p, "\n");
	snprintf(val, vlen, "%.*s", (int)n, p);
	return val;
}

static void test_two_replicas(void)
{
	struct op a = { 0 }, b = { 0 };
	char buf[65536], v[64], path[256], body[2048], uid_before[128] = "";
	int base = 20000 + (int)(getpid() % 20000);
	cJSON *job, *pod = NULL;

	TFJ_CHECK_INT(spawn(&a, base), 0);
	TFJ_CHECK(it_wait(healthy, &a, 20));
	TFJ_CHECK(it_wait(healthy_identity, &a, 20));
	TFJ_CHECK(it_wait(holder_is, &a, 30));
	TFJ_CHECK_INT(spawn(&b, base + 1), 0);
	TFJ_CHECK(it_wait(healthy, &b, 20));
	TFJ_CHECK(it_wait(healthy_identity, &b, 20));
	TFJ_CHECK(strcmp(a.identity, b.identity) != 0);
	sleep(3);
	TFJ_CHECK(holder_is(&a));   /* the standby does not steal a live lease */
	TFJ_CHECK_INT(http_get(b.port, "/readyz", buf, sizeof(buf)), 200);
	TFJ_CHECK_INT(http_get(a.port, "/readyz", buf, sizeof(buf)), 200);
	TFJ_CHECK_INT(http_get(a.port, "/nope", buf, sizeof(buf)), 404);
	TFJ_CHECK_INT(http_get(b.port, "/metrics", buf, sizeof(buf)), 200);
	TFJ_CHECK_STR(metric(buf, "\ntfjob_operator_leader ", v, sizeof(v)), "0");
	TFJ_CHECK_INT(http_get(a.port, "/metrics", buf, sizeof(buf)), 200);
	TFJ_CHECK_STR(metric(buf, "\ntfjob_operator_leader ", v, sizeof(v)), "1");

	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\",\"metadata\":{\"name\":\""
		 JOB "\"},\"spec\":{\"runPolicy\":{\"managedBy\":\"" MANAGER "\"},\"tfReplicaSpecs\":{\"Worker\":{\"replicas\":3,"
		 "\"restartPolicy\":\"OnFailure\",\"template\":{\"spec\":{\"nodeSelector\":"
		 "{\"tfjob-itest/no-such-node\":\"true\"},\"containers\":[{\"name\":\"tensorflow\","
		 "\"image\":\"localhost/tfjob-itest:1\"}]}}}}}}");
	job = cJSON_Parse(body);
	snprintf(path, sizeof(path), "/apis/kubeflow.org/v1/namespaces/%s/tfjobs", NS);
	TFJ_CHECK_INT(tfj_kube_create(K, NULL, path, job), 0);
	cJSON_Delete(job);
	TFJ_CHECK(it_wait(three_pods, NULL, 30));
	TFJ_CHECK_INT(http_get(a.port, "/metrics", buf, sizeof(buf)), 200);
	TFJ_CHECK(strstr(buf, "tfjob_operator_api_requests_total{verb=\"POST\",code=\"201\"}") != NULL);
	TFJ_CHECK(strstr(buf, "tfjob_operator_child_writes_total{op=\"create\",result=\"success\"} 6")
		  != NULL);
	TFJ_CHECK(it_wait(events_counted, &a, 15)); /* posted apart, counted apart */

	/* Graceful stop of the leader: exit 0, lease released, standby takes over. */
	tfj_testutil_kill(a.pid, SIGTERM);
	TFJ_CHECK_INT(reap(&a, 20), 0);
	TFJ_CHECK(it_wait(holder_is, &b, 15)); /* well under the 15 s lease: it was released */

	/* The new leader repairs the job: a deleted pod comes back (new uid). */
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/" JOB "-worker-2", NS);
	if (tfj_kube_get(K, &pod, path) == 0) {
		snprintf(uid_before, sizeof(uid_before), "%s", cJSON_GetStringValue(
			cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "metadata"), "uid")));
		cJSON_Delete(pod);
		pod = NULL;
	}
	/* Without a kubelet a graceful delete would linger: delete at once. */
	{
		char dp[300];
		snprintf(dp, sizeof(dp), "%s?gracePeriodSeconds=0", path);
		TFJ_CHECK_INT(tfj_kube_delete(K, dp, NULL, NULL), 0);
	}
	for (int i = 0; i < 300; i++) {
		if (tfj_kube_get(K, &pod, path) == 0) {
			const char *u = cJSON_GetStringValue(
				cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "metadata"), "uid"));
			int fresh = u && strcmp(u, uid_before) != 0;
			cJSON_Delete(pod);
			pod = NULL;
			if (fresh)
				break;
		}
		usleep(100000);
	}
	TFJ_CHECK_INT(it_count(K, NS, JOB, "pods"), 3);
	TFJ_CHECK(tfj_kube_get(K, &pod, path) == 0);
	if (pod) {
		TFJ_CHECK(strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(
			cJSON_GetObjectItem(pod, "metadata"), "uid")), uid_before) != 0);
		cJSON_Delete(pod);
	}
	tfj_testutil_kill(b.pid, SIGTERM);
	TFJ_CHECK_INT(reap(&b, 20), 0);
	kill_hard(&a);
	kill_hard(&b);
}

static void test_bad_flags(void)
{
	struct op o = { 0 };
	char cmd[800];
	snprintf(cmd, sizeof(cmd), "'%s' --workers 0 2>/dev/null", BIN);
	TFJ_CHECK_INT(WEXITSTATUS(system(cmd)), 2);
	snprintf(cmd, sizeof(cmd), "'%s' --kubeconfig /nonexistent 2>/dev/null", BIN);
	TFJ_CHECK_INT(WEXITSTATUS(system(cmd)), 1);
	(void)o;
}

int main(void)
{
	char self[512];
	int rc;

	tfj_log_set_component("itest");
	if (tfj_testutil_exe_dir(self, sizeof(self)))
		return 1;
	snprintf(BIN, sizeof(BIN), "%s/tfjob-operator", self);
	if (access(BIN, X_OK) != 0) {
		fprintf(stderr, "%s not built\n", BIN);
		return 1;
	}
	rc = it_start(&K, KC, sizeof(KC), NS, sizeof(NS), "bin");
	if (rc)
		return rc;
	TFJ_RUN(test_bad_flags);
	TFJ_RUN(test_two_replicas);
	return it_finish(K, NS);
}
