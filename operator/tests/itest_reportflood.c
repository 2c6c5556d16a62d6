/*
 * itest_reportflood.c - a flood of garbage tokens against the report port
 * (issue 16), with the test bed's real API server behind the TokenReviews.
 * The controller and the report server run in this process as in main.c:
 * the controller on one API client, the reviewer on a client of its own
 * with its own small budget. Shown here:
 *
 *   1. 10,000 calls (at least) with garbage tokens (random strings; unsigned
 *      look-alikes of projected tokens: expired, for another audience, for
 *      a pod that does not exist, and "plausible" ones claiming the real pod)
 *      from one address: TokenReviews issued stay bounded (the metric),
 *      most calls are refused per peer before any token work, a real agent
 *      on the same address keeps reporting (its token is verified and
 *      cached), and the controller creates the pods of new TFJobs during
 *      the flood as it does without one (latency printed, compared with a
 *      generous bound: the VM's speed varies 2-3x and the flood's own CPU
 *      is on the same two cores).
 *   2. Without the per-peer limit, 2,000 garbage tokens that fail the local
 *      checks cost no TokenReview at all, and plausible forged tokens are
 *      held to the reviewer's budget (review_limited).
 *
 * The pods never run (pinned to a node that does not exist): the channel
 * and the planner need only their API objects.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tfj/clock.h>
#include <tfj/log.h>

#include "app/controller.h"
#include "app/reporthub.h"
#include "itest_common.h"
#include "jwt_forge.h"
#include "report/progress.h"
#include "report/report.h"
#include "report/tokenreview.h"
#include "report_client.h"
#include "report_stack.h"
#include "tfj_test.h"
#include "tfj_testutil.h"

#define AUD "tfjob-report"
#define MANAGER "tfjob-itest.kubeflow.org/flood"
#define VICTIM "victim"
#define FLOOD_CALLS 10000
#define FLOOD_THREADS 4
#define REVIEW_QPS 5
#define REVIEW_BURST 20
#define PEER_QPS 1
#define PEER_BURST 20
#define LAT_JOBS 3

static struct tfj_kube *K, *KR;
static char NS[64], KC[512];

#define JOB_FMT \
	"{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\"," \
	"\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"}," \
	"\"spec\":{\"runPolicy\":{\"managedBy\":\"" MANAGER "\"},\"tfReplicaSpecs\":{" \
	"\"Worker\":{\"replicas\":1,\"template\":{\"spec\":{" \
	"\"nodeSelector\":{\"tfjob-itest/no-such-node\":\"true\"}," \
	"\"containers\":[{\"name\":\"tensorflow\",\"image\":\"localhost/tfjob-itest:1\"}]}}}}}}"

static int create_job(const char *name)
{
	char path[256], body[2048];
	cJSON *o;
	int rc;

	snprintf(body, sizeof(body), JOB_FMT, name, NS);
	o = cJSON_Parse(body);
	snprintf(path, sizeof(path), "/apis/kubeflow.org/v1/namespaces/%s/tfjobs", NS);
	rc = tfj_kube_create(K, NULL, path, o);
	cJSON_Delete(o);
	return rc;
}

static int has_pod(void *job)
{
	return it_count(K, NS, job, "pods") == 1;
}

/* Seconds from creating TFJob `name` until its pod exists (-1: not in 60 s). */
static double pod_latency(const char *name)
{
	double t0 = tfj_testutil_now_s();

	if (create_job(name) || !it_wait(has_pod, (void *)name, 60))
		return -1;
	return tfj_testutil_now_s() - t0;
}

static double median3(const double *v)
{
	double a = v[0], b = v[1], c = v[2];

	if (a > b) { double t = a; a = b; b = t; }
	if (b > c) { double t = b; b = c; c = t; }
	if (a > b) { double t = a; a = b; b = t; }
	return b;
}

static void uid_of(char *out, size_t cap, const char *kind, const char *name)
{
	cJSON *o = it_get(K, NS, kind, name);
	const char *u = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"),
								"uid"));

	snprintf(out, cap, "%s", u ? u : "");
	cJSON_Delete(o);
}

