/*
 * itest_stream.c - the transport (one stream per client and ps, frame.h)
 * over real gRPC on 127.0.0.1:
 *
 *  1. Every request of a training run travels over the streams: each
 *     worker's client counts its requests (psclient's closing log line),
 *     one stream per ps kept the whole run; each ps counts the streams and
 *     frames.
 *  2. The client API (psclient) against one ps: a Pull goes on the stream
 *     alone; tfj_psclient_ask() asks the ps's Status on it once; when the
 *     ps comes back on the same port, the broken stream makes the client
 *     forget what it was told, and asking again goes on a new stream. A
 *     unary call of a method is
 *     answered UNIMPLEMENTED at once (the ps serves the stream only, and
 *     answers methods it lacks instead of leaving them waiting).
 *  3. The job's secret on the stream's initial metadata: a client without
 *     it or with a wrong one is refused (TFJ_EAUTH from UNAUTHENTICATED)
 *     and the ps counts and logs the refusal; one with it is served.
 *  4. A ps killed mid-run (SIGKILL at global step 1500 of 6000): the
 *     workers' and the chief's streams to it break, the step is retried by
 *     the usual rules, the streams are opened again to the restarted ps and
 *     training ends at max_steps with a usable model.
 */
#include "itest_util.h"

#include <inttypes.h>

#include <grpc/grpc.h>

#include <tfj/err.h>
#include <tfj/exitcode.h>
#include <tfj/grpc.h>

#include "wire/psauth.h"
#include "worker/psclient.h"
#include "wire/rpcnames.h"
#include "task/rtconfig.h"

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
	long long frames, opened;
};

static struct counts client_counts(FILE *out, const char *task)
{
	struct counts c = { -1, -1 };
	char line[4096];
	const char *p = task_line(line, sizeof(line), out, task, "psclient: ");

	if (p && sscanf(p, "psclient: %lld requests over streams, %lld streams opened",
			&c.frames, &c.opened) != 2)
		c.frames = c.opened = -1;
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

static void test_training_over_streams(void)
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
		printf("worker:%d: %lld frames, %lld streams\n", w, c.frames, c.opened);
		TFJ_CHECK_GT(c.frames, 100);  /* every Pull and Push */
		TFJ_CHECK_EQ(c.opened, 2);     /* one stream per ps, kept the whole run */
	}
	ps_counts(out, "[ps:1]", &streams, &frames);
	TFJ_CHECK_EQ(streams, 2);
	TFJ_CHECK_GT(frames, 100);
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

/* A client of one ps (`ps`). */
static struct tfj_psclient *client(struct tfj_rtconfig *cfg)
{
	char *args[] = { "--job_name", "worker", "--ps_hosts", ps, "--worker_hosts", wk,
			 "--model", "softmax", NULL };
	struct tfj_psclient *cl = NULL;

