/*
 * itest_badinput.c - bad input ends with a clear message and the exit code
 * that tells the operator whether a restart can help (tfj/exitcode.h).
 */
#include "itest_util.h"

#include <tfj/err.h>

#include <tfj/exitcode.h>

#include <fcntl.h>
#include <grp.h>

static char hosts_ps[64], hosts_wk[64];

static void test_malformed_tf_config(void)
{
	char *args[] = { "train", NULL };

	TFJ_CHECK_INT(itest_run_self(args, "{\"cluster\": {\"ps\": [", 1), TFJ_EXIT_USAGE);
	TFJ_CHECK_INT(itest_run_self(args, "{\"cluster\":{\"ps\":[\"p:1\"],\"worker\":[\"w:1\"]},"
				     "\"task\":{\"type\":\"worker\",\"index\":3}}", 1), TFJ_EXIT_USAGE);
	TFJ_CHECK_INT(itest_run_self(args, "{\"cluster\":{\"ps\":[\"p:1\"],\"worker\":[\"w:1\"]},"
				     "\"task\":{\"type\":\"pirate\",\"index\":0}}", 1), TFJ_EXIT_USAGE);
	TFJ_CHECK_INT(itest_run_self(args, NULL, 1), TFJ_EXIT_USAGE); /* no cluster at all */
}

static void test_unknown_flags(void)
{
	char *a1[] = { "train", "--job_name", "worker", "--ps_hosts", "127.0.0.1:1",
		       "--worker_hosts", "127.0.0.1:2", "--lerning_rate", "0.1", NULL };
	char *a2[] = { "launch", "--ps", "1", "--workers", "1", "--bogus", NULL };
	char *a3[] = { "launch", "--ps", "zero", NULL };
	char *a4[] = { "frobnicate", NULL };

	TFJ_CHECK_INT(itest_run_self(a1, NULL, 1), TFJ_EXIT_USAGE);
	TFJ_CHECK_INT(itest_run_self(a2, NULL, 1), TFJ_EXIT_USAGE);
	TFJ_CHECK_INT(itest_run_self(a3, NULL, 1), TFJ_EXIT_USAGE);
	TFJ_CHECK_INT(itest_run_self(a4, NULL, 1), TFJ_EXIT_USAGE);
}

static void test_missing_dataset(void)
{
	char *args[] = { "launch", "--ps", "1", "--workers", "1", "--max_restarts", "0",
			 "--data_dir", "/nonexistent/fashion", "--quiet", NULL };

	TFJ_CHECK_INT(itest_run_self(args, NULL, 1), TFJ_EXIT_DATA);
}

static void test_nan_loss(void)
{
	/*
	 * The --inject_nan_at test hook poisons worker 1's copy of one parameter
	 * at its 20th step; the model reports the NaN loss and the task ends
	 * with the permanent "numeric" code, which launch passes on.
	 */
	char *args[] = { "launch", "--ps", "1", "--workers", "2", "--max_restarts", "0",
			 "--model", "softmax", "--max_steps", "2000", "--inject_nan_at", "20",
			 "--quiet", NULL };

	TFJ_CHECK_INT(itest_run_self(args, NULL, 1), TFJ_EXIT_NUMERIC);
}

static void test_unreachable_peer(void)
{
	char *args[] = { "train", "--job_name", "worker", "--ps_hosts", hosts_ps, "--worker_hosts",
			 hosts_wk, "--peer_timeout", "2", "--rpc_timeout", "1", NULL };
	time_t t0 = time(NULL);
	int rc;

	snprintf(hosts_ps, sizeof(hosts_ps), "127.0.0.1:%d", tfj_testutil_free_port());
	snprintf(hosts_wk, sizeof(hosts_wk), "127.0.0.1:%d", tfj_testutil_free_port());
	rc = itest_run_self(args, NULL, 1);
	TFJ_CHECK_INT(rc, TFJ_EXIT_UNAVAILABLE);
	TFJ_CHECK(tfj_exitcode_retryable(rc));
	TFJ_CHECK_LT(time(NULL) - t0, 30); /* gave up after the deadline, no retry storm */
}

