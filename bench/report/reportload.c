/*
 * reportload.c - tfj-bench-reportload, the report channel's load test
 * (issue #28, docs/benchmarks.md "Report channel under load").
 *
 * Against the test bed's real API server: TFJobs whose worker pods never
 * start (pinned to a node that does not exist), one token per pod from the
 * TokenRequest API (audience tfjob-report, bound to the pod object), and
 * the operator's report side as main.c wires it (report_stack.h: the
 * controller, the reviewer on a client of its own with main.c's default
 * TokenReview budget, the issuer's keys, the report server with its
 * default limits). Then every token sends a Heartbeat once per period from
 * a pool of client channels to 127.0.0.1, while forgers send tokens signed
 * by another key under the real kid, naming real pods, to ::1, or with
 * --shared-peer 1 to 127.0.0.1 too (agents behind the attacker's address).
 *
 * The clients run in a child process forked before anything else starts,
 * so this process's CPU time (getrusage) is the operator side alone. The
 * parent passes the port, namespace and tokens over a pipe; the child answers "S"
 * when the warm-up ends and one JSON object of its counts at the end.
 * Output: one JSON object on stdout. Exit 0 when no valid call was refused
 * and no TokenReview was sent in the steady phase, 1 otherwise, 77 without
 * a test bed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tfj/clock.h>
#include <tfj/log.h>

#include "itest_common.h"
#include "loadgen.h"
#include "report_stack.h"

#define AUD "tfjob-report"
#define MANAGER "tfjob-bench.kubeflow.org/report-load"

#define JOB_FMT \
	"{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\"," \
	"\"metadata\":{\"name\":\"load-%d\",\"namespace\":\"%s\"}," \
	"\"spec\":{\"runPolicy\":{\"managedBy\":\"" MANAGER "\"},\"tfReplicaSpecs\":{" \
	"\"Worker\":{\"replicas\":%d,\"template\":{\"spec\":{" \
	"\"nodeSelector\":{\"tfjob-bench/no-such-node\":\"true\"}," \
	"\"containers\":[{\"name\":\"tensorflow\",\"image\":\"localhost/tfjob-bench:1\"}]}}}}}}"

static struct tfj_kube *K, *KR;
static char NS[64], KC[512];

/* The counters read at the start and the end of the steady phase. */
struct snap {
	double wall_s, cpu_s;
	unsigned long long reviews_posted, local_ok, cache_ok, review_ok, signature, peer_limited;
};

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

static void take(struct snap *s, struct rstack *st)
{
	struct rusage ru;
	struct tfj_buf m;
	const char *t;

	getrusage(RUSAGE_SELF, &ru);
	s->wall_s = (double)tfj_clock_mono_ns() / 1e9;
	s->cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		   (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	s->reviews_posted = tfj_kube_count(KR, TFJ_KUBE_POST, 201);
	tfj_buf_init(&m, 1 << 20);
	tfj_report_metrics(st->srv, &m);
	tfj_tokenreviewer_metrics(st->hub.tr, &m);
	t = tfj_buf_cstr(&m);
	s->local_ok = metric(t, "tfjob_report_auth_total{method=\"local\",result=\"ok\"}");
	s->cache_ok = metric(t, "tfjob_report_auth_total{method=\"cache\",result=\"ok\"}");
	s->review_ok = metric(t, "tfjob_report_auth_total{method=\"tokenreview\",result=\"ok\"}");
	s->signature = metric(t, "tfjob_report_token_local_rejected_total{reason=\"signature\"}");
	s->peer_limited = metric(t, "tfjob_report_rejected_total{reason=\"peer_limited\"}");
	tfj_buf_free(&m);
}

static int create_jobs(int jobs, int per_job)
{
	char path[256], body[2048];
	cJSON *o;
	int i, rc = 0;

	snprintf(path, sizeof(path), "/apis/kubeflow.org/v1/namespaces/%s/tfjobs", NS);
	for (i = 0; i < jobs && !rc; i++) {
		snprintf(body, sizeof(body), JOB_FMT, i, NS, per_job);
		o = cJSON_Parse(body);
		rc = o ? tfj_kube_create(K, NULL, path, o) : -1;
		cJSON_Delete(o);
	}
	return rc;
}

/* The uid of every pod into uids[job * per_job + index]; the number newly found, or -1. */
static int pod_uids(char (*uids)[64], int n, int per_job)
{
	char path[256];
	cJSON *l = NULL, *it;
	int found = 0;

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", NS);
	if (tfj_kube_list(K, &l, path))
		return -1;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(l, "items")) {
		cJSON *md = cJSON_GetObjectItem(it, "metadata");
		const char *nm = cJSON_GetStringValue(cJSON_GetObjectItem(md, "name"));
		const char *uid = cJSON_GetStringValue(cJSON_GetObjectItem(md, "uid"));
		char *end = NULL, *w;
		long job, idx, i;

		/* load-<job>-worker-<index> */
		if (!nm || !uid || strncmp(nm, "load-", 5) || strlen(uid) >= 64)
			continue;
		job = strtol(nm + 5, &end, 10);
		if (strncmp(end, "-worker-", 8))
			continue;
		w = end + 8;
		idx = strtol(w, &end, 10);
		if (*end || job < 0 || idx < 0 || idx >= per_job || job >= n / per_job)
			continue;
		i = job * per_job + idx;
		if (!uids[i][0]) {
			snprintf(uids[i], 64, "%s", uid);
			found++;
		}
	}
	cJSON_Delete(l);
	return found;
}

