/*
 * itest_report.c - the report channel against the test bed's real API
 * server: the controller (in this process) injects the token volume and
 * variables into real pods; the report server listens on loopback; tokens
 * come from the real TokenRequest API bound to a real pod, and are checked
 * with a real TokenReview. Shown here:
 *   - pods carry the projected token volume and the TFJOB_* variables;
 *   - a valid Heartbeat is accepted and its step appears in the TFJob's
 *     status.progress; a second call is answered from the TokenReview cache;
 *   - a forged token, a token for another audience, a token that is not
 *     bound to a pod, a token of one pod used for another, and a report
 *     for another job are refused with the right code and counted;
 *   - once a Chief + PS job has succeeded, its ps's Heartbeat is answered
 *     with stop (docs/operator.md, "Stopping after success").
 * The pods never run (they are pinned to a node that does not exist): the
 * channel needs only their API objects.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <tfj/log.h>

#include "app/controller.h"
#include "itest_common.h"
#include "report/progress.h"
#include "report/report.h"
#include "report_client.h"
#include "report_stack.h"
#include "app/reporthub.h"
#include "tfj_test.h"
#include "report/tokenreview.h"
#include "tfj_testutil.h"

static struct tfj_kube *K;
static char NS[64];
static char KC[512];

#define JOB "mnist"
#define AUD "tfjob-report"
/*
 * A deployed operator may be watching every namespace of the test bed; the
 * job names this test's controller as its manager so that one leaves it alone.
 */
#define MANAGER "tfjob-itest.kubeflow.org/report"

#define JOB_FMT \
	"{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\"," \
	"\"metadata\":{\"name\":\"" JOB "\",\"namespace\":\"%s\"}," \
	"\"spec\":{\"runPolicy\":{\"managedBy\":\"" MANAGER "\"},\"tfReplicaSpecs\":{" \
	"\"Worker\":{\"replicas\":2,\"template\":{\"spec\":{" \
	"\"nodeSelector\":{\"tfjob-itest/no-such-node\":\"true\"}," \
	"\"containers\":[{\"name\":\"tensorflow\",\"image\":\"localhost/tfjob-itest:1\"}]}}}}}}"

static int have_pods(void *ud)
{
	return it_count(K, NS, JOB, "pods") == 2;
}

/* kind "tfjobs" or "pods". */
static cJSON *get(const char *kind, const char *name)
{
	return it_get(K, NS, kind, name);
}

static const char *str_at(cJSON *o, const char *a, const char *b)
{
	return cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(o, a), b));
}

/* A token from the TokenRequest API (itest_common.h), bound to pod unless NULL. */
static int token_for(char **out, const char *aud, const char *pod, const char *uid)
{
	return it_token(out, K, NS, aud, pod, uid);
}

static const char *env_of(cJSON *pod, const char *name)
{
	cJSON *c, *e;

	cJSON_ArrayForEach(c, cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "containers"))
		cJSON_ArrayForEach(e, cJSON_GetObjectItem(c, "env"))
			if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(e, "name")), name))
				return cJSON_GetStringValue(cJSON_GetObjectItem(e, "value"));
	return NULL;
}

static int64_t want_step;

static int progress_visible(void *ud)
{
	cJSON *job = get("tfjobs", JOB);
	cJSON *p = cJSON_GetObjectItem(cJSON_GetObjectItem(job, "status"), "progress");
	cJSON *s = cJSON_GetObjectItem(p, "globalStep");
	int ok = cJSON_IsNumber(s) && (int64_t)s->valuedouble == want_step &&
		 cJSON_IsNumber(cJSON_GetObjectItem(p, "accuracy"));

	cJSON_Delete(job);
	return ok;
}

