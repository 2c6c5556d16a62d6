/*
 * test_agent.c - the whole agent as a real process: exit-code mapping,
 * termination message, signal forwarding, peer wait, bad configuration.
 */
#include <pthread.h>
#include <sys/socket.h>

#include <tfj/json.h>
#include "agent_testutil.h"
#include "tfj_test.h"

static char dir[64];
static char tm_path[128], out_path[128], err_path[128];

/* Runs the agent with --termination-log set; returns its exit code. */
static int run_agent(char *const *args, char *const *env, double timeout)
{
	char *full[64];
	size_t n = 0, i;
	pid_t pid;

	unlink(tm_path);
	full[n++] = "--termination-log";
	full[n++] = tm_path;
	full[n++] = "--log-level";
	full[n++] = "debug";
	for (i = 0; args[i] && n < 63; i++)
		full[n++] = args[i];
	full[n] = NULL;
	pid = tu_spawn_agent(full, env, out_path, err_path);
	TFJ_CHECK_GT(pid, 0);
	return tfj_testutil_wait(pid, timeout);
}

/* Checks the termination message's reason, code and optional last step. */
static void check_tm(const char *reason, int code, long long last_step)
{
	char buf[8192];
	const char *s = NULL;
	int64_t v = -1;
	int b = -1;
	cJSON *j = NULL;
	long n = tu_read(tm_path, buf, sizeof(buf));

	TFJ_CHECK_GT(n, 0);
	TFJ_CHECK_LE(n, 4096);
	if (n <= 0)
		return;
	TFJ_CHECK_INT(tfj_json_parse(&j, buf, (size_t)n, 4096), 0);
	if (!j)
		return;
	TFJ_CHECK_INT(tfj_json_get_string(&s, j, "reason"), 0);
	TFJ_CHECK_STR(s, reason);
	TFJ_CHECK_INT(tfj_json_get_int64(&v, j, "exitCode", 0, 255), 0);
	TFJ_CHECK_INT(v, code);
	TFJ_CHECK_INT(tfj_json_get_bool(&b, j, "retryable"), 0);
	TFJ_CHECK_INT(b, code >= 128);
	if (last_step >= 0) {
		TFJ_CHECK_INT(tfj_json_get_int64(&v, j, "lastStep", 0, TFJ_JSON_INT_MAX), 0);
		TFJ_CHECK_INT(v, last_step);
	} else {
		TFJ_CHECK(cJSON_GetObjectItem(j, "lastStep") == NULL);
	}
	cJSON_Delete(j);
}

static void test_bad_config(void)
{
	char *a1[] = { "--peer-wait", "sometimes", "--", "true", NULL };
	char *a2[] = { "--", "true", NULL };
	char *a3[] = { "--progress-regex", "(?<bogus>x)", "--", "true", NULL };
	char *a4[] = { "--grace-period", NULL };
	char *env2[] = { "TF_CONFIG={\"cluster\":{\"worker\":[\"a:1\"]},\"task\":{\"type\":\"worker\",\"index\":3}}", NULL };
	char *env3[] = { "TF_CONFIG={not json", NULL };

	TFJ_CHECK_INT(run_agent(a1, NULL, 10), 2);
	check_tm("InvalidArguments", 2, -1);
	TFJ_CHECK_INT(run_agent(a2, env2, 10), 2);
	check_tm("InvalidTFConfig", 2, -1);
	TFJ_CHECK_INT(run_agent(a2, env3, 10), 2);
	check_tm("InvalidTFConfig", 2, -1);
	TFJ_CHECK_INT(run_agent(a3, NULL, 10), 2);
	check_tm("InvalidArguments", 2, -1);
	TFJ_CHECK_INT(run_agent(a4, NULL, 10), 2);
	check_tm("InvalidArguments", 2, -1);
}