	if (tfj_rtconfig_parse(cfg, 8, args, NULL) != 0) {
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

/* A ps; its output to out/err (NULL: discarded). */
static pid_t start_ps_to(char *env_kv, const char *out, const char *err)
{
	char *ps_args[] = { "train", "--job_name", "ps", "--ps_hosts", ps, "--worker_hosts", wk,
			    "--model", "softmax", "--bind_address", "127.0.0.1", NULL };

	return spawn(ps_args, env_kv, out ? out : "/dev/null", err ? err : "/dev/null");
}

static pid_t start_ps(char *env_kv)
{
	return start_ps_to(env_kv, NULL, NULL);
}

static void stop_ps(pid_t pid)
{
	tfj_testutil_kill(pid, SIGTERM);
	TFJ_CHECK_INT(tfj_testutil_wait(pid, 60), TFJ_EXIT_ABORTED);
}

/* A unary call of `method` with an empty body: the gRPC status, or -1. */
static int unary_status(enum tfj_rpc_method method)
{
	struct tfj_grpc_result r = { 0 };
	grpc_channel *ch = NULL;
	char *ca = itest_tls_ca();
	int st = -1;

	if (ca && tfj_grpc_channel_new(&ch, ps, ca, NULL) == 0 &&
	    tfj_grpc_unary(&r, ch, tfj_rpc_methods[method].path, NULL, NULL, 0,
			   tfj_grpc_deadline_ms(5000), 1 << 20) == 0)
		st = (int)r.status;
	tfj_grpc_result_free(&r);
	if (ch)
		grpc_channel_destroy(ch);
	free(ca);
	return st;
}

static void test_client_asks_status(void)
{
	struct tfj_rtconfig ca;
	struct tfj_psclient *cl = NULL;
	struct tfj_psclient_stats st;
	pid_t pid = start_ps(NULL);

	TFJ_CHECK_GT(pid, 0);
	cl = client(&ca);
	if (!cl)
		goto out;
	/* Waits for the ps to listen, with a client of its own. */
	{
		struct tfj_rtconfig cw;
		struct tfj_psclient *w = client(&cw);

		TFJ_CHECK_OK(w ? wait_ps(w) : -1);
		tfj_psclient_free(w);
		tfj_rtconfig_free(&cw);
	}
	/* A Pull goes alone; asking is the caller's, once per stream. */
	TFJ_CHECK_INT(call(cl, TFJ_RPC_PULL), TFJ_ECONFLICT);
	TFJ_CHECK(strstr(tfj_err_detail(), "over the stream") != NULL);
	tfj_psclient_get_stats(&st, cl);
	TFJ_CHECK_EQ(st.frames, 1);
	TFJ_CHECK_EQ(st.streams_opened, 1);
	TFJ_CHECK(!tfj_psclient_streaming_of(cl, 0));
	TFJ_CHECK_OK(tfj_psclient_ask(cl, NULL, 10));
	TFJ_CHECK_OK(tfj_psclient_ask(cl, NULL, 10));
	tfj_psclient_get_stats(&st, cl);
	TFJ_CHECK_EQ(st.frames, 2);
	TFJ_CHECK(tfj_psclient_streaming_of(cl, 0));
	TFJ_CHECK(tfj_psclient_pieces_of(cl, 0)); /* an async ps */
	/* The ps serves no unary method: UNIMPLEMENTED, at once. */
	TFJ_CHECK_INT(unary_status(TFJ_RPC_STATUS), GRPC_STATUS_UNIMPLEMENTED);
	TFJ_CHECK_INT(unary_status(TFJ_RPC_PULL), GRPC_STATUS_UNIMPLEMENTED);
	/* The ps goes away and comes back on the same port: asked again, on a new stream. */
	stop_ps(pid);
	pid = start_ps(NULL);
	TFJ_CHECK_GT(pid, 0);
	{
		struct tfj_rtconfig cw;
		struct tfj_psclient *w = client(&cw);

		TFJ_CHECK_OK(w ? wait_ps(w) : -1);
		tfj_psclient_free(w);
		tfj_rtconfig_free(&cw);
	}
	TFJ_CHECK_INT(call(cl, TFJ_RPC_PULL), TFJ_ECONFLICT);
	TFJ_CHECK(!tfj_psclient_streaming_of(cl, 0));
	TFJ_CHECK(!tfj_psclient_pieces_of(cl, 0));
	TFJ_CHECK_OK(tfj_psclient_ask(cl, NULL, 10));
	tfj_psclient_get_stats(&st, cl);
	TFJ_CHECK_EQ(st.frames, 4);
	TFJ_CHECK_EQ(st.streams_opened, 2);
	TFJ_CHECK(tfj_psclient_streaming_of(cl, 0));
out:
	tfj_psclient_free(cl);
	tfj_rtconfig_free(&ca);
	stop_ps(pid);
}

/* A client reading the secret from `file` (NULL: none) calls Status. */
static int status_with_secret(const char *file, struct tfj_psclient_stats *st)
{
	struct tfj_rtconfig cfg;
	struct tfj_psclient *cl;
	int rc;

	if (file)
		setenv(TFJ_PSAUTH_ENV, file, 1);
	else
		unsetenv(TFJ_PSAUTH_ENV);
	cl = client(&cfg);
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
	pid = start_ps_to(env_good, out, err);
	TFJ_CHECK_GT(pid, 0);
	/* The good one first: it also waits for the ps to listen. */
	TFJ_CHECK_OK(status_with_secret(good, &st));
	TFJ_CHECK_EQ(st.frames, 1);
	TFJ_CHECK_INT(status_with_secret(bad, &st), TFJ_EAUTH);
	TFJ_CHECK(strstr(tfj_err_detail(), "UNAUTHENTICATED") != NULL);
	TFJ_CHECK_EQ(st.frames, 0);
	TFJ_CHECK_INT(status_with_secret(NULL, &st), TFJ_EAUTH);
	TFJ_CHECK_OK(status_with_secret(good, &st));
	stop_ps(pid);
	/* Counted and logged by the ps (the first refusal). */
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
	printf("chief: %lld frames, %lld streams\n", c.frames, c.opened);
	TFJ_CHECK_GE(c.opened, 3);
	TFJ_CHECK_GT(c.frames, 1000);
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
	TFJ_RUN(test_client_asks_status);
	TFJ_RUN(test_secret_on_the_stream);
	grpc_shutdown();
	itest_require_data();
	TFJ_RUN(test_training_over_streams);
	TFJ_RUN(test_ps_killed_streams_reopen);
	tfj_testutil_rmtree(dir);
	return tfj_test_finish();
}
