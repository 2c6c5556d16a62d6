/*
 * test_supervisor.c - real child processes: exit codes, signal forwarding,
 * grace period, the stop fd, zombie reaping, output pass-through, exec
 * failures.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "supervisor.h"
#include "tfj_test.h"
#include "tfj_testutil.h"

struct cap {
	char out[65536];
	size_t outlen;
	char err[65536];
	size_t errlen;
	const char *trigger;   /* send `sig` to ourselves when this text appears */
	int sig;
	int fired;
	int ticks;
	int use_stop;          /* at the trigger, write to stop_pipe instead of a signal */
	int stop_pipe[2];
};

static void on_output(void *ctx, enum tfj_progress_stream s, const char *data, size_t len)
{
	struct cap *c = ctx;
	char *buf = s == TFJ_STREAM_STDOUT ? c->out : c->err;
	size_t *n = s == TFJ_STREAM_STDOUT ? &c->outlen : &c->errlen;

	if (len > sizeof(c->out) - 1 - *n)
		len = sizeof(c->out) - 1 - *n;
	memcpy(buf + *n, data, len);
	*n += len;
	buf[*n] = '\0';
	if (c->trigger && !c->fired && strstr(buf, c->trigger)) {
		/* The supervisor blocks it, so it arrives through its signalfd. */
		c->fired = 1;
		if (c->use_stop)
			TFJ_CHECK_INT(write(c->stop_pipe[1], "x", 1), 1);
		else
			kill(getpid(), c->sig);
	}
}

static void on_tick(void *ctx)
{
	((struct cap *)ctx)->ticks++;
}

static int devnull(void)
{
	return open("/dev/null", O_WRONLY | O_CLOEXEC);
}

static int run_sh(struct tfj_supervisor_result *r, struct cap *c, const char *script, double grace)
{
	char *argv[] = { "sh", "-c", (char *)script, NULL };
	struct tfj_supervisor_opts o;
	int fd = devnull(), rc;

	memset(&o, 0, sizeof(o));
	o.argv = argv;
	o.grace_s = grace;
	o.drain_s = 2.0;
	o.out_fd = fd;
	o.err_fd = fd;
	o.signal_group = 1;
	o.on_output = on_output;
	o.on_tick = on_tick;
	o.tick_ms = 50;
	o.ctx = c;
	o.use_stop_fd = c->use_stop;
	o.stop_fd = c->stop_pipe[0];
	rc = tfj_supervisor_run(r, &o);
	close(fd);
	return rc;
}

static void test_exit_codes(void)
{
	struct tfj_supervisor_result r;
	struct cap c;
	int codes[] = { 0, 1, 3, 42, 127, 200, 255 };
	size_t i;
	char script[64];

	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		memset(&c, 0, sizeof(c));
		snprintf(script, sizeof(script), "exit %d", codes[i]);
		TFJ_CHECK_INT(run_sh(&r, &c, script, 5), 0);
		TFJ_CHECK_INT(r.exit_code, codes[i]);
		TFJ_CHECK_INT(r.signal, 0);
		TFJ_CHECK_INT(r.exec_errno, 0);
	}
	/* Death by signal N is 128 + N. */
	memset(&c, 0, sizeof(c));
	TFJ_CHECK_INT(run_sh(&r, &c, "kill -KILL $$", 5), 0);
	TFJ_CHECK_INT(r.exit_code, 137);
	TFJ_CHECK_INT(r.signal, SIGKILL);
	TFJ_CHECK_INT(r.received, 0);
	memset(&c, 0, sizeof(c));
	TFJ_CHECK_INT(run_sh(&r, &c, "kill -SEGV $$", 5), 0);
	TFJ_CHECK_INT(r.exit_code, 139);
	TFJ_CHECK_INT(r.signal, SIGSEGV);
	/* The wait-status helper on its own. */
	TFJ_CHECK_INT(tfj_supervisor_exit_code(7 << 8), 7);
	TFJ_CHECK_INT(tfj_supervisor_exit_code(SIGTERM), 143);
}