/* ---- the flood ---- */

struct target {
	int port;
	char job_uid[64], pod_uid[64];
	int kinds;             /* garbage kinds drawn: 5 = all, 4 = all but plausible */
	int calls;             /* per thread, at least */
	volatile int until;    /* 1: go on past `calls` until this is 0 */
};

struct flooder {
	const struct target *t;
	pthread_t th;
	unsigned seed;
	int by_status[17];     /* gRPC status codes of the replies */
	int made;
};

/* One garbage token of kind k (0..4); *out malloc'd. */
static char *garbage(unsigned *seed, int k, const struct target *t)
{
	long long now = (long long)(tfj_clock_unix_ms() / 1000);
	char p[2048], claim[512], ghost[32];
	char *s;
	int i, n;

	switch (k) {
	case 0: /* random printable bytes */
		n = 1 + rand_r(seed) % 1500;
		s = malloc((size_t)n + 1);
		for (i = 0; i < n; i++)
			s[i] = (char)(33 + rand_r(seed) % 94);
		s[n] = '\0';
		return s;
	case 1: /* expired */
		jf_pod_claim(claim, sizeof(claim), NS, VICTIM "-worker-0", t->pod_uid);
		jf_payload(p, sizeof(p), "[\"" AUD "\"]", now - 7200, now - 3600, claim);
		break;
	case 2: /* another audience */
		jf_pod_claim(claim, sizeof(claim), NS, VICTIM "-worker-0", t->pod_uid);
		jf_payload(p, sizeof(p), "[\"https://kubernetes.default.svc\"]", now, now + 3600,
			   claim);
		break;
	case 3: /* a pod that does not exist */
		snprintf(ghost, sizeof(ghost), "ghost-%u", rand_r(seed));
		jf_pod_claim(claim, sizeof(claim), NS, ghost, "ghost-uid");
		jf_payload(p, sizeof(p), "[\"" AUD "\"]", now, now + 3600, claim);
		break;
	default: /* plausible: the real pod's name and uid, a jti of its own, no valid signature */
		jf_pod_claim(claim, sizeof(claim), NS, VICTIM "-worker-0", t->pod_uid);
		jf_payload(p, sizeof(p), "[\"" AUD "\"]", now, now + 3600 + rand_r(seed) % 1000,
			   claim);
		break;
	}
	return jf_jwt("{\"alg\":\"RS256\",\"kid\":\"forged\"}", p);
}

static void *flood_main(void *arg)
{
	struct flooder *f = arg;
	grpc_channel *ch = rc_channel(f->t->port);
	Tfj__Report__V1__HeartbeatRequest hb = TFJ__REPORT__V1__HEARTBEAT_REQUEST__INIT;
	Tfj__Report__V1__ReplicaRef ref;
	int i;

	rc_ref(&ref, NS, VICTIM, f->t->job_uid, "worker", 0, VICTIM "-worker-0");
	hb.replica = &ref;
	for (i = 0; i < f->t->calls || f->t->until; i++) {
		char *tok = garbage(&f->seed, (int)(rand_r(&f->seed) % (unsigned)f->t->kinds), f->t);
		grpc_status_code st = rc_call(ch, TFJ_REPORT_PATH_HEARTBEAT, &hb.base, NULL, 0, tok,
					      NULL);

		f->by_status[(unsigned)st < 17 ? st : 16]++;
		f->made++;
		free(tok);
	}
	grpc_channel_destroy(ch);
	return NULL;
}

/* The real agent: a Heartbeat every 600 ms (under the per-pod 2/s) until *stop. */
struct agent {
	const struct target *t;
	const char *tok;
	volatile int stop;
	int ok, refused;
	pthread_t th;
};