static void test_layout_mismatch(void)
{
	char ps[64], wk[64];
	char *ps_args[] = { "train", "--job_name", "ps", "--ps_hosts", ps, "--worker_hosts", wk,
			    "--model", "softmax", "--bind_address", "127.0.0.1", NULL };
	char *wk_args[] = { "train", "--job_name", "worker", "--ps_hosts", ps, "--worker_hosts", wk,
			    "--model", "mlp", "--hidden", "16", "--peer_timeout", "10", NULL };
	pid_t pid;
	int st;

	snprintf(ps, sizeof(ps), "127.0.0.1:%d", tfj_testutil_free_port());
	snprintf(wk, sizeof(wk), "127.0.0.1:%d", tfj_testutil_free_port());
	pid = itest_spawn_self(ps_args, NULL);
	TFJ_CHECK_GT(pid, 0);
	if (pid <= 0)
		return;
	/* The ps answers, but disagrees on the model: permanent, no retrying. */
	TFJ_CHECK_INT(itest_run_self(wk_args, NULL, 1), TFJ_EXIT_MISMATCH);
	tfj_testutil_kill(pid, SIGTERM);
	TFJ_CHECK(waitpid(pid, &st, 0) == pid);
	/* A ps stopped by SIGTERM reports "aborted", which is retryable. */
	TFJ_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == TFJ_EXIT_ABORTED);
}

/*
 * A --logdir or --checkpoint-dir the task may not write is the pod's
 * configuration (its fsGroup, the volume), not a passing fault: exit usage
 * (permanent), not io. The task runs as nobody (dropping root, as CI runs
 * as root, whom no mode stops) against a directory only root may write.
 */
static int run_as_nobody(char *const *args)
{
	pid_t pid;

	if (getuid() != 0)
		return itest_run_self(args, NULL, 1);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
			_exit(99);
		setenv("TFJ_ITEST_CHILD", "1", 1);
		/* The test's CA directory is root's: nobody could not read it. */
		setenv("TFJOB_PS_TLS", "off", 1);
		unsetenv("TF_CONFIG");
		execv("/proc/self/exe", args);
		_exit(98);
	}
	return tfj_testutil_wait(pid, 0);
}

static void test_unwritable_dirs(void)
{
	char root[] = "/tmp/tfj-itest-ro-XXXXXX", logdir[128], ckdir[128];
	char *a1[] = { "tfjob-runtime", "train", "--job_name", "worker", "--ps_hosts", "127.0.0.1:1",
		       "--worker_hosts", "127.0.0.1:2", "--logdir", logdir, NULL };
	char *a2[] = { "tfjob-runtime", "train", "--job_name", "worker", "--ps_hosts",
		       "127.0.0.1:1", "--worker_hosts", "127.0.0.1:2", "--checkpoint-dir", ckdir,
		       NULL };

	TFJ_CHECK_NOT_NULL(mkdtemp(root));
	/* Searchable by all, writable by root alone (or by nobody, not root). */
	TFJ_CHECK_INT(chmod(root, getuid() == 0 ? 0755 : 0555), 0);
	snprintf(logdir, sizeof(logdir), "%s/logs", root);
	snprintf(ckdir, sizeof(ckdir), "%s/ckpt/a", root);
	TFJ_CHECK_INT(run_as_nobody(getuid() == 0 ? a1 : a1 + 1), TFJ_EXIT_USAGE);
	TFJ_CHECK_INT(run_as_nobody(getuid() == 0 ? a2 : a2 + 1), TFJ_EXIT_USAGE);
	chmod(root, 0700);
	rmdir(root);
}

static void test_exit_code_table(void)
{
	TFJ_CHECK(!tfj_exitcode_retryable(TFJ_EXIT_USAGE));
	TFJ_CHECK(!tfj_exitcode_retryable(TFJ_EXIT_NUMERIC));
	TFJ_CHECK(!tfj_exitcode_retryable(TFJ_EXIT_DATA));
	TFJ_CHECK(!tfj_exitcode_retryable(TFJ_EXIT_MISMATCH));
	TFJ_CHECK(tfj_exitcode_retryable(TFJ_EXIT_UNAVAILABLE));
	TFJ_CHECK(tfj_exitcode_retryable(TFJ_EXIT_IO));
	TFJ_CHECK_INT(tfj_exitcode_from_err(TFJ_EPARSE), TFJ_EXIT_USAGE);
	TFJ_CHECK_INT(tfj_exitcode_from_err(TFJ_EUNAVAIL), TFJ_EXIT_UNAVAILABLE);
	TFJ_CHECK_INT(tfj_exitcode_from_err(TFJ_ENUMERIC), TFJ_EXIT_NUMERIC);
}

int main(int argc, char **argv)
{
	ITEST_DISPATCH(argc, argv);
	TFJ_RUN(test_exit_code_table);
	TFJ_RUN(test_malformed_tf_config);
	TFJ_RUN(test_unknown_flags);
	TFJ_RUN(test_unreachable_peer);
	TFJ_RUN(test_layout_mismatch);
	itest_require_data();
	TFJ_RUN(test_missing_dataset);
	TFJ_RUN(test_nan_loss);
	TFJ_RUN(test_unwritable_dirs);
	return tfj_test_finish();
}
