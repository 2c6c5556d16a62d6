/*
 * itest_stream.c - protocol v2 (one stream per worker and ps, psframe.h)
 * over real gRPC on 127.0.0.1, and its compatibility with v1:
 *
 *  1. By default (--protocol auto) every Pull and Push of a training run
 *     travels over the streams: each worker's client counts its requests
 *     per protocol (psclient's closing log line) and only the negotiating
 *     Status calls are unary; each ps counts the streams and frames.
 *  2. --protocol 1 on every task: no stream is opened, everything is unary.
 *  3. A v1-only ps (--protocol 1, as an old ps) with an auto worker: the
 *     worker learns from Status that the ps has no stream and trains over
 *     unary calls.
 *  4. The client API (psclient) against one ps: forced to v2, a v1-only ps
 *     refuses the stream at once (UNIMPLEMENTED: the ps answers methods it
 *     lacks instead of leaving them waiting); auto, a Pull before any
 *     Status negotiates first and goes unary to a v1 ps, over the stream
 *     to a v2 ps; when that v2 ps comes back on the same port as a v1-only
 *     one, the broken stream makes the client ask again and go on unary.
 *  5. The job's secret on the stream's initial metadata: a client without
 *     it or with a wrong one is refused (TFJ_EAUTH from UNAUTHENTICATED)
 *     and the ps counts and logs the refusal as for a unary call; one with
 *     it is served over the stream.
 *  6. A ps killed mid-run (SIGKILL at global step 1500 of 6000): the
 *     workers' and the chief's streams to it break, the step is retried by
 *     the usual rules, the streams are opened again to the restarted ps and
 *     training ends at max_steps with a usable model.
 */
#include "itest_util.h"

#include <inttypes.h>

#include <grpc/grpc.h>

#include <tfj/err.h>
#include <tfj/exitcode.h>

#include "psauth.h"
#include "psclient.h"
#include "rtconfig.h"

#define SECRET "7f3c9a0d1e2b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5"
#define OTHER "00000000000000000000000000000000000000000000000000000000000000ff"

static char dir[128], good[256], bad[256], env_good[300];
static char ps[64], wk[64];

/*
 * The first line of `task` ("[worker:0]") in `out` that contains `needle`:
 * a pointer to the needle within `line`, or NULL.
 */
static const char *task_line(char *line, size_t cap, FILE *out, const char *task,
			     const char *needle)
{
	const char *p;

	rewind(out);
	while (fgets(line, (int)cap, out))
		if (strncmp(line, task, strlen(task)) == 0 && (p = strstr(line, needle)))
			return p;
	return NULL;
}

/* The counters of psclient's closing line for `task`; -1 when absent. */
struct counts {
	long long frames, unary, status, opened, fallbacks;
};

static struct counts client_counts(FILE *out, const char *task)
{
	struct counts c = { -1, -1, -1, -1, -1 };
	char line[4096];
	const char *p = task_line(line, sizeof(line), out, task, "psclient: ");

	if (p && sscanf(p, "psclient: %lld requests over streams (protocol v2), %lld unary "
			"calls (v1) besides %lld unary Status, %lld streams opened, %lld fell back",
			&c.frames, &c.unary, &c.status, &c.opened, &c.fallbacks) != 5)
		c.frames = c.unary = c.status = c.opened = c.fallbacks = -1;
	return c;
}

/* The stream counters of a ps's closing line; -1 when absent. */
static void ps_counts(FILE *out, const char *task, long long *streams, long long *frames)
{
	char line[4096];
	const char *p = task_line(line, sizeof(line), out, task, ", streams ");

	if (!p || sscanf(p, ", streams %lld, stream frames %lld", streams, frames) != 2)
		*streams = *frames = -1;
}

static void train(struct tfj_launch_result *r, FILE *out, int nps, int nworkers, int chief,
		  const char *kill, int64_t at_step, char *const *flags)
{
	TFJ_CHECK_INT(itest_launch_to(r, out, nps, nworkers, chief, 0, kill, at_step, flags), 0);
	printf("exit %d, restarts %d, step %lld, accuracy %.4f, %.0f examples/s, %.1f s\n",
	       r->exit_code, r->restarts, (long long)r->step, r->test_accuracy,
	       r->examples_per_sec, r->wall_s);
	TFJ_CHECK_INT(r->exit_code, 0);
	TFJ_CHECK(r->have_final);
}