static grpc_status_code heartbeat(grpc_channel *ch, const char *token, const char *job,
				  const char *uid, int idx, const char *pod, int64_t step,
				  int64_t agent_ms)
{
	Tfj__Report__V1__HeartbeatRequest hb = TFJ__REPORT__V1__HEARTBEAT_REQUEST__INIT;
	Tfj__Report__V1__ReplicaRef ref;
	Tfj__Report__V1__Progress pr = TFJ__REPORT__V1__PROGRESS__INIT;

	rc_ref(&ref, NS, job, uid, "worker", idx, pod);
	pr.has_step = 1;
	pr.global_step = step;
	pr.has_accuracy = 1;
	pr.accuracy = 0.5;
	pr.unix_time_ms = agent_ms;
	hb.replica = &ref;
	hb.progress = &pr;
	hb.child_running = 1;
	return rc_call(ch, TFJ_REPORT_PATH_HEARTBEAT, &hb.base, NULL, 0, token, NULL);
}

/*
 * Runs <build>/agent/tfjob-agent (next to this test's build dir) as worker
 * 0 with a command that prints one progress record; its Heartbeat must
 * reach the status and its Exit must be accepted. Skipped when the agent
 * was not built.
 */
static void run_agent(const char *tok, const char *job_uid, struct tfj_report *srv)
{
	char exe[1024], agent[1100], tokfile[] = "/tmp/tfjob-itest-token-XXXXXX", cmd[4096];
	int fd, rc;

	if (tfj_testutil_exe_dir(exe, sizeof(exe)))
		return;
	snprintf(agent, sizeof(agent), "%s/../agent/tfjob-agent", exe);
	if (access(agent, X_OK)) {
		fprintf(stderr, "note: %s not built; agent interop part skipped\n", agent);
		return;
	}
	fd = mkstemp(tokfile);
	TFJ_CHECK_GE(fd, 0);
	if (fd < 0)
		return;
	TFJ_CHECK(write(fd, tok, strlen(tok)) == (ssize_t)strlen(tok));
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "TFJOB_JOB_NAMESPACE=%s TFJOB_JOB_NAME=" JOB " TFJOB_JOB_UID=%s "
		 "TFJOB_REPLICA_TYPE=worker TFJOB_REPLICA_INDEX=0 POD_NAME=" JOB "-worker-0 "
		 "'%s' --skip-peer-wait --termination-log none --heartbeat-interval 1 "
		 "--report-addr 127.0.0.1:%d --report-insecure --report-token-file '%s' -- "
		 "sh -c 'echo \"TFJ_PROGRESS {\\\"step\\\":98765,\\\"accuracy\\\":0.875}\"; sleep 3' >&2",
		 NS, job_uid, agent, tfj_report_port(srv), tokfile);
	rc = system(cmd);
	unlink(tokfile);
	TFJ_CHECK_INT(rc, 0);
	want_step = 98765;
	/* The agent waited for the acks: what it said is in the status already. */
	TFJ_CHECK(progress_visible(NULL));
	{
		cJSON *job = get("tfjobs", JOB), *pod = get("pods", JOB "-worker-0");
		const char *done = cJSON_GetStringValue(cJSON_GetObjectItem(
			cJSON_GetObjectItem(cJSON_GetObjectItem(job, "status"), "progress"),
			"trainingDonePodUID"));
		const char *uid = cJSON_GetStringValue(cJSON_GetObjectItem(
			cJSON_GetObjectItem(pod, "metadata"), "uid"));

		/* Worker 0 is the lead replica here: its Exit 0 is "training done". */
		TFJ_CHECK(done && uid && !strcmp(done, uid));
		cJSON_Delete(job);
		cJSON_Delete(pod);
	}
	{
		struct tfj_buf m;
		uint64_t refused = 0;
		static const char *const reasons[] = { "no_token", "invalid_token", "not_pod_bound",
						       "pod_mismatch", "pod_unknown", "wrong_replica",
						       "invalid_argument", "rate_limited",
						       "job_finished", "job_unknown", "unavailable",
						       "other" };

		for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
			refused += tfj_report_rejected(srv, reasons[i]);
		/* Exactly the six refusals of the test above; the agent's calls all passed. */
		TFJ_CHECK_INT((int)refused, 6);
		tfj_buf_init(&m, 1 << 20);
		TFJ_CHECK_INT(tfj_report_metrics(srv, &m), 0);
		TFJ_CHECK(strstr(tfj_buf_cstr(&m), "{method=\"RegisterReplica\"} 1\n") != NULL);
		/* Exit sent again until the status held "training done": a few times. */
		TFJ_CHECK(strstr(tfj_buf_cstr(&m), "{method=\"Exit\"} 1\n") ||
			  strstr(tfj_buf_cstr(&m), "{method=\"Exit\"} 2\n") ||
			  strstr(tfj_buf_cstr(&m), "{method=\"Exit\"} 3\n") ||
			  strstr(tfj_buf_cstr(&m), "{method=\"Exit\"} 4\n"));
		tfj_buf_free(&m);
	}
}