static void test_forward_sigterm(void)
{
	struct tfj_supervisor_result r;
	struct cap c;
	double t0;

	/* The child traps SIGTERM and exits 42 with a message. */
	memset(&c, 0, sizeof(c));
	c.trigger = "ready";
	c.sig = SIGTERM;
	t0 = tfj_testutil_now_s();
	TFJ_CHECK_INT(run_sh(&r, &c, "trap 'echo got-term; exit 42' TERM; echo ready; "
			   "while :; do sleep 0.05; done", 10), 0);
	TFJ_CHECK_INT(c.fired, 1);
	TFJ_CHECK_INT(r.exit_code, 42);
	TFJ_CHECK_INT(r.received, SIGTERM);
	TFJ_CHECK_INT(r.killed, 0);
	TFJ_CHECK(strstr(c.out, "got-term") != NULL);
	TFJ_CHECK_LT(tfj_testutil_now_s() - t0, 5);

	/* Other signals are forwarded too and do not start the grace period. */
	memset(&c, 0, sizeof(c));
	c.trigger = "ready";
	c.sig = SIGUSR1;
	TFJ_CHECK_INT(run_sh(&r, &c, "trap 'echo got-usr1; exit 7' USR1; echo ready; "
			   "while :; do sleep 0.05; done", 10), 0);
	TFJ_CHECK_INT(r.exit_code, 7);
	TFJ_CHECK_INT(r.received, 0);
	TFJ_CHECK(strstr(c.out, "got-usr1") != NULL);

	/* An untrapped SIGINT kills it: 128 + 2. */
	memset(&c, 0, sizeof(c));
	c.trigger = "ready";
	c.sig = SIGINT;
	TFJ_CHECK_INT(run_sh(&r, &c, "echo ready; exec sleep 20", 10), 0);
	TFJ_CHECK_INT(r.exit_code, 130);
	TFJ_CHECK_INT(r.received, SIGINT);
}

static void test_grace_period(void)
{
	struct tfj_supervisor_result r;
	struct cap c;
	double t0, dt;

	/* SIGTERM is ignored by the child (and its sleep): SIGKILL after grace. */
	memset(&c, 0, sizeof(c));
	c.trigger = "ready";
	c.sig = SIGTERM;
	t0 = tfj_testutil_now_s();
	TFJ_CHECK_INT(run_sh(&r, &c, "trap '' TERM; echo ready; sleep 30", 0.5), 0);
	dt = tfj_testutil_now_s() - t0;
	TFJ_CHECK_INT(r.exit_code, 137);
	TFJ_CHECK_INT(r.killed, 1);
	TFJ_CHECK_INT(r.received, SIGTERM);
	TFJ_CHECK_GE(dt, 0.45);
	TFJ_CHECK_LT(dt, 5);
	TFJ_CHECK_GE(c.ticks, 5);
}

static void test_reap_orphans(void)
{
	struct tfj_supervisor_result r;
	struct cap c;
	int st;

	/*
	 * The child leaves two background grandchildren and exits; they are
	 * re-parented to us (subreaper) and must be reaped, not left as zombies.
	 */
	memset(&c, 0, sizeof(c));
	TFJ_CHECK_INT(run_sh(&r, &c, "(sleep 0.2; echo late) & (sleep 0.3) >/dev/null 2>&1 & "
			   "echo main-done; exit 4", 5), 0);
	TFJ_CHECK_INT(r.exit_code, 4);
	/* The first orphan kept stdout open, so its line was drained. */
	TFJ_CHECK(strstr(c.out, "late") != NULL);
	TFJ_CHECK(strstr(c.out, "main-done") != NULL);
	/*
	 * The second orphan ends later (and a SIGKILLed grandchild of an
	 * earlier test may still be pending); supervising anything reaps them.
	 * Peek with WNOWAIT so that only the supervisor ever reaps.
	 */
	{
		uint64_t total = r.orphans_reaped;
		double end = tfj_testutil_now_s() + 5;
		siginfo_t si;

		for (;;) {
			struct tfj_supervisor_result r2;
			struct cap c2;

			memset(&si, 0, sizeof(si));
			if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD)
				break;
			if (tfj_testutil_now_s() > end)
				break;
			usleep(100 * 1000);
			memset(&c2, 0, sizeof(c2));
			TFJ_CHECK_INT(run_sh(&r2, &c2, "exit 0", 5), 0);
			total += r2.orphans_reaped;
		}
		TFJ_CHECK_GE(total, 2);
	}
	TFJ_CHECK(waitpid(-1, &st, WNOHANG) < 0 && errno == ECHILD);
}

