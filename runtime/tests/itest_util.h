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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tfj/file.h>

#include "cli/cli.h"
#include "compute/blascore.h"
#include "data/data.h"
#include "cli/launch.h"
#include "wire/pstls.h"
#include "tfj_test.h"
#include "tfj_testutil.h"

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

/*
 * The first statement of every main(): OpenBLAS's kernels chosen as
 * tfjob-runtime's main chooses them (compute/blascore.h: this may execute
 * the test again, once, before anything ran), then itest_dispatch,
 * returning the CLI's code.
 */
#define ITEST_DISPATCH(argc, argv)                                              \
	do {                                                                    \
		int code_;                                                      \
		tfj_blascore_reexec(argv);                                      \
		if (itest_dispatch((argc), (argv), &code_))                     \
			return code_;                                           \
	} while (0)

static char itest_tls_dir_[4096];

static inline void itest_tls_remove_(void)
{
	if (itest_tls_dir_[0])
		tfj_pstls_local_remove(itest_tls_dir_);
}

/*
 * The ps certificate every process a test starts itself uses (pstls.h:
 * the runtime refuses to run without one): a throwaway CA made once per
 * test program, named by TFJOB_PS_TLS_DIR in our environment so children
 * inherit it, removed at exit. Nothing when the environment already names
 * one or turned TLS off. Returns the directory, or NULL.
 */
static inline const char *itest_tls_env(void)
{
	const char *dir = getenv(TFJ_PSTLS_DIR_ENV), *mode = getenv(TFJ_PSTLS_MODE_ENV);

	if ((dir && *dir) || (mode && !strcmp(mode, "off")))
		return dir;
	snprintf(itest_tls_dir_, sizeof(itest_tls_dir_), "/tmp/tfj-itest-tls-XXXXXX");
	if (tfj_pstls_local(itest_tls_dir_) != 0 || setenv(TFJ_PSTLS_DIR_ENV, itest_tls_dir_, 1)) {
		itest_tls_dir_[0] = '\0';
		return NULL;
	}
	atexit(itest_tls_remove_);
	return itest_tls_dir_;
}

/* The CA of itest_tls_env's certificate, for a test's own channel to a ps (caller frees). */
static inline char *itest_tls_ca(void)
{
	const char *dir = itest_tls_env();
	char path[4200], *pem = NULL;
	size_t len;

	if (!dir)
		return NULL;
	snprintf(path, sizeof(path), "%s/%s", dir, TFJ_PSTLS_CA_FILE);
	return tfj_file_read(&pem, &len, path, TFJ_PSTLS_PEM_MAX, 0) == 0 ? pem : NULL;
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
static inline int itest_launch_to(struct tfj_launch_result *res, FILE *out, int nps,
				  int nworkers, int chief, int evaluator, const char *kill,
				  int64_t kill_at_step, char *const *flags)
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
	o.quiet = out == NULL && getenv("ITEST_VERBOSE") == NULL;
	o.out = out;
	if (kill) {
		snprintf(o.kill_task, sizeof(o.kill_task), "%s", kill);
		o.kill_at_step = kill_at_step; /* lands mid-run on fast and slow machines alike */
	}
	return tfj_launch_run(&o, res);
}

static inline int itest_launch(struct tfj_launch_result *res, int nps, int nworkers, int chief,
			       int evaluator, const char *kill, int64_t kill_at_step,
			       char *const *flags)
{
	return itest_launch_to(res, NULL, nps, nworkers, chief, evaluator, kill, kill_at_step,
			       flags);
}

/* Lines of `out` (a launch's whole output) from `task` ("[ps:1]") that contain `needle`. */
static inline int itest_count_lines(FILE *out, const char *task, const char *needle)
{
	char line[4096];
	size_t tl = strlen(task);
	int n = 0;

	rewind(out);
	while (fgets(line, sizeof(line), out))
		if (strncmp(line, task, tl) == 0 && strstr(line, needle))
			n++;
	return n;
}

/*
 * Starts `<self> args...` in the background, marked TFJ_ITEST_CHILD, with
 * TF_CONFIG set to tf_config (NULL: unset, so a TF_CONFIG in the test's own
 * environment never leaks in) and stdout silenced when `quiet`. Returns
 * the pid or -1.
 */
static inline pid_t itest_spawn_quiet(char *const *args, const char *tf_config, int quiet)
{
	static char *const drop[] = { "TF_CONFIG=", NULL };
	char *set[3] = { "TFJ_ITEST_CHILD=1", NULL, NULL };
	struct tfj_testutil_spawn s = { 0 };
	char *tf = NULL;
	pid_t pid;

	if (tf_config) {
		size_t n = strlen(tf_config) + sizeof("TF_CONFIG=");

		tf = malloc(n);
		if (!tf)
			return -1;
		snprintf(tf, n, "TF_CONFIG=%s", tf_config);
		set[1] = tf;
	}
	itest_tls_env();
	s.args = args;
	s.drop = drop;
	s.set = set;
	s.stdout_path = quiet ? "/dev/null" : NULL;
	pid = tfj_testutil_spawn(&s);
	free(tf);
	return pid;
}

/*
 * Starts `<self> args...` marked TFJ_ITEST_CHILD, without TF_CONFIG and
 * TFJOB_PS_SECRET_FILE from the test's environment, plus env_kv ("K=V";
 * NULL: none), stdout and stderr to out_path / err_path (NULL: ours).
 * Returns the pid or -1.
 */
static inline pid_t itest_spawn_env(char *const *args, char *env_kv, const char *out_path,
				    const char *err_path)
{
	static char *const drop[] = { "TF_CONFIG=", "TFJOB_PS_SECRET_FILE=", NULL };
	char *set[] = { "TFJ_ITEST_CHILD=1", env_kv, NULL };
	struct tfj_testutil_spawn s = { 0 };

	itest_tls_env();
	s.args = args;
	s.drop = drop;
	s.set = set;
	s.stdout_path = out_path;
	s.stderr_path = err_path;
	return tfj_testutil_spawn(&s);
}

/* Starts `<self> args...` in the background; returns the pid or -1. */
static inline pid_t itest_spawn_self(char *const *args, const char *tf_config)
{
	return itest_spawn_quiet(args, tf_config, 0);
}

/*
 * Trains on `nps` ps and `nworkers` workers (no chief, no evaluator) with
 * `flags`; the run must end cleanly with a final evaluation of at least
 * `min_accuracy`. Prints `what` and the run's numbers.
 */
static inline void itest_train_expect(const char *what, int nps, int nworkers,
				      char *const *flags, double min_accuracy)
{
	struct tfj_launch_result res;

	TFJ_CHECK_INT(itest_launch(&res, nps, nworkers, 0, 0, NULL, 0, flags), 0);
	printf("%s: test accuracy %.4f, %.0f examples/s, %.1f s\n", what, res.test_accuracy,
	       res.examples_per_sec, res.wall_s);
	TFJ_CHECK_INT(res.exit_code, 0);
	TFJ_CHECK(res.have_final);
	TFJ_CHECK_GE(res.test_accuracy, min_accuracy);
}

/* Runs `<self> args...` to its end; returns its exit code or -1. */
static inline int itest_run_self(char *const *args, const char *tf_config, int quiet)
{
	pid_t pid = itest_spawn_quiet(args, tf_config, quiet);

	return pid < 0 ? -1 : tfj_testutil_wait(pid, 0);
}

#endif