/*
 * The stop after success through the real hub and caches: a Chief + PS
 * job under cleanPodPolicy None; its ps's Heartbeat is answered without
 * stop while the job runs, and with stop once the chief's pod succeeded and
 * the job with it (reports of a succeeded job are accepted, not refused as
 * finished).
 */
#define STOPJOB "stopjob"
#define STOPJOB_FMT \
	"{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\"," \
	"\"metadata\":{\"name\":\"" STOPJOB "\",\"namespace\":\"%s\"}," \
	"\"spec\":{\"runPolicy\":{\"managedBy\":\"" MANAGER "\",\"cleanPodPolicy\":\"None\"}," \
	"\"tfReplicaSpecs\":{\"%s\":{\"template\":{\"spec\":{" \
	"\"nodeSelector\":{\"tfjob-itest/no-such-node\":\"true\"}," \
	"\"containers\":[{\"name\":\"tensorflow\",\"image\":\"localhost/tfjob-itest:1\"}]}}}," \
	"\"PS\":{\"template\":{\"spec\":{" \
	"\"nodeSelector\":{\"tfjob-itest/no-such-node\":\"true\"}," \
	"\"containers\":[{\"name\":\"tensorflow\",\"image\":\"localhost/tfjob-itest:1\"}]}}}}}}"

struct stopper {
	grpc_channel *ch;
	const char *tok;
	Tfj__Report__V1__ReplicaRef *ref;
	int want;       /* the stop flag to wait for */
	int stop;       /* the last reply's */
	char reason[128];
};

static int stop_is(void *ud)
{
	struct stopper *x = ud;
	Tfj__Report__V1__HeartbeatResponse *r = NULL;

	/* Under the per-pod rate (2/s): the cache follows the API within this. */
	usleep(400000);
	x->stop = -1;
	if (rc_heartbeat_reply(x->ch, x->tok, x->ref, &r) != GRPC_STATUS_OK || !r)
		return 0;
	x->stop = r->stop;
	snprintf(x->reason, sizeof(x->reason), "%s", r->stop_reason ? r->stop_reason : "");
	tfj__report__v1__heartbeat_response__free_unpacked(r, NULL);
	return x->stop == x->want;
}

static int stopjob_pods(void *ud)
{
	(void)ud;
	return it_count(K, NS, STOPJOB, "pods") == 2;
}

static int stopjob_succeeded(void *ud)
{
	(void)ud;
	return it_job_condition(K, NS, STOPJOB, "Succeeded");
}