static void test_v2_by_default(void)
{
	char *flags[] = { "--model", "softmax", "--max_steps", "1000", NULL };
	struct tfj_launch_result r;
	struct counts c;
	long long streams, frames;
	FILE *out = tmpfile();
	int w;

	TFJ_CHECK_NOT_NULL(out);
	if (!out)
		return;
	train(&r, out, 2, 2, 0, NULL, 0, flags);
	TFJ_CHECK_GE(r.test_accuracy, 0.7);
	for (w = 0; w < 2; w++) {
		c = client_counts(out, w ? "[worker:1]" : "[worker:0]");
		printf("worker:%d: %lld frames, %lld unary, %lld Status, %lld streams, %lld "
		       "fallbacks\n", w, c.frames, c.unary, c.status, c.opened, c.fallbacks);
		TFJ_CHECK_GT(c.frames, 100);  /* every Pull and Push */
		TFJ_CHECK_EQ(c.unary, 0);
		/* Status to each ps, the negotiation (again while a ps awaits its Init). */
		TFJ_CHECK_GE(c.status, 2);
		TFJ_CHECK_EQ(c.opened, 2);     /* one stream per ps, kept the whole run */
		TFJ_CHECK_EQ(c.fallbacks, 0);
	}
	ps_counts(out, "[ps:1]", &streams, &frames);
	TFJ_CHECK_EQ(streams, 2);
	TFJ_CHECK_GT(frames, 100);
	fclose(out);
}

static void test_v1_forced(void)
{
	char *flags[] = { "--model", "softmax", "--max_steps", "1000", "--protocol", "1", NULL };
	struct tfj_launch_result r;
	struct counts c;
	long long streams, frames;
	FILE *out = tmpfile();

	TFJ_CHECK_NOT_NULL(out);
	if (!out)
		return;
	train(&r, out, 2, 2, 0, NULL, 0, flags);
	TFJ_CHECK_GE(r.test_accuracy, 0.7);
	c = client_counts(out, "[worker:1]");
	TFJ_CHECK_EQ(c.frames, 0);
	TFJ_CHECK_GT(c.unary, 100);
	TFJ_CHECK_GE(c.status, 2);
	TFJ_CHECK_EQ(c.opened, 0);
	ps_counts(out, "[ps:0]", &streams, &frames);
	TFJ_CHECK_EQ(streams, 0);
	TFJ_CHECK_EQ(frames, 0);
	fclose(out);
}

/* Lines of file `path` containing `needle`. */
static int file_count(const char *path, const char *needle)
{
	char line[4096];
	FILE *f = fopen(path, "r");
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, needle))
			n++;
	fclose(f);
	return n;
}

static pid_t spawn(char *const *args, char *env_kv, const char *out, const char *err)
{
	return itest_spawn_env(args, env_kv, out, err);
}

static void test_v1_only_ps_auto_worker(void)
{
	char *ps_args[] = { "train", "--job_name", "ps", "--ps_hosts", ps, "--worker_hosts", wk,
			    "--model", "softmax", "--bind_address", "127.0.0.1", "--protocol", "1",
			    "--ps_linger", "1", NULL };
	char *wk_args[] = { "train", "--job_name", "worker", "--ps_hosts", ps, "--worker_hosts",
			    wk, "--model", "softmax", "--max_steps", "300", "--peer_timeout", "60",
			    NULL };
	char out[256], err[256];
	pid_t p, w;

	snprintf(out, sizeof(out), "%s/w1.out", dir);
	snprintf(err, sizeof(err), "%s/w1.err", dir);
	p = spawn(ps_args, NULL, "/dev/null", "/dev/null");
	TFJ_CHECK_GT(p, 0);
	w = spawn(wk_args, NULL, out, err);
	TFJ_CHECK_GT(w, 0);
	TFJ_CHECK_INT(tfj_testutil_wait(w, 300), TFJ_EXIT_OK);
	TFJ_CHECK_INT(tfj_testutil_wait(p, 120), TFJ_EXIT_OK);
	/* Negotiated, not discovered by a refused stream. */
	TFJ_CHECK_EQ(file_count(err, "protocol v1 (unary calls; the ps has no stream)") +
		     file_count(out, "protocol v1 (unary calls; the ps has no stream)"), 1);
	TFJ_CHECK_EQ(file_count(err, "psclient: 0 requests over streams") +
		     file_count(out, "psclient: 0 requests over streams"), 1);
	TFJ_CHECK_EQ(file_count(err, "requests over streams (protocol v2), 0 unary") +
		     file_count(out, "requests over streams (protocol v2), 0 unary"), 0);
	TFJ_CHECK_EQ(file_count(err, "0 streams opened, 0 fell back") +
		     file_count(out, "0 streams opened, 0 fell back"), 1);
}

