/*
 * itest_device.c - one binary for CPU and GPU, checked on the real
 * tfjob-runtime built next to this test:
 *   - its ELF file names no CUDA library (NEEDED), so it starts on a node
 *     without one;
 *   - `--device auto` trains (a local 1 ps + 1 worker cluster), on the CPU
 *     with a log line saying why when there is no GPU;
 *   - `--device gpu` without a usable GPU or without the backend library
 *     exits with TFJ_EXIT_DEVICE (7) and says why;
 *   - a backend library with the wrong plugin ABI is refused by the binary;
 *   - the real backend library (CUDA builds) exports only the entry point
 *     and needs no runtime symbol.
 * On a machine with a GPU and a CUDA build, the auto/gpu runs train on the
 * GPU instead and the test checks that.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <tfj/err.h>
#include <tfj/exitcode.h>
#include <tfj/file.h>
#include <tfj_test.h>
#include <tfj_testutil.h>

#include "compute/compute.h"
#include "compute/compute_backend.h"

static char bindir[4096], runtime[4200], tmp[256], out_path[512], err_path[512];
static int have_gpu;

/* Runs exe with args; returns its exit code and leaves stdout+stderr in *text. */
static int run(const char *exe, char *const *args, const char *lib_env, char **text)
{
	char envbuf[4300];
	char *set[] = { "OPENBLAS_NUM_THREADS=1", envbuf, NULL };
	char *drop[] = { "TF_CONFIG=", "TFJOB_", NULL };
	struct tfj_testutil_spawn s = { 0 };
	char *o = NULL, *e = NULL;
	size_t ol = 0, el = 0;
	pid_t pid;
	int code;

	*text = NULL;
	snprintf(envbuf, sizeof(envbuf), "TFJOB_COMPUTE_CUDA_LIB=%s", lib_env ? lib_env : "");
	s.exe = exe;
	s.args = args;
	s.drop = drop;
	s.set = set;
	s.stdout_path = out_path;
	s.stderr_path = err_path;
	pid = tfj_testutil_spawn(&s);
	TFJ_CHECK(pid > 0);
	if (pid <= 0)
		return -1;
	code = tfj_testutil_wait(pid, 300);
	TFJ_CHECK_INT(tfj_file_read(&o, &ol, out_path, 1 << 22, 0), 0);
	TFJ_CHECK_INT(tfj_file_read(&e, &el, err_path, 1 << 22, 0), 0);
	if (o && e) {
		*text = malloc(ol + el + 2);
		if (*text)
			snprintf(*text, ol + el + 2, "%s\n%s", o, e);
	}
	free(o);
	free(e);
	return code;
}

static void check_has(const char *text, const char *needle, int want)
{
	int has = text && strstr(text, needle) != NULL;

	tfj_test_count();
	if (has != want)
		tfj_test_fail(__FILE__, __LINE__, "output %s \"%s\":\n%s", want ? "lacks" : "has",
			      needle, text ? text : "(none)");
}

/* `tfjob-runtime launch` of one ps and one worker on synthetic data. */
static int launch(const char *device, const char *lib_env, char **text)
{
	char dev[32];
	char *args[] = { "launch", "--ps", "1", "--workers", "1", "--dataset", "synthetic",
			 "--synthetic-examples", "1000", "--max-steps", "10", "--ps-linger", "0.1",
			 "--device", dev, NULL };

	snprintf(dev, sizeof(dev), "%s", device);
	return run(runtime, args, lib_env, text);
}

static void test_no_cuda_needed(void)
{
	char *args[] = { "-d", "-W", runtime, NULL };
	char *text = NULL;

	TFJ_CHECK_INT(run("/usr/bin/readelf", args, NULL, &text), 0);
	/* Sanity: the dynamic section was read at all. */
	check_has(text, "(NEEDED)", 1);
	check_has(text, "libcudart", 0);
	check_has(text, "libcublas", 0);
	check_has(text, "libcuda.so", 0);
	check_has(text, "libstdc++", 0);
	free(text);
}

static void test_auto_trains(void)
{
	char *text = NULL;

	TFJ_CHECK_INT(launch("auto", NULL, &text), TFJ_EXIT_OK);
	check_has(text, "\"final\":true,\"step\":10", 1);
	check_has(text, "device auto: no usable GPU, using the CPU", !have_gpu);
	free(text);
}