static void check_stop_after_success(grpc_channel *ch, struct tfj_report *srv)
{
	char path[256], body[4096], job_uid[64], ps_uid[64];
	Tfj__Report__V1__ReplicaRef ref;
	struct stopper x;
	char *tok = NULL;
	cJSON *o;

	snprintf(body, sizeof(body), STOPJOB_FMT, NS, "Chief");
	o = cJSON_Parse(body);
	snprintf(path, sizeof(path), "/apis/kubeflow.org/v1/namespaces/%s/tfjobs", NS);
	TFJ_CHECK_INT(tfj_kube_create(K, NULL, path, o), 0);
	cJSON_Delete(o);
	TFJ_CHECK(it_wait(stopjob_pods, NULL, 60));
	o = get("tfjobs", STOPJOB);
	snprintf(job_uid, sizeof(job_uid), "%s", o ? str_at(o, "metadata", "uid") : "");
	cJSON_Delete(o);
	o = get("pods", STOPJOB "-ps-0");
	snprintf(ps_uid, sizeof(ps_uid), "%s", o ? str_at(o, "metadata", "uid") : "");
	cJSON_Delete(o);
	TFJ_CHECK_INT(token_for(&tok, AUD, STOPJOB "-ps-0", ps_uid), 0);
	if (!tok)
		return;
	memset(&x, 0, sizeof(x));
	x.ch = ch;
	x.tok = tok;
	x.ref = &ref;
	rc_ref(&ref, NS, STOPJOB, job_uid, "ps", 0, STOPJOB "-ps-0");
	/* Running: no stop. */
	TFJ_CHECK(stop_is(&x));
	TFJ_CHECK_INT(x.stop, 0);
	/* The chief's pod succeeds as a kubelet would say; the job follows. */
	TFJ_CHECK_INT(it_pod_phase(K, NS, STOPJOB "-chief-0", "Running", 0), 0);
	TFJ_CHECK_INT(it_pod_phase(K, NS, STOPJOB "-chief-0", "Succeeded", 0), 0);
	TFJ_CHECK(it_wait(stopjob_succeeded, NULL, 60));
	/* The ps hears stop; its pod stays (cleanPodPolicy None). */
	x.want = 1;
	TFJ_CHECK(it_wait(stop_is, &x, 30));
	TFJ_CHECK_INT(x.stop, 1);
	TFJ_CHECK_STR(x.reason, "the job has succeeded");
	o = get("pods", STOPJOB "-ps-0");
	TFJ_CHECK(o != NULL);
	cJSON_Delete(o);
	TFJ_CHECK_INT((int)tfj_report_rejected(srv, "job_finished"), 0);
	explicit_bzero(tok, strlen(tok));
	free(tok);
}