static void test_passthrough(void)
{
	char tmpl_o[] = "/tmp/tfj-sup-out-XXXXXX", tmpl_e[] = "/tmp/tfj-sup-err-XXXXXX";
	char *argv[] = { "sh", "-c",
		"i=0; while [ $i -lt 300 ]; do printf 'line %d \\001\\377 x\\n' $i; i=$((i+1)); done; "
		"printf 'no-newline'; printf 'err-text\\n' >&2", NULL };
	struct tfj_supervisor_opts o;
	struct tfj_supervisor_result r;
	struct cap c;
	int fo = mkstemp(tmpl_o), fe = mkstemp(tmpl_e);
	char buf[65536];
	ssize_t n;

	TFJ_CHECK_GE(fo, 0);
	TFJ_CHECK_GE(fe, 0);
	memset(&c, 0, sizeof(c));
	memset(&o, 0, sizeof(o));
	o.argv = argv;
	o.grace_s = 5;
	o.drain_s = 1;
	o.out_fd = fo;
	o.err_fd = fe;
	o.on_output = on_output;
	o.ctx = &c;
	TFJ_CHECK_INT(tfj_supervisor_run(&r, &o), 0);
	TFJ_CHECK_INT(r.exit_code, 0);
	/* What reached the sinks is byte-for-byte what the callback saw. */
	n = pread(fo, buf, sizeof(buf), 0);
	TFJ_CHECK_INT(n, c.outlen);
	TFJ_CHECK(n > 0 && memcmp(buf, c.out, (size_t)n) == 0);
	TFJ_CHECK(n > 10 && memcmp(buf + n - 10, "no-newline", 10) == 0);
	TFJ_CHECK(strstr(c.out, "line 299 \001\377 x\n") != NULL);
	n = pread(fe, buf, sizeof(buf), 0);
	TFJ_CHECK_INT(n, 9);
	TFJ_CHECK(n == 9 && memcmp(buf, "err-text\n", 9) == 0);
	close(fo);
	close(fe);
	unlink(tmpl_o);
	unlink(tmpl_e);
}

static void test_exec_failures(void)
{
	char path[] = "/tmp/tfj-sup-noexec-XXXXXX";
	char *missing[] = { "tfj-no-such-command-xyz", NULL };
	char *abs_missing[] = { "/nonexistent/bin/tool", NULL };
	char *noexec[] = { path, NULL };
	struct tfj_supervisor_opts o;
	struct tfj_supervisor_result r;
	int fd = mkstemp(path);

	TFJ_CHECK_GE(fd, 0);
	close(fd);
	chmod(path, 0644);
	memset(&o, 0, sizeof(o));
	o.grace_s = 1;
	o.out_fd = o.err_fd = -1;
	o.argv = missing;
	TFJ_CHECK_INT(tfj_supervisor_run(&r, &o), 0);
	TFJ_CHECK_INT(r.exit_code, 127);
	TFJ_CHECK_INT(r.exec_errno, ENOENT);
	o.argv = abs_missing;
	TFJ_CHECK_INT(tfj_supervisor_run(&r, &o), 0);
	TFJ_CHECK_INT(r.exit_code, 127);
	TFJ_CHECK_INT(r.exec_errno, ENOENT);
	o.argv = noexec;
	TFJ_CHECK_INT(tfj_supervisor_run(&r, &o), 0);
	/* root may "access" a 0644 file as X_OK=false but exec still refuses. */
	TFJ_CHECK_INT(r.exit_code, 126);
	TFJ_CHECK_INT(r.exec_errno, EACCES);
	unlink(path);
	{
		char *none[] = { NULL };
		o.argv = none;
		TFJ_CHECK_LT(tfj_supervisor_run(&r, &o), 0);
	}
}

/* The stop fd ends the command like SIGTERM would, and the result says stopped. */
static void test_stop_fd(void)
{
	struct tfj_supervisor_result r;
	struct cap c;

	memset(&c, 0, sizeof(c));
	TFJ_CHECK_INT(pipe(c.stop_pipe), 0);
	c.use_stop = 1;
	/* Once the command says it serves it has trapped TERM. */
	c.trigger = "serving";
	TFJ_CHECK_INT(run_sh(&r, &c, "trap 'echo bye; exit 7' TERM; echo serving; "
			     "while :; do sleep 0.05; done", 10), 0);
	TFJ_CHECK_INT(r.stopped, 1);
	TFJ_CHECK_INT(r.exit_code, 7);
	TFJ_CHECK_INT(r.received, 0);
	TFJ_CHECK_INT(r.killed, 0);
	TFJ_CHECK(strstr(c.out, "bye") != NULL);
	close(c.stop_pipe[0]);
	close(c.stop_pipe[1]);
}

int main(void)
{
	tfj_supervisor_block_signals();
	TFJ_RUN(test_exit_codes);
	TFJ_RUN(test_forward_sigterm);
	TFJ_RUN(test_grace_period);
	TFJ_RUN(test_stop_fd);
	TFJ_RUN(test_reap_orphans);
	TFJ_RUN(test_passthrough);
	TFJ_RUN(test_exec_failures);
	return tfj_test_finish();
}