/* A client of one ps (`ps`) with --protocol `proto`. */
static struct tfj_psclient *client(struct tfj_rtconfig *cfg, const char *proto)
{
	char *args[] = { "--job_name", "worker", "--ps_hosts", ps, "--worker_hosts", wk,
			 "--model", "softmax", "--protocol", (char *)proto, NULL };
	struct tfj_psclient *cl = NULL;

	if (tfj_rtconfig_parse(cfg, 10, args, NULL) != 0) {
		TFJ_CHECK_OK(-1);
		return NULL;
	}
	TFJ_CHECK_OK(tfj_psclient_new(&cl, cfg));
	return cl;
}

/* One call of `method` with an empty request of its type; the psclient's code. */
static int call(struct tfj_psclient *cl, enum tfj_rpc_method method)
{
	Tfj__Runtime__V1__StatusRequest sq = TFJ__RUNTIME__V1__STATUS_REQUEST__INIT;
	Tfj__Runtime__V1__PullRequest pq = TFJ__RUNTIME__V1__PULL_REQUEST__INIT;
	const ProtobufCMessage *req[1];
	ProtobufCMessage *resp[1];

	/* A Pull with layout hash 0: FAILED_PRECONDITION (TFJ_ECONFLICT) once it reaches the ps. */
	req[0] = method == TFJ_RPC_PULL ? &pq.base : &sq.base;
	return tfj_psclient_call(cl, method, req, resp, 10);
}

/* Waits until the ps answers Status (anything but TFJ_EUNAVAIL); returns its last code. */
static int wait_ps(struct tfj_psclient *cl)
{
	int i, rc = TFJ_EUNAVAIL;

	for (i = 0; i < 300 && rc == TFJ_EUNAVAIL; i++) {
		rc = call(cl, TFJ_RPC_STATUS);
		if (rc == TFJ_EUNAVAIL)
			tfj_grpc_idle_ms(100);
	}
	return rc;
}

/* A ps with --protocol `proto`; its output to out/err (NULL: discarded). */
static pid_t start_ps_to(const char *proto, char *env_kv, const char *out, const char *err)
{
	char *ps_args[] = { "train", "--job_name", "ps", "--ps_hosts", ps, "--worker_hosts", wk,
			    "--model", "softmax", "--bind_address", "127.0.0.1", "--protocol",
			    (char *)proto, NULL };

	return spawn(ps_args, env_kv, out ? out : "/dev/null", err ? err : "/dev/null");
}

static pid_t start_ps(const char *proto, char *env_kv)
{
	return start_ps_to(proto, env_kv, NULL, NULL);
}

static void stop_ps(pid_t pid)
{
	tfj_testutil_kill(pid, SIGTERM);
	TFJ_CHECK_INT(tfj_testutil_wait(pid, 60), TFJ_EXIT_ABORTED);
}