static void test_exit_mapping(void)
{
	char *ok[] = { "--", "sh", "-c", "echo 'TFJ_PROGRESS {\"step\":12,\"loss\":0.5}'; exit 0", NULL };
	char *fail[] = { "sh", "-c", "echo 'TFJ_PROGRESS {\"step\":3}'; echo 'boom: bad data' >&2; exit 5", NULL };
	char *sig[] = { "--", "sh", "-c", "kill -KILL $$", NULL };
	char *retry[] = { "--", "sh", "-c", "exit 138", NULL };
	char *nf[] = { "--", "tfj-no-such-command-xyz", NULL };
	char *rx[] = { "--progress-regex", "Step (?<step>\\d+)/100 - loss: (?<loss>[0-9.]+)", "--",
		       "sh", "-c", "echo 'Step 41/100 - loss: 0.3'; echo 'Step 42/100 - loss: 0.2' >&2; exit 1",
		       NULL };
	char buf[8192];
	const char *s;
	cJSON *j = NULL;

	TFJ_CHECK_INT(run_agent(ok, NULL, 10), 0);
	check_tm("Completed", 0, 12);
	TFJ_CHECK_INT(run_agent(fail, NULL, 10), 5);
	check_tm("Error", 5, 3);
	/* The tail of stderr says why. */
	TFJ_CHECK_GT(tu_read(tm_path, buf, sizeof(buf)), 0);
	TFJ_CHECK_INT(tfj_json_parse(&j, buf, strlen(buf), 4096), 0);
	if (j) {
		TFJ_CHECK_INT(tfj_json_get_string(&s, j, "message"), 0);
		TFJ_CHECK_STR(s, "boom: bad data");
		cJSON_Delete(j);
	}
	TFJ_CHECK_INT(run_agent(sig, NULL, 10), 137);
	check_tm("Signaled", 137, -1);
	TFJ_CHECK_INT(run_agent(retry, NULL, 10), 138);
	check_tm("Error", 138, -1);
	TFJ_CHECK_INT(run_agent(nf, NULL, 10), 127);
	check_tm("CommandNotFound", 127, -1);
	TFJ_CHECK_INT(run_agent(rx, NULL, 10), 1);
	check_tm("Error", 1, 42);
}

static void test_passthrough(void)
{
	char *a[] = { "--", "sh", "-c", "printf 'a\\nTFJ_PROGRESS {\"step\":1}\\n\\001\\377 tail'", NULL };
	char buf[256];

	TFJ_CHECK_INT(run_agent(a, NULL, 10), 0);
	/* The agent logs to stderr only: stdout is exactly the command's. */
	TFJ_CHECK_INT(tu_read(out_path, buf, sizeof(buf)), 33);
	TFJ_CHECK(memcmp(buf, "a\nTFJ_PROGRESS {\"step\":1}\n\001\377 tail", 33) == 0);
}

static int wait_for_text(const char *path, const char *text, double timeout)
{
	char buf[4096];
	double end = tfj_testutil_now_s() + timeout;

	while (tfj_testutil_now_s() < end) {
		if (tu_read(path, buf, sizeof(buf)) > 0 && strstr(buf, text))
			return 1;
		usleep(20 * 1000);
	}
	return 0;
}

static void test_sigterm_forwarded(void)
{
	char *a[] = { "--termination-log", NULL, "--grace-period", "10", "--",
		      "sh", "-c", "trap 'echo got-term; exit 42' TERM; echo ready; "
		      "while :; do sleep 0.05; done", NULL };
	char *b[] = { "--termination-log", NULL, "--grace-period", "0.3", "--",
		      "sh", "-c", "trap '' TERM; echo ready; sleep 30", NULL };
	pid_t pid;
	double t0;

	a[1] = tm_path;
	unlink(tm_path);
	pid = tu_spawn_agent(a, NULL, out_path, err_path);
	TFJ_CHECK(wait_for_text(out_path, "ready", 10));
	tfj_testutil_kill(pid, SIGTERM);
	TFJ_CHECK_INT(tfj_testutil_wait(pid, 10), 42);
	check_tm("Terminated", 42, -1);
	TFJ_CHECK(wait_for_text(out_path, "got-term", 1));

	/* A command that ignores SIGTERM is killed after the grace period. */
	b[1] = tm_path;
	unlink(tm_path);
	pid = tu_spawn_agent(b, NULL, out_path, err_path);
	TFJ_CHECK(wait_for_text(out_path, "ready", 10));
	t0 = tfj_testutil_now_s();
	tfj_testutil_kill(pid, SIGTERM);
	TFJ_CHECK_INT(tfj_testutil_wait(pid, 10), 137);
	TFJ_CHECK_GE(tfj_testutil_now_s() - t0, 0.25);
	check_tm("GracePeriodExpired", 137, -1);
}