static void test_report_channel(void)
{
	char path[256], body[4096], job_uid[64], pod_uid[64];
	struct rstack st;
	struct tfj_report *srv;
	char *tok = NULL, *tok_aud = NULL, *tok_unbound = NULL;
	uint64_t reviews = 0, hits = 0, reviews0;
	grpc_channel *ch;
	cJSON *job, *pod;
	const char *s;

	snprintf(body, sizeof(body), JOB_FMT, NS);
	job = cJSON_Parse(body);
	snprintf(path, sizeof(path), "/apis/kubeflow.org/v1/namespaces/%s/tfjobs", NS);
	TFJ_CHECK_INT(tfj_kube_create(K, NULL, path, job), 0);
	cJSON_Delete(job);

	if (rs_start(&st, K, NULL, NS, MANAGER, AUD, NULL))
		goto out;
	srv = st.srv;
	ch = rc_channel(tfj_report_port(srv));

	TFJ_CHECK(it_wait(have_pods, NULL, 60));
	job = get("tfjobs", JOB);
	snprintf(job_uid, sizeof(job_uid), "%s", str_at(job, "metadata", "uid"));
	cJSON_Delete(job);

	/* The pod as the API server stored it: token volume and identity. */
	pod = get("pods", JOB "-worker-0");
	TFJ_CHECK(pod != NULL);
	snprintf(pod_uid, sizeof(pod_uid), "%s", str_at(pod, "metadata", "uid"));
	TFJ_CHECK_STR(env_of(pod, "TFJOB_REPORT_ADDR"), "tfjob-operator.tfjob-system.svc:9443");
	TFJ_CHECK_STR(env_of(pod, "TFJOB_REPORT_TOKEN_FILE"), "/var/run/secrets/tfjob/token");
	TFJ_CHECK_STR(env_of(pod, "TFJOB_JOB_UID"), job_uid);
	TFJ_CHECK_STR(env_of(pod, "TFJOB_REPLICA_INDEX"), "0");
	s = cJSON_PrintUnformatted(cJSON_GetObjectItem(pod, "spec"));
	TFJ_CHECK(s && strstr(s, "\"serviceAccountToken\":{\"audience\":\"" AUD "\","
			      "\"expirationSeconds\":3600,\"path\":\"token\"}") != NULL);
	free((void *)s);
	cJSON_Delete(pod);

	TFJ_CHECK_INT(token_for(&tok, AUD, JOB "-worker-0", pod_uid), 0);
	TFJ_CHECK_INT(token_for(&tok_aud, "somebody-else", JOB "-worker-0", pod_uid), 0);
	TFJ_CHECK_INT(token_for(&tok_unbound, AUD, NULL, NULL), 0);
	if (!tok || !tok_aud || !tok_unbound)
		goto out_ch;

	/* Valid: accepted, and the step shows up in the TFJob's status. */
	want_step = 4321;
	TFJ_CHECK_INT(heartbeat(ch, tok, JOB, job_uid, 0, JOB "-worker-0", want_step, 1000),
		      GRPC_STATUS_OK);
	TFJ_CHECK(it_wait(progress_visible, NULL, 30));
	tfj_tokenreviewer_stats(st.hub.tr, &reviews0, &hits);
	TFJ_CHECK_INT(heartbeat(ch, tok, JOB, job_uid, 0, JOB "-worker-0", 4322, 2000),
		      GRPC_STATUS_OK);
	tfj_tokenreviewer_stats(st.hub.tr, &reviews, &hits);
	TFJ_CHECK_EQ(reviews, reviews0);
	TFJ_CHECK_GE(hits, 1); /* answered from the cache */

	/* Forged: a syntactically plausible JWT no key signed. */
	TFJ_CHECK_INT(heartbeat(ch, "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.AAAA", JOB, job_uid, 0,
				JOB "-worker-0", 1, 3000), GRPC_STATUS_UNAUTHENTICATED);
	/* A real token of this pod, for another audience. */
	TFJ_CHECK_INT(heartbeat(ch, tok_aud, JOB, job_uid, 0, JOB "-worker-0", 1, 3000),
		      GRPC_STATUS_UNAUTHENTICATED);
	TFJ_CHECK(tfj_report_rejected(srv, "invalid_token") == 2);
	/* A real token not bound to any pod. */
	TFJ_CHECK_INT(heartbeat(ch, tok_unbound, JOB, job_uid, 0, JOB "-worker-0", 1, 3000),
		      GRPC_STATUS_PERMISSION_DENIED);
	TFJ_CHECK(tfj_report_rejected(srv, "not_pod_bound") == 1);
	/* Worker 0's token speaking for worker 1. */
	TFJ_CHECK_INT(heartbeat(ch, tok, JOB, job_uid, 1, JOB "-worker-1", 1, 3000),
		      GRPC_STATUS_PERMISSION_DENIED);
	TFJ_CHECK(tfj_report_rejected(srv, "pod_mismatch") == 1);
	/* Worker 0's token reporting for another job. */
	TFJ_CHECK_INT(heartbeat(ch, tok, "other", job_uid, 0, JOB "-worker-0", 1, 3000),
		      GRPC_STATUS_PERMISSION_DENIED);
	TFJ_CHECK_INT(heartbeat(ch, tok, JOB, "00000000-0000-0000-0000-000000000000", 0,
				JOB "-worker-0", 1, 3000), GRPC_STATUS_PERMISSION_DENIED);
	TFJ_CHECK(tfj_report_rejected(srv, "wrong_replica") == 2);
	/* None of those moved the status. */
	want_step = 4322;
	TFJ_CHECK(it_wait(progress_visible, NULL, 30));

	/* The real agent's client against this server, when it was built. */
	run_agent(tok, job_uid, srv);
	check_stop_after_success(ch, srv);
out_ch:
	grpc_channel_destroy(ch);
out:
	rs_stop(&st);
	if (tok)
		explicit_bzero(tok, strlen(tok));
	free(tok);
	free(tok_aud);
	free(tok_unbound);
}

int main(void)
{
	int rc;

	tfj_log_set_component("itest");
	rc = it_start(&K, KC, sizeof(KC), NS, sizeof(NS), "rep");
	if (rc)
		return rc;
	grpc_init();
	TFJ_RUN(test_report_channel);
	grpc_shutdown();
	return it_finish(K, NS);
}
