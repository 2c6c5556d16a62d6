/*
 * tfj_testutil.h - helpers shared by the tests and benchmarks of every
 * component: a monotonic clock in seconds, scratch directories, loopback
 * ports and child processes (the test binary re-executing itself, or
 * another built binary).
 *
 * Nothing here asserts: the helpers return what happened and the test
 * checks it. They depend on libc only, so a benchmark may link them without
 * the test harness (library tfj_testutil; tfj_testing brings it along).
 */
#ifndef TFJ_TESTUTIL_H
#define TFJ_TESTUTIL_H

#include <stddef.h>
#include <sys/types.h>

/* Seconds on CLOCK_MONOTONIC, for timeouts and elapsed times in tests. */
double tfj_testutil_now_s(void);

/*
 * Creates a fresh directory /tmp/<prefix>-XXXXXX and writes its path to
 * buf. Returns 0, or -1 (buf is then "") when it does not fit or mkdtemp
 * fails. The caller removes it, e.g. with tfj_testutil_rmtree().
 */
int tfj_testutil_tmpdir(char *buf, size_t cap, const char *prefix);

/* Removes dir and everything below it, not following links. */
void tfj_testutil_rmtree(const char *dir);

/*
 * A TCP socket bound to a free port on 127.0.0.1, not yet listening, with
 * close-on-exec set. Returns the fd and writes the port, or returns -1.
 */
int tfj_testutil_bind_loopback(int *port);

/* A port that was free a moment ago (bind 0, read back, close), or -1. */
int tfj_testutil_free_port(void);

/*
 * The directory of the running executable (readlink /proc/self/exe), to
 * find binaries built next to the test. Returns 0, or -1 when unknown or
 * too long for buf.
 */
int tfj_testutil_exe_dir(char *buf, size_t cap);

/* What tfj_testutil_spawn() starts. Every list ends with NULL. */
struct tfj_testutil_spawn {
	/* The program; NULL re-executes this test binary (/proc/self/exe). */
	const char *exe;
	/* The arguments after argv[0]; NULL for none. At most 62. */
	char *const *args;
	/*
	 * The child's environment is ours minus the entries that start with
	 * one of `drop` ("TF_CONFIG=", "TFJOB_"), minus those that `set`
	 * overrides, plus `set` ("K=V"). Both may be NULL; 255 entries at most.
	 */
	char *const *drop;
	char *const *set;
	/* Files (created or truncated, mode 0600) for the child's stdout and
	 * stderr; NULL inherits ours. "/dev/null" silences it. */
	const char *stdout_path;
	const char *stderr_path;
};

/*
 * Starts the child described by `s`; stdio buffers are flushed first so
 * nothing is written twice. Returns its pid, or -1 when it could not start
 * or an argument or environment list is too long.
 */
pid_t tfj_testutil_spawn(const struct tfj_testutil_spawn *s);

/*
 * Waits for `pid` to exit: at most timeout_s seconds, or without a limit
 * when timeout_s <= 0. Returns its exit code, 128+N when signal N ended
 * it, or -1 on timeout (the child is then killed and reaped) or error.
 */
int tfj_testutil_wait(pid_t pid, double timeout_s);

/*
 * kill(pid, sig) for a child a test spawned; -1 (ESRCH) without signalling
 * anything when pid <= 0, as a failed spawn returns: kill(-1) would signal
 * every process the test may signal, the CI runner among them.
 */
int tfj_testutil_kill(pid_t pid, int sig);

#endif
