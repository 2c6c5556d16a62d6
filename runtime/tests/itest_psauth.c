/*
 * itest_psauth.c - the per-job ps secret over real gRPC on 127.0.0.1: a
 * ps started with TFJOB_PS_SECRET_FILE refuses streams without the secret
 * or with a wrong one (UNAUTHENTICATED, before any request is decoded)
 * and counts them; requests with it are served; a worker holding the wrong
 * secret stops with a permanent error; a cluster sharing the secret trains.
 */
#include "itest_util.h"

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

static char dir[128], good[256], bad[256], longer[256], env_good[300], env_bad[300];
static char ps[64], wk[64];

static void put(char *path, size_t cap, const char *name, const char *data)
{
	FILE *f;

	snprintf(path, cap, "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (f) {
		fputs(data, f);
		fclose(f);
	}
}

/* Starts `<self> args` with TFJOB_PS_SECRET_FILE=<env_kv's file>, no TF_CONFIG. */
static pid_t spawn_with(char *const *args, char *env_kv, int quiet)
{
	return itest_spawn_env(args, env_kv, quiet ? "/dev/null" : NULL, NULL);
}

/*
 * One request of `method` (Status, or a Finish with layout hash 0) from a
 * client holding the secret in `file` (NULL: none) on its stream: the
 * psclient's code (TFJ_EAUTH when the ps refused the stream).
 */
static int call(enum tfj_rpc_method method, const char *file)
{
	char *args[] = { "--job_name", "worker", "--ps_hosts", ps, "--worker_hosts", wk,
			 "--model", "softmax", NULL };
	Tfj__Runtime__V1__StatusRequest sq = TFJ__RUNTIME__V1__STATUS_REQUEST__INIT;
	Tfj__Runtime__V1__FinishRequest fq = TFJ__RUNTIME__V1__FINISH_REQUEST__INIT;
	const ProtobufCMessage *req[1];
	ProtobufCMessage *resp[1];
	struct tfj_rtconfig cfg;
	struct tfj_psclient *cl = NULL;
	int rc;

	if (file)
		setenv(TFJ_PSAUTH_ENV, file, 1);
	else
		unsetenv(TFJ_PSAUTH_ENV);
	rc = tfj_rtconfig_parse(&cfg, 8, args, NULL);
	if (rc == 0)
		rc = tfj_psclient_new(&cl, &cfg);
	unsetenv(TFJ_PSAUTH_ENV);
	if (rc == 0) {
		req[0] = method == TFJ_RPC_FINISH ? &fq.base : &sq.base;
		rc = tfj_psclient_call(cl, method, req, resp, 5);
	}
	tfj_psclient_free(cl);
	tfj_rtconfig_free(&cfg);
	return rc;
}

static void test_ps_refuses_calls_without_the_secret(void)
{
	char *ps_args[] = { "train", "--job_name", "ps", "--ps_hosts", ps, "--worker_hosts", wk,
			    "--model", "softmax", "--bind_address", "127.0.0.1", NULL };
	pid_t pid;
	int st = -1, i, code;

	pid = spawn_with(ps_args, env_good, 0);
	TFJ_CHECK_GT(pid, 0);
	if (pid <= 0)
		return;
	/* Wait for the ps to listen: it answers (anything but UNAVAILABLE). */
	for (i = 0; i < 300; i++) {
		st = call(TFJ_RPC_STATUS, good);
		if (st != TFJ_EUNAVAIL)
			break;
		usleep(100 * 1000);
	}
	TFJ_CHECK_INT(st, 0);
	TFJ_CHECK_INT(call(TFJ_RPC_STATUS, NULL), TFJ_EAUTH);
	TFJ_CHECK_INT(call(TFJ_RPC_STATUS, bad), TFJ_EAUTH);
	TFJ_CHECK_INT(call(TFJ_RPC_STATUS, longer), TFJ_EAUTH);
	/* A Finish from outside the job would end the ps: refused, and it keeps serving. */
	TFJ_CHECK_INT(call(TFJ_RPC_FINISH, NULL), TFJ_EAUTH);
	TFJ_CHECK_INT(call(TFJ_RPC_FINISH, bad), TFJ_EAUTH);
	TFJ_CHECK_INT(call(TFJ_RPC_STATUS, good), 0);
	tfj_testutil_kill(pid, SIGTERM);
	code = tfj_testutil_wait(pid, 60);
	TFJ_CHECK_INT(code, TFJ_EXIT_ABORTED);
}

static void test_worker_with_wrong_secret_stops(void)
{
	char *ps_args[] = { "train", "--job_name", "ps", "--ps_hosts", ps, "--worker_hosts", wk,
			    "--model", "softmax", "--bind_address", "127.0.0.1", NULL };
	char *wk_args[] = { "train", "--job_name", "worker", "--ps_hosts", ps, "--worker_hosts",
			    wk, "--model", "softmax", "--peer_timeout", "20", NULL };
	pid_t pid;
	int code;

	pid = spawn_with(ps_args, env_good, 1);
	TFJ_CHECK_GT(pid, 0);
	if (pid <= 0)
		return;
	/* Permanent: a restart would send the same wrong secret. */
	code = tfj_testutil_wait(spawn_with(wk_args, env_bad, 1), 120);
	TFJ_CHECK_NE(code, TFJ_EXIT_OK);
	TFJ_CHECK_NE(code, -1);
	TFJ_CHECK(!tfj_exitcode_retryable(code));
	tfj_testutil_kill(pid, SIGTERM);
	TFJ_CHECK_INT(tfj_testutil_wait(pid, 60), TFJ_EXIT_ABORTED);
}

/* Every task of a local cluster reads the same secret: training works as before. */
static void test_cluster_with_the_secret_trains(void)
{
	char *flags[] = { "--model", "softmax", "--max_steps", "200", NULL };

	setenv(TFJ_PSAUTH_ENV, good, 1);
	itest_train_expect("softmax, 1 ps, 2 workers, ps secret on", 1, 2, flags, 0.5);
	unsetenv(TFJ_PSAUTH_ENV);
}

int main(int argc, char **argv)
{
	ITEST_DISPATCH(argc, argv);
	if (tfj_testutil_tmpdir(dir, sizeof(dir), "tfj-itest-psauth") != 0)
		return 1;
	put(good, sizeof(good), "good", SECRET "\n");
	put(bad, sizeof(bad), "bad", OTHER "\n");
	put(longer, sizeof(longer), "longer", SECRET "0\n");
	snprintf(env_good, sizeof(env_good), "%s=%s", TFJ_PSAUTH_ENV, good);
	snprintf(env_bad, sizeof(env_bad), "%s=%s", TFJ_PSAUTH_ENV, bad);
	snprintf(ps, sizeof(ps), "127.0.0.1:%d", tfj_testutil_free_port());
	snprintf(wk, sizeof(wk), "127.0.0.1:%d", tfj_testutil_free_port());
	grpc_init();
	TFJ_RUN(test_ps_refuses_calls_without_the_secret);
	TFJ_RUN(test_worker_with_wrong_secret_stops);
	grpc_shutdown();
	itest_require_data();
	TFJ_RUN(test_cluster_with_the_secret_trains);
	tfj_testutil_rmtree(dir);
	return tfj_test_finish();
}