static void *agent_main(void *arg)
{
	struct agent *a = arg;
	grpc_channel *ch = rc_channel(a->t->port);
	Tfj__Report__V1__HeartbeatRequest hb = TFJ__REPORT__V1__HEARTBEAT_REQUEST__INIT;
	Tfj__Report__V1__ReplicaRef ref;

	rc_ref(&ref, NS, VICTIM, a->t->job_uid, "worker", 0, VICTIM "-worker-0");
	hb.replica = &ref;
	hb.child_running = 1;
	while (!a->stop) {
		if (rc_call(ch, TFJ_REPORT_PATH_HEARTBEAT, &hb.base, NULL, 0, a->tok, NULL) ==
		    GRPC_STATUS_OK)
			a->ok++;
		else
			a->refused++;
		usleep(600000);
	}
	grpc_channel_destroy(ch);
	return NULL;
}

/* A counter's value from Prometheus text ("name{labels} value" lines). */
static unsigned long long metric(const char *text, const char *series)
{
	const char *p = text;
	size_t n = strlen(series);

	while ((p = strstr(p, series))) {
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return strtoull(p + n + 1, NULL, 10);
		p += n;
	}
	return 0;
}

static char *metrics_text(struct tfj_report *srv, struct tfj_tokenreviewer *tr)
{
	struct tfj_buf m;
	char *s;

	tfj_buf_init(&m, 1 << 20);
	tfj_report_metrics(srv, &m);
	tfj_tokenreviewer_metrics(tr, &m);
	s = strdup(tfj_buf_cstr(&m));
	tfj_buf_free(&m);
	return s;
}

#define REVIEWS(text) (metric(text, "tfjob_report_tokenreviews_total{result=\"authenticated\"}") + \
		       metric(text, "tfjob_report_tokenreviews_total{result=\"unauthenticated\"}") + \
		       metric(text, "tfjob_report_tokenreviews_total{result=\"error\"}"))

static void run_flood(struct target *t, int threads, struct flooder *f)
{
	int i;

	for (i = 0; i < threads; i++) {
		memset(&f[i], 0, sizeof(f[i]));
		f[i].t = t;
		f[i].seed = (unsigned)tfj_test_rand();
		pthread_create(&f[i].th, NULL, flood_main, &f[i]);
	}
}

static int sum_status(struct flooder *f, int threads, grpc_status_code st)
{
	int i, n = 0;

	for (i = 0; i < threads; i++)
		n += f[i].by_status[st];
	return n;
}