static int job_uids(char (*uids)[64], int jobs)
{
	char name[64];
	const char *u;

	for (int j = 0; j < jobs; j++) {
		cJSON *o;

		snprintf(name, sizeof(name), "load-%d", j);
		o = it_get(K, NS, "tfjobs", name);
		u = o ? cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"),
								 "uid")) : NULL;
		snprintf(uids[j], 64, "%s", u ? u : "");
		cJSON_Delete(o);
		if (!u)
			return -1;
	}
	return 0;
}

struct podwait {
	char (*uids)[64];
	int n, per_job, have;
};

/* it_wait's condition, polled once a second: listing 1,000 pods is not free. */
static int all_pods(void *ud)
{
	struct podwait *w = ud;
	int got = pod_uids(w->uids, w->n, w->per_job);

	if (got > 0)
		w->have += got;
	if (w->have < w->n)
		sleep(1);
	return w->have == w->n;
}

/* Mints the tokens and sends the child its work: "P port", "P port ns", "T job uid idx token", "E". */
static int feed_child(FILE *to, const struct tfj_loadgen_opts *o, int port, int per_job,
		      char (*uids)[64], char (*job_uids)[64])
{
	char pod[64];
	char *tok = NULL;
	int i, rc = 0;

	fprintf(to, "P %d %s\n", port, NS);
	for (i = 0; i < o->tokens && !rc; i++) {
		snprintf(pod, sizeof(pod), "load-%d-worker-%d", i / per_job, i % per_job);
		rc = it_token(&tok, K, NS, AUD, pod, uids[i]);
		if (!rc)
			fprintf(to, "T load-%d %s %d %s\n", i / per_job, job_uids[i / per_job],
				i % per_job, tok);
		if (tok)
			explicit_bzero(tok, strlen(tok));
		free(tok);
		tok = NULL;
	}
	fprintf(to, "E\n");
	fflush(to);
	return rc;
}

/* One JSON object: the steady phase (a to b), the whole run's totals (b), the clients'. */
static void print_result(const struct tfj_loadgen_opts *o, const struct snap *a,
			 const struct snap *b, const char *clients)
{
	double wall = b->wall_s - a->wall_s, cpu = b->cpu_s - a->cpu_s;

	printf("{\"tokens\":%d,\"period_s\":%d,\"forgers\":%d,\"forger_qps\":%g,"
	       "\"seconds\":%d,\"warmup_s\":%d,\"client_threads\":%d,\"shared_peer\":%d,\n"
	       " \"steady_wall_s\":%.2f,\"operator_cpu_s\":%.3f,\"operator_cpu_pct_of_core\":%.2f,\n"
	       " \"tokenreviews_total\":%llu,\"tokenreviews_steady\":%llu,\"auth_local_ok\":%llu,"
	       "\"auth_local_ok_steady\":%llu,\"auth_cache_ok_steady\":%llu,"
	       "\"auth_tokenreview_ok\":%llu,\n"
	       " \"forged_refused_signature\":%llu,\"peer_limited\":%llu,\n"
	       " \"clients\":%s}\n",
	       o->tokens, o->period_s, o->forgers, o->forger_qps, o->seconds, o->warmup_s,
	       o->threads, o->shared_peer, wall, cpu, wall > 0 ? 100 * cpu / wall : 0,
	       b->reviews_posted, b->reviews_posted - a->reviews_posted, b->local_ok,
	       b->local_ok - a->local_ok, b->cache_ok - a->cache_ok, b->review_ok, b->signature,
	       b->peer_limited, clients);
	fflush(stdout);
}

/*
 * The operator side: jobs, pods, tokens, the report stack; the steady
 * phase's counters when the child says so. Returns the exit code.
 */