static void test_gpu_fails_clearly(void)
{
	char *text = NULL;
	int code = launch("gpu", NULL, &text);

	if (have_gpu) {
		TFJ_CHECK_INT(code, TFJ_EXIT_OK);
	} else {
		TFJ_CHECK_INT(code, TFJ_EXIT_DEVICE);
		check_has(text, "exit=device", 1);
		/* No library: says so; a library without a GPU: CUDA's reason. */
		check_has(text, TFJ_HAVE_CUDA_LIB ? "detail=\"cuda: " :
			  "device gpu requested but the CUDA backend is unavailable", 1);
	}
	free(text);
}

/* Launches with `device` and library `lib_env`; wants `code` and `needle`. */
static void expect_launch(const char *device, const char *lib_env, int code, const char *needle)
{
	char *text = NULL;

	TFJ_CHECK_INT(launch(device, lib_env, &text), code);
	check_has(text, needle, 1);
	free(text);
}

/* A library that loads but finds no device: auto falls back, gpu exits 7. */
static void test_library_without_device(void)
{
	expect_launch("auto", TFJ_FAKE_COMPUTE_OK, TFJ_EXIT_OK,
		      "reason=\"fake backend: no device (variant 0)\"");
	expect_launch("gpu", TFJ_FAKE_COMPUTE_OK, TFJ_EXIT_DEVICE,
		      "fake backend: no device (variant 0)");
}

static void test_wrong_abi_refused(void)
{
	expect_launch("gpu", TFJ_FAKE_COMPUTE_ABI, TFJ_EXIT_DEVICE,
		      "plugin ABI version 2, this runtime needs 1");
	expect_launch("gpu", TFJ_FAKE_COMPUTE_NOSYM, TFJ_EXIT_DEVICE,
		      "has no symbol tfj_compute_plugin_entry");
}

/* The real library: one export, no undefined runtime symbol, links cuBLAS. */
static void test_real_library_symbols(void)
{
	char lib[4300];
	char *dyn[] = { "--dyn-syms", "-W", lib, NULL };
	char *dep[] = { "-d", "-W", lib, NULL };
	char *text = NULL, *line, *nl;
	int entries = 0;

	snprintf(lib, sizeof(lib), "%s/%s", bindir, TFJ_COMPUTE_CUDA_LIB);
	if (!TFJ_HAVE_CUDA_LIB) {
		printf("  (no CUDA backend library in this build)\n");
		TFJ_CHECK_INT(TFJ_HAVE_CUDA_LIB, 0);
		return;
	}
	TFJ_CHECK_INT(run("/usr/bin/readelf", dyn, NULL, &text), 0);
	for (line = text; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (!strstr(line, " tfj_"))
			continue;
		if (strstr(line, "tfj_compute_plugin_entry@@TFJ_COMPUTE_1") &&
		    !strstr(line, " UND "))
			entries++;
		else
			tfj_test_fail(__FILE__, __LINE__, "unexpected symbol: %s", line);
	}
	TFJ_CHECK_INT(entries, 1);
	free(text);
	TFJ_CHECK_INT(run("/usr/bin/readelf", dep, NULL, &text), 0);
	check_has(text, "libcublas.so", 1);
	check_has(text, "libcudart.so", 1);
	free(text);
}

int main(void)
{
	struct tfj_compute *c = NULL;
	struct stat st;

	if (tfj_testutil_exe_dir(bindir, sizeof(bindir)) < 0)
		return 1;
	snprintf(runtime, sizeof(runtime), "%s/tfjob-runtime", bindir);
	if (stat(runtime, &st) != 0 || stat("/usr/bin/readelf", &st) != 0) {
		printf("skip: needs %s and /usr/bin/readelf (binutils)\n", runtime);
		return 77;
	}
	if (tfj_testutil_tmpdir(tmp, sizeof(tmp), "tfj-itest-device") < 0)
		return 1;
	snprintf(out_path, sizeof(out_path), "%s/stdout", tmp);
	snprintf(err_path, sizeof(err_path), "%s/stderr", tmp);
	/* The same loader as the binary's decides whether this machine has a GPU. */
	have_gpu = tfj_compute_open(&c, "gpu", 0) == 0;
	tfj_compute_free(c);
	printf("  GPU here: %s\n", have_gpu ? "yes" : "no");
	TFJ_RUN(test_no_cuda_needed);
	TFJ_RUN(test_auto_trains);
	TFJ_RUN(test_gpu_fails_clearly);
	TFJ_RUN(test_library_without_device);
	TFJ_RUN(test_wrong_abi_refused);
	TFJ_RUN(test_real_library_symbols);
	tfj_testutil_rmtree(tmp);
	return tfj_test_finish();
}