static void test_flood(void)
{
	struct tfj_report_opts ro;
	struct rstack st;
	struct tfj_report *srv, *open_srv = NULL;
	struct flooder f[FLOOD_THREADS];
	struct agent ag;
	struct target t;
	int calls = 0;
	double base[LAT_JOBS], during[LAT_JOBS], t0, flood_s;
	char *tok = NULL, *m0 = NULL, *m1 = NULL, *m2 = NULL, name[32];
	unsigned long long reviews;
	int i, refused;

	memset(&t, 0, sizeof(t));
	TFJ_CHECK_OK(create_job(VICTIM));
	memset(&ro, 0, sizeof(ro));
	ro.threads = 2;
	ro.peer_qps = PEER_QPS;
	ro.peer_burst = PEER_BURST;
	/* The reviewer on its own client and budget, as main.c sets it up. */
	if (rs_start(&st, K, KR, NS, MANAGER, AUD, &ro))
		goto out;
	srv = st.srv;
	tfj_tokenreviewer_limit(st.hub.tr, REVIEW_QPS, REVIEW_BURST);
	t.port = tfj_report_port(srv);
	TFJ_CHECK(it_wait(has_pod, VICTIM, 60));
	uid_of(t.job_uid, sizeof(t.job_uid), "tfjobs", VICTIM);
	uid_of(t.pod_uid, sizeof(t.pod_uid), "pods", VICTIM "-worker-0");
	TFJ_CHECK_OK(it_token(&tok, K, NS, AUD, VICTIM "-worker-0", t.pod_uid));
	if (!tok)
		goto out;

	/* Without a flood: new jobs get their pods. */
	memset(&ag, 0, sizeof(ag));
	ag.t = &t;
	ag.tok = tok;
	for (i = 0; i < LAT_JOBS; i++) {
		snprintf(name, sizeof(name), "quiet-%d", i);
		base[i] = pod_latency(name);
		TFJ_CHECK_GE(base[i], 0.0);
	}
	/*
	 * The agent is accepted: its token verified (and cached) just before
	 * the flood, as a running agent's would be.
	 */
	{
		grpc_channel *ch = rc_channel(t.port);
		Tfj__Report__V1__HeartbeatRequest hb = TFJ__REPORT__V1__HEARTBEAT_REQUEST__INIT;
		Tfj__Report__V1__ReplicaRef ref;

		rc_ref(&ref, NS, VICTIM, t.job_uid, "worker", 0, VICTIM "-worker-0");
		hb.replica = &ref;
		TFJ_CHECK_INT(rc_call(ch, TFJ_REPORT_PATH_HEARTBEAT, &hb.base, NULL, 0, tok, NULL),
			      GRPC_STATUS_OK);
		grpc_channel_destroy(ch);
	}
	m0 = metrics_text(srv, st.hub.tr);

	/* 1. The flood, the agent, and new jobs at the same time. */
	t.kinds = 5;
	t.calls = FLOOD_CALLS / FLOOD_THREADS;
	t.until = 1; /* the flood lasts until the new jobs have their pods */
	t0 = tfj_testutil_now_s();
	pthread_create(&ag.th, NULL, agent_main, &ag);
	run_flood(&t, FLOOD_THREADS, f);
	for (i = 0; i < LAT_JOBS; i++) {
		snprintf(name, sizeof(name), "flood-%d", i);
		during[i] = pod_latency(name);
		TFJ_CHECK_GE(during[i], 0.0);
	}
	t.until = 0;
	for (i = 0; i < FLOOD_THREADS; i++) {
		pthread_join(f[i].th, NULL);
		calls += f[i].made;
	}
	TFJ_CHECK_GE(calls, FLOOD_CALLS);
	flood_s = tfj_testutil_now_s() - t0;
	ag.stop = 1;
	pthread_join(ag.th, NULL);
	m1 = metrics_text(srv, st.hub.tr);
	reviews = REVIEWS(m1) - REVIEWS(m0);
	refused = calls - sum_status(f, FLOOD_THREADS, GRPC_STATUS_OK);
	fprintf(stderr, "flood: %d calls in %.1f s; TokenReviews %llu; peer_limited %llu; "
		"refused locally: malformed %llu expired %llu audience %llu pod_unknown %llu; "
		"agent heartbeats ok %d refused %d\n",
		calls, flood_s, reviews,
		metric(m1, "tfjob_report_rejected_total{reason=\"peer_limited\"}"),
		metric(m1, "tfjob_report_token_local_rejected_total{reason=\"malformed\"}"),
		metric(m1, "tfjob_report_token_local_rejected_total{reason=\"expired\"}"),
		metric(m1, "tfjob_report_token_local_rejected_total{reason=\"audience\"}"),
		metric(m1, "tfjob_report_token_local_rejected_total{reason=\"pod_unknown\"}"),
		ag.ok, ag.refused);
	fprintf(stderr, "pod creation latency of a new TFJob: quiet %.3f %.3f %.3f s (median "
		"%.3f), during the flood %.3f %.3f %.3f s (median %.3f)\n",
		base[0], base[1], base[2], median3(base), during[0], during[1], during[2],
		median3(during));
	/* Every garbage call refused. */
	TFJ_CHECK_INT(refused, calls);
	/*
	 * Bounded: after PEER_BURST refusals the address gets PEER_QPS looks
	 * a second, and only the plausible ones among them cost a review. Twice
	 * the rate for slack; nothing near the 10,000 calls.
	 */
	TFJ_CHECK_LE(reviews, (unsigned long long)(PEER_BURST + 2 * PEER_QPS * flood_s + 5));
	TFJ_CHECK_GE(metric(m1, "tfjob_report_rejected_total{reason=\"peer_limited\"}"),
		     (unsigned long long)calls / 2);
	/* The agent on the same address was never refused: its token is verified. */
	TFJ_CHECK_GE(ag.ok, 1);
	TFJ_CHECK_INT(ag.refused, 0);
	/*
	 * The controller kept working: each new job got its pod. A generous
	 * bound (the flood's calls share the two cores with the controller).
	 */
	TFJ_CHECK_LE(median3(during), 10 * median3(base) + 5.0);

	/* 2. No peer limit: the local checks and the review budget alone. */
	ro.peer_qps = 1e9;
	ro.peer_burst = 1000000000;
	if (!(open_srv = rs_another(&st, &ro)))
		goto out;
	t.port = tfj_report_port(open_srv);
	t.kinds = 4;                     /* all that the local checks refuse */
	t.calls = 2000 / FLOOD_THREADS;
	run_flood(&t, FLOOD_THREADS, f);
	for (i = 0; i < FLOOD_THREADS; i++)
		pthread_join(f[i].th, NULL);
	m2 = metrics_text(open_srv, st.hub.tr);
	fprintf(stderr, "no peer limit, 2000 locally refusable tokens: TokenReviews %llu\n",
		REVIEWS(m2) - REVIEWS(m1));
	TFJ_CHECK_EQ(REVIEWS(m2) - REVIEWS(m1), 0ull);
	TFJ_CHECK_INT(sum_status(f, FLOOD_THREADS, GRPC_STATUS_OK), 0);
	free(m1);
	m1 = m2;
	/* Plausible forged tokens: at most the review burst plus the rate. */
	t.kinds = 5;
	t0 = tfj_testutil_now_s();
	run_flood(&t, FLOOD_THREADS, f);
	for (i = 0; i < FLOOD_THREADS; i++)
		pthread_join(f[i].th, NULL);
	flood_s = tfj_testutil_now_s() - t0;
	m2 = metrics_text(open_srv, st.hub.tr);
	reviews = REVIEWS(m2) - REVIEWS(m1);
	fprintf(stderr, "no peer limit, 2000 tokens (1 in 5 plausible) in %.1f s: TokenReviews "
		"%llu, throttled %llu\n", flood_s, reviews,
		metric(m2, "tfjob_report_tokenreview_throttled_total"));
	TFJ_CHECK_LE(reviews, (unsigned long long)(REVIEW_BURST + 2 * REVIEW_QPS * flood_s + 5));
	TFJ_CHECK_GE(metric(m2, "tfjob_report_tokenreview_throttled_total"), 1ull);
	TFJ_CHECK_INT(sum_status(f, FLOOD_THREADS, GRPC_STATUS_OK), 0);
	/* Every TokenReview answered went over the reviewer's own client. */
	TFJ_CHECK_EQ(tfj_kube_count(KR, TFJ_KUBE_POST, 201),
		     metric(m2, "tfjob_report_tokenreviews_total{result=\"authenticated\"}") +
		     metric(m2, "tfjob_report_tokenreviews_total{result=\"unauthenticated\"}"));
out:
	tfj_report_stop(open_srv);
	rs_stop(&st);
	if (tok)
		explicit_bzero(tok, strlen(tok));
	free(tok);
	free(m0);
	free(m1);
	free(m2);
}

int main(void)
{
	struct tfj_kubeconfig kc;
	struct tfj_kube_opts ko = { REVIEW_QPS, REVIEW_BURST, 10000, 0, 60, "tfjob-itest-review" };
	int rc;

	tfj_log_set_component("itest");
	rc = it_start(&K, KC, sizeof(KC), NS, sizeof(NS), "flood");
	if (rc)
		return rc;
	if (tfj_kubeconfig_load_file(&kc, KC) || tfj_kube_new(&KR, &kc, &ko)) {
		fprintf(stderr, "review client: %s\n", tfj_err_detail());
		it_finish(K, NS);
		return 1;
	}
	tfj_kubeconfig_free(&kc);
	grpc_init();
	TFJ_RUN(test_flood);
	grpc_shutdown();
	tfj_kube_free(KR);
	return it_finish(K, NS);
}