static void *listen_late(void *arg)
{
	usleep(800 * 1000);
	listen(*(int *)arg, 8);
	return NULL;
}

static void test_peer_wait(void)
{
	char tfc[512], envbuf[600];
	char *env[] = { envbuf, NULL };
	char *a[] = { "--peer-wait", "tcp", "--peer-timeout", "10", "--peer-connect-timeout", "0.2",
		      "--", "sh", "-c", "echo started", NULL };
	char *t[] = { "--peer-wait=tcp", "--peer-timeout=1", "--", "sh", "-c", "echo started", NULL };
	char *dns[] = { "--", "sh", "-c", "echo started", NULL };
	char buf[4096];
	int self_fd, self_port = 0, ps_fd, ps_port = 0;
	pthread_t th;
	double t0;
	pid_t pid;

	/* Our own address is refused (our server would start in the child). */
	self_fd = tfj_testutil_bind_loopback(&self_port);
	ps_fd = tfj_testutil_bind_loopback(&ps_port);
	snprintf(tfc, sizeof(tfc), "{\"cluster\":{\"ps\":[\"127.0.0.1:%d\"],\"worker\":[\"127.0.0.1:%d\"]},"
		 "\"task\":{\"type\":\"worker\",\"index\":0}}", ps_port, self_port);
	snprintf(envbuf, sizeof(envbuf), "TF_CONFIG=%s", tfc);

	/* The ps starts listening late: the command starts after it does. */
	pthread_create(&th, NULL, listen_late, &ps_fd);
	t0 = tfj_testutil_now_s();
	TFJ_CHECK_INT(run_agent(a, env, 20), 0);
	TFJ_CHECK_GE(tfj_testutil_now_s() - t0, 0.7);
	pthread_join(th, NULL);
	TFJ_CHECK(tu_read(out_path, buf, sizeof(buf)) > 0 && strstr(buf, "started"));
	check_tm("Completed", 0, -1);
	close(ps_fd);

	/* Nobody ever listens: retryable timeout, the command never ran. */
	ps_fd = tfj_testutil_bind_loopback(&ps_port);
	snprintf(envbuf, sizeof(envbuf), "TF_CONFIG={\"cluster\":{\"ps\":[\"127.0.0.1:%d\"],"
		 "\"worker\":[\"127.0.0.1:%d\"]},\"task\":{\"type\":\"worker\",\"index\":0}}",
		 ps_port, self_port);
	t0 = tfj_testutil_now_s();
	TFJ_CHECK_INT(run_agent(t, env, 20), 138);
	TFJ_CHECK_LT(tfj_testutil_now_s() - t0, 5);
	check_tm("PeerWaitTimeout", 138, -1);
	TFJ_CHECK(tu_read(out_path, buf, sizeof(buf)) == 0);

	/* Default mode (dns): addresses that resolve are enough, no deadlock. */
	TFJ_CHECK_INT(run_agent(dns, env, 20), 0);
	check_tm("Completed", 0, -1);

	/* SIGTERM while waiting: 128 + 15, before the command started. */
	{
		char *w[] = { "--termination-log", tm_path, "--peer-wait", "tcp", "--peer-timeout", "30",
			      "--", "sh", "-c", "echo started", NULL };
		unlink(tm_path);
		pid = tu_spawn_agent(w, env, out_path, err_path);
		TFJ_CHECK(wait_for_text(err_path, "waiting for peer", 10));
		tfj_testutil_kill(pid, SIGTERM);
		TFJ_CHECK_INT(tfj_testutil_wait(pid, 10), 143);
		check_tm("TerminatedBeforeStart", 143, -1);
	}
	close(ps_fd);
	close(self_fd);
}

int main(int argc, char **argv)
{
	TFJ_AGENT_TEST_DISPATCH(argc, argv);
	if (tfj_testutil_tmpdir(dir, sizeof(dir), "tfj-agent-test"))
		return 1;
	snprintf(tm_path, sizeof(tm_path), "%s/termination-log", dir);
	snprintf(out_path, sizeof(out_path), "%s/stdout", dir);
	snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
	TFJ_RUN(test_bad_config);
	TFJ_RUN(test_exit_mapping);
	TFJ_RUN(test_passthrough);
	TFJ_RUN(test_sigterm_forwarded);
	TFJ_RUN(test_peer_wait);
	tfj_testutil_rmtree(dir);
	return tfj_test_finish();
}