static void test_client_negotiation(void)
{
	struct tfj_rtconfig ca, cf;
	struct tfj_psclient *auto_cl = NULL, *v2_cl = NULL;
	struct tfj_psclient_stats st;
	pid_t pid = start_ps("1", NULL);

	TFJ_CHECK_GT(pid, 0);
	auto_cl = client(&ca, "auto");
	v2_cl = client(&cf, "2");
	if (!auto_cl || !v2_cl)
		goto out;
	/*
	 * Forced v2 against a v1 ps: refused at once (UNIMPLEMENTED), no
	 * fallback. This also waits for the ps to listen.
	 */
	TFJ_CHECK_INT(wait_ps(v2_cl), TFJ_EINTERNAL);
	TFJ_CHECK(strstr(tfj_err_detail(), "UNIMPLEMENTED") != NULL);
	tfj_psclient_get_stats(&st, v2_cl);
	TFJ_CHECK_EQ(st.fallbacks, 0);
	TFJ_CHECK_EQ(st.unary + st.status_unary, 0);
	TFJ_CHECK_EQ(st.frames, 0);
	/* Auto: a Pull before any Status negotiates first (unary Status), then goes unary. */
	TFJ_CHECK_INT(call(auto_cl, TFJ_RPC_PULL), TFJ_ECONFLICT);
	TFJ_CHECK_INT(call(auto_cl, TFJ_RPC_PULL), TFJ_ECONFLICT);
	tfj_psclient_get_stats(&st, auto_cl);
	TFJ_CHECK_EQ(st.unary, 2);
	TFJ_CHECK_EQ(st.status_unary, 1);
	TFJ_CHECK_EQ(st.streams_opened, 0);
	TFJ_CHECK_EQ(st.frames, 0);
	stop_ps(pid);
	tfj_psclient_free(auto_cl);
	auto_cl = NULL;
	tfj_rtconfig_free(&ca);

	/* A v2 ps: Status negotiates, the Pull then goes over the stream. */
	pid = start_ps("auto", NULL);
	TFJ_CHECK_GT(pid, 0);
	auto_cl = client(&ca, "auto");
	if (!auto_cl)
		goto out;
	TFJ_CHECK_OK(wait_ps(auto_cl));
	TFJ_CHECK_INT(call(auto_cl, TFJ_RPC_PULL), TFJ_ECONFLICT);
	TFJ_CHECK(strstr(tfj_err_detail(), "over the stream") != NULL);
	tfj_psclient_get_stats(&st, auto_cl);
	TFJ_CHECK_EQ(st.frames, 1);
	TFJ_CHECK_EQ(st.streams_opened, 1);
	/*
	 * The ps goes away and comes back on the same port as a v1-only ps:
	 * the broken stream makes the client ask again, and it goes on unary.
	 */
	stop_ps(pid);
	pid = start_ps("1", NULL);
	TFJ_CHECK_GT(pid, 0);
	TFJ_CHECK_INT(wait_ps(v2_cl), TFJ_EINTERNAL); /* listening again */
	TFJ_CHECK_INT(call(auto_cl, TFJ_RPC_PULL), TFJ_ECONFLICT);
	TFJ_CHECK(strstr(tfj_err_detail(), "over the stream") == NULL);
	tfj_psclient_get_stats(&st, auto_cl);
	TFJ_CHECK_EQ(st.frames, 1);
	TFJ_CHECK_EQ(st.streams_opened, 1);
	TFJ_CHECK_EQ(st.unary, 1);
	TFJ_CHECK_GE(st.status_unary, 2);
out:
	tfj_psclient_free(auto_cl);
	tfj_psclient_free(v2_cl);
	tfj_rtconfig_free(&ca);
	tfj_rtconfig_free(&cf);
	stop_ps(pid);
}

/* A forced-v2 client reading the secret from `file` (NULL: none) calls Status. */
static int status_with_secret(const char *file, struct tfj_psclient_stats *st)
{
	struct tfj_rtconfig cfg;
	struct tfj_psclient *cl;
	int rc;

	if (file)
		setenv(TFJ_PSAUTH_ENV, file, 1);
	else
		unsetenv(TFJ_PSAUTH_ENV);
	cl = client(&cfg, "2");
	unsetenv(TFJ_PSAUTH_ENV);
	if (!cl) {
		tfj_rtconfig_free(&cfg);
		return -1;
	}
	rc = wait_ps(cl);
	tfj_psclient_get_stats(st, cl);
	tfj_psclient_free(cl);
	tfj_rtconfig_free(&cfg);
	return rc;
}

