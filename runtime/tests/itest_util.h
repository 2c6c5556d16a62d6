/*
 * itest_util.h - helpers for the runtime's integration tests.
 *
 * Every integration test program doubles as the tfjob-runtime binary: when
 * called as `<test> train ...` or `<test> launch ...` it runs the CLI, so
 * launch can re-execute /proc/self/exe for the cluster's tasks. The tests
 * run real processes talking gRPC over 127.0.0.1; they need the
 * Fashion-MNIST files and exit 77 (skipped) without them.
 */
#ifndef TFJ_ITEST_UTIL_H
#define TFJ_ITEST_UTIL_H

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "data.h"
#include "launch.h"
#include "tfj_test.h"

/*
 * Runs the CLI when the test binary was started as the runtime: by launch
 * (`train`) or by itest_run_self/itest_spawn_self, which mark their
 * children with TFJ_ITEST_CHILD so that a child never runs the tests again,
 * whatever its arguments.
 */
static inline int itest_dispatch(int argc, char **argv, int *code)
{
	if (getenv("TFJ_ITEST_CHILD") ||
	    (argc > 1 && (strcmp(argv[1], "train") == 0 || strcmp(argv[1], "launch") == 0))) {
		*code = tfj_cli_main(argc, argv);
		return 1;
	}
	return 0;
}

static inline void itest_require_data(void)
{
	const char *dir = getenv("TFJOB_DATA_DIR");
	char path[1024];
	struct stat st;

	snprintf(path, sizeof(path), "%s/train-images-idx3-ubyte.gz",
		 dir ? dir : TFJ_DATA_DEFAULT_DIR);
	if (stat(path, &st) != 0) {
		snprintf(path, sizeof(path), "%s/train-images-idx3-ubyte",
			 dir ? dir : TFJ_DATA_DEFAULT_DIR);
		if (stat(path, &st) != 0) {
			printf("skip: Fashion-MNIST not installed (dataset-fashion-mnist)\n");
			exit(77);
		}
	}
	/* One BLAS thread per task: the cluster's processes share the cores. */
	setenv("OPENBLAS_NUM_THREADS", "1", 0);
}

/* Launches a local cluster; argv-style flags end with NULL. */
static inline int itest_launch(struct tfj_launch_result *res, int nps, int nworkers, int chief,
			       int evaluator, const char *kill, int64_t kill_at_step,
			       char *const *flags)
{
	struct tfj_launch_opts o;
	int n = 0;

	memset(&o, 0, sizeof(o));
	while (flags[n])
		n++;
	o.nps = nps;
	o.nworkers = nworkers;
	o.chief = chief;
	o.evaluator = evaluator;
	o.timeout_s = 600;
	o.exe = "/proc/self/exe";
	o.nfwd = n;
	o.fwd = flags;
	o.max_restarts = 3;
	o.quiet = getenv("ITEST_VERBOSE") == NULL;
	if (kill) {
		snprintf(o.kill_task, sizeof(o.kill_task), "%s", kill);
		o.kill_at_step = kill_at_step; /* lands mid-run on fast and slow machines alike */
	}
	return tfj_launch_run(&o, res);
}

/* Runs `<self> args...` with TF_CONFIG (NULL: unset); returns its exit code. */
static inline int itest_run_self(char *const *args, const char *tf_config, int quiet)
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		char *argv[64];
		int n = 0;

		argv[n++] = "/proc/self/exe";
		while (args[n - 1] && n < 63) {
			argv[n] = args[n - 1];
			n++;
		}
		argv[n] = NULL;
		setenv("TFJ_ITEST_CHILD", "1", 1);
		if (tf_config)
			setenv("TF_CONFIG", tf_config, 1);
		else
			unsetenv("TF_CONFIG");
		if (quiet) {
			FILE *f = freopen("/dev/null", "w", stdout);
			(void)f;
		}
		execv("/proc/self/exe", argv);
		_exit(126);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Starts `<self> args...` in the background; returns the pid. */
static inline pid_t itest_spawn_self(char *const *args, const char *tf_config)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		char *argv[64];
		int n = 0;

		argv[n++] = "/proc/self/exe";
		while (args[n - 1] && n < 63) {
			argv[n] = args[n - 1];
			n++;
		}
		argv[n] = NULL;
		setenv("TFJ_ITEST_CHILD", "1", 1);
		if (tf_config)
			setenv("TF_CONFIG", tf_config, 1);
		execv("/proc/self/exe", argv);
		_exit(126);
	}
	return pid;
}

static inline int itest_free_port(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static int itest_rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static inline void itest_rmtree(const char *dir)
{
	nftw(dir, itest_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static inline void itest_tmpdir(char *buf, size_t cap)
{
	snprintf(buf, cap, "/tmp/tfj-itest-XXXXXX");
	if (!mkdtemp(buf))
		buf[0] = '\0';
}

#endif