static int serve(const struct tfj_loadgen_opts *o, int per_job, FILE *to, FILE *from)
{
	struct tfj_report_opts ro = { 0 };
	struct rstack st;
	struct snap a, b;
	struct podwait w = { 0 };
	char (*juids)[64] = NULL;
	char *line = NULL;
	size_t cap = 0;
	int rc = 1, ok = 0;

	w.n = o->tokens;
	w.per_job = per_job;
	w.uids = calloc((size_t)o->tokens, 64);
	juids = calloc((size_t)(o->tokens / per_job), 64);
	memset(&st, 0, sizeof(st));
	if (!w.uids || !juids || create_jobs(o->tokens / per_job, per_job))
		goto out;
	/*
	 * Every interface, as the operator's ":9443": the only way one server
	 * sees two loopback addresses (agents call 127.0.0.1, forgers ::1).
	 * Plaintext, for the run's few minutes, serving a throwaway namespace.
	 */
	ro.addr = ":0";
	if (rs_start(&st, K, KR, NS, MANAGER, AUD, &ro))
		goto out;
	rs_use_issuer(&st, KR);
	tfj_tokenreviewer_limit(st.hub.tr, 5, 20); /* main.c's defaults (--tokenreview-qps/-burst) */
	if (!it_wait(all_pods, &w, 60) || job_uids(juids, o->tokens / per_job)) {
		fprintf(stderr, "reportload: only %d of %d pods; gave up\n", w.have, w.n);
		goto out;
	}
	fprintf(stderr, "reportload: %d pods exist; minting tokens\n", w.n);
	if (feed_child(to, o, tfj_report_port(st.srv), per_job, w.uids, juids))
		goto out;
	fclose(to);
	to = NULL;
	if (getline(&line, &cap, from) < 1 || line[0] != 'S')
		goto out;
	take(&a, &st);
	if (getline(&line, &cap, from) < 1 || line[0] != '{')
		goto out;
	take(&b, &st);
	print_result(o, &a, &b, line);
	ok = b.reviews_posted == a.reviews_posted && strstr(line, "\"valid_refused\":0,");
	rc = ok ? 0 : 1;
out:
	if (to)
		fclose(to);
	rs_stop(&st);
	free(line);
	free(w.uids);
	free(juids);
	return rc;
}

static int parse_args(struct tfj_loadgen_opts *o, int *per_job, int argc, char **argv)
{
	for (int i = 1; i + 1 < argc; i += 2) {
		char *end = NULL;
		double v;

		errno = 0;
		v = strtod(argv[i + 1], &end);
		if (errno || !end || *end || v < 0 || v > 100000)
			return -1;
		if (!strcmp(argv[i], "--tokens")) o->tokens = (int)v;
		else if (!strcmp(argv[i], "--per-job")) *per_job = (int)v;
		else if (!strcmp(argv[i], "--period-s")) o->period_s = (int)v;
		else if (!strcmp(argv[i], "--forgers")) o->forgers = (int)v;
		else if (!strcmp(argv[i], "--forger-qps")) o->forger_qps = v;
		else if (!strcmp(argv[i], "--seconds")) o->seconds = (int)v;
		else if (!strcmp(argv[i], "--warmup-s")) o->warmup_s = (int)v;
		else if (!strcmp(argv[i], "--threads")) o->threads = (int)v;
		else if (!strcmp(argv[i], "--shared-peer")) o->shared_peer = v != 0;
		else return -1;
	}
	if (argc % 2 == 0 || o->tokens < 1 || *per_job < 1 || o->tokens % *per_job ||
	    o->period_s < 1 || o->threads < 1 || o->threads > 64 || o->forgers > 64 ||
	    o->seconds <= o->warmup_s || o->forgers > o->tokens)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct tfj_loadgen_opts o = { 1000, 5, 8, 2.0, 180, 15, 8, 0 };
	int per_job = 50, to_child[2], from_child[2], rc, status = 0;
	FILE *to, *from;
	int handed = 0;
	struct tfj_kubeconfig kc;
	struct tfj_kube_opts ko = { 5, 20, 10000, 0, 60, "tfjob-bench-review" };
	pid_t pid;

	if (parse_args(&o, &per_job, argc, argv)) {
		fprintf(stderr, "usage: %s [--tokens 1000] [--per-job 50] [--period-s 5] "
			"[--forgers 8] [--forger-qps 2] [--seconds 180] [--warmup-s 15] "
			"[--threads 8] [--shared-peer 0|1]\n", argv[0]);
		return 2;
	}
	/* The clients' process, forked while this one has no threads yet. */
	if (pipe(to_child) || pipe(from_child) || (pid = fork()) < 0)
		return 1;
	if (pid == 0) {
		close(to_child[1]);
		close(from_child[0]);
		_exit(tfj_loadgen_run(&o, fdopen(to_child[0], "r"), fdopen(from_child[1], "w")));
	}
	close(to_child[0]);
	close(from_child[1]);
	to = fdopen(to_child[1], "w");
	from = fdopen(from_child[0], "r");
	tfj_log_set_component("bench");
	rc = it_start(&K, KC, sizeof(KC), NS, sizeof(NS), "load");
	if (rc || !to || !from) {
		rc = rc ? rc : 1;
		goto reap;
	}
	rc = 1;
	if (tfj_kubeconfig_load_file(&kc, KC) || tfj_kube_new(&KR, &kc, &ko)) {
		fprintf(stderr, "review client: %s\n", tfj_err_detail());
	} else {
		tfj_kubeconfig_free(&kc);
		grpc_init();
		rc = serve(&o, per_job, to, from);
		handed = 1; /* serve closed `to` */
		grpc_shutdown();
	}
	tfj_kube_free(KR);
	it_delete_ns(K, NS);
	tfj_kube_free(K);
reap:
	/* The child ends on its input's end, whatever happened here. */
	if (!to)
		close(to_child[1]);
	else if (!handed)
		fclose(to);
	if (from)
		fclose(from);
	waitpid(pid, &status, 0);
	return rc;
}