static void test_secret_on_the_stream(void)
{
	struct tfj_psclient_stats st;
	char out[256], err[256];
	pid_t pid;

	snprintf(out, sizeof(out), "%s/ps-secret.out", dir);
	snprintf(err, sizeof(err), "%s/ps-secret.err", dir);
	pid = start_ps_to("auto", env_good, out, err);
	TFJ_CHECK_GT(pid, 0);
	/* The good one first: it also waits for the ps to listen. */
	TFJ_CHECK_OK(status_with_secret(good, &st));
	TFJ_CHECK_EQ(st.frames, 1);
	TFJ_CHECK_EQ(st.unary + st.status_unary, 0);
	TFJ_CHECK_INT(status_with_secret(bad, &st), TFJ_EAUTH);
	TFJ_CHECK(strstr(tfj_err_detail(), "UNAUTHENTICATED") != NULL);
	TFJ_CHECK_EQ(st.frames, 0);
	TFJ_CHECK_INT(status_with_secret(NULL, &st), TFJ_EAUTH);
	TFJ_CHECK_OK(status_with_secret(good, &st));
	stop_ps(pid);
	/* Counted and logged by the ps like a refused unary call (the first refusal). */
	TFJ_CHECK_EQ(file_count(out, "refused a call without the job's secret") +
		     file_count(err, "refused a call without the job's secret"), 1);
	TFJ_CHECK_EQ(file_count(out, "(1 refused so far)") + file_count(err, "(1 refused so far)"),
		     1);
}

static void test_ps_killed_streams_reopen(void)
{
	char *flags[] = { "--model", "softmax", "--max_steps", "6000", "--learning_rate", "0.003",
			  "--peer_timeout", "60", NULL };
	struct tfj_launch_result r;
	struct counts c;
	FILE *out = tmpfile();

	TFJ_CHECK_NOT_NULL(out);
	if (!out)
		return;
	train(&r, out, 2, 2, 1, "ps:1", 1500, flags);
	TFJ_CHECK_GE(r.restarts, 1);
	TFJ_CHECK_GE(r.step, 6000);
	TFJ_CHECK_GT(r.test_accuracy, 0.75);
	/* The chief refilled the restarted ps and every client reopened its stream. */
	TFJ_CHECK_GE(itest_count_lines(out, "[chief:0]", "initialised 1 ps task(s)"), 1);
	c = client_counts(out, "[chief:0]");
	printf("chief: %lld frames, %lld unary, %lld Status, %lld streams, %lld fallbacks\n",
	       c.frames, c.unary, c.status, c.opened, c.fallbacks);
	TFJ_CHECK_GE(c.opened, 3);
	TFJ_CHECK_EQ(c.fallbacks, 0);
	TFJ_CHECK_GT(c.frames, 1000);
	TFJ_CHECK_EQ(c.unary, 0); /* back on the stream after asking the restarted ps */
	c = client_counts(out, "[worker:1]");
	TFJ_CHECK_GE(c.opened, 3);
	fclose(out);
}

int main(int argc, char **argv)
{
	FILE *f;

	ITEST_DISPATCH(argc, argv);
	if (tfj_testutil_tmpdir(dir, sizeof(dir), "tfj-itest-stream") != 0)
		return 1;
	snprintf(good, sizeof(good), "%s/good", dir);
	snprintf(bad, sizeof(bad), "%s/bad", dir);
	f = fopen(good, "wb");
	if (f) {
		fputs(SECRET "\n", f);
		fclose(f);
	}
	f = fopen(bad, "wb");
	if (f) {
		fputs(OTHER "\n", f);
		fclose(f);
	}
	snprintf(env_good, sizeof(env_good), "%s=%s", TFJ_PSAUTH_ENV, good);
	snprintf(ps, sizeof(ps), "127.0.0.1:%d", tfj_testutil_free_port());
	snprintf(wk, sizeof(wk), "127.0.0.1:%d", tfj_testutil_free_port());
	grpc_init();
	TFJ_RUN(test_client_negotiation);
	TFJ_RUN(test_secret_on_the_stream);
	grpc_shutdown();
	itest_require_data();
	TFJ_RUN(test_v2_by_default);
	TFJ_RUN(test_v1_forced);
	TFJ_RUN(test_v1_only_ps_auto_worker);
	TFJ_RUN(test_ps_killed_streams_reopen);
	tfj_testutil_rmtree(dir);
	return tfj_test_finish();
}
