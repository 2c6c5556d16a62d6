/*
 * test_computelib.c - the backend library loader: it accepts a library with
 * the runtime's plugin ABI and refuses a wrong ABI version, a wrong vtable
 * size, an incomplete vtable, a missing entry point, a file that is no
 * library and a missing file; it finds the library through
 * TFJOB_COMPUTE_CUDA_LIB; and tfj_compute_open falls back (auto) or fails
 * (gpu) as documented when the library loads but has no device. The fake
 * libraries are built from tests/fixtures/fake_plugin.c (runtime/cuda.cmake).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tfj/err.h>
#include <tfj_test.h>
#include <tfj_testutil.h>

#include "compute/compute.h"
#include "compute/computelib.h"

/* Loads path, expects `want`, and a detail containing `needle` on failure. */
static void expect_refused(const char *path, int want, const char *needle)
{
	struct tfj_computelib *lib = (struct tfj_computelib *)1;

	TFJ_CHECK_INT(tfj_computelib_load(&lib, path), want);
	TFJ_CHECK(lib == NULL);
	if (!strstr(tfj_err_detail(), needle))
		tfj_test_fail(__FILE__, __LINE__, "detail \"%s\" lacks \"%s\"", tfj_err_detail(),
			      needle);
}

static void test_accepts_matching_abi(void)
{
	struct tfj_computelib *lib = NULL;
	const struct tfj_compute_ops *ops;
	void *state = (void *)1;
	char name[64];

	TFJ_CHECK_INT(tfj_computelib_load(&lib, TFJ_FAKE_COMPUTE_OK), 0);
	ops = tfj_computelib_ops(lib);
	TFJ_CHECK(ops != NULL);
	if (!ops)
		goto out;
	TFJ_CHECK_STR(ops->kind, "gpu");
	/* The library's detail reaches our thread-local error through the host. */
	tfj_err_clear();
	TFJ_CHECK_INT(ops->open(&state, name, sizeof(name)), TFJ_EDEVICE);
	TFJ_CHECK_STR(tfj_err_detail(), "fake backend: no device (variant 0)");
	TFJ_CHECK(state == NULL);
out:
	tfj_computelib_unload(lib);
	tfj_computelib_unload(NULL);
	TFJ_CHECK(tfj_computelib_ops(NULL) == NULL);
}

static void test_refuses_broken_libraries(void)
{
	char dir[256], path[512];
	FILE *f;

	expect_refused(TFJ_FAKE_COMPUTE_ABI, TFJ_EDEVICE, "plugin ABI version 2, this runtime needs 1");
	expect_refused(TFJ_FAKE_COMPUTE_NOSYM, TFJ_EDEVICE, "has no symbol tfj_compute_plugin_entry");
	expect_refused(TFJ_FAKE_COMPUTE_SIZE, TFJ_EDEVICE, "vtable of");
	expect_refused(TFJ_FAKE_COMPUTE_INCOMPLETE, TFJ_EDEVICE, "incomplete vtable");
	expect_refused("/nonexistent/libtfjob-compute-cuda.so", TFJ_ENOTFOUND, "no such file");
	/* A file that is not a shared object: dlopen's own reason is passed on. */
	TFJ_CHECK_INT(tfj_testutil_tmpdir(dir, sizeof(dir), "tfj-computelib"), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, TFJ_COMPUTE_CUDA_LIB);
	f = fopen(path, "w");
	TFJ_CHECK(f != NULL);
	if (f) {
		fputs("not an ELF file\n", f);
		fclose(f);
		expect_refused(path, TFJ_EDEVICE, "cannot load");
	}
	tfj_testutil_rmtree(dir);
	TFJ_CHECK_INT(tfj_computelib_load(NULL, TFJ_FAKE_COMPUTE_OK), TFJ_EINVAL);
}

static void test_find(void)
{
	char buf[4096], exe[4096], want[4200];

	TFJ_CHECK_INT(setenv("TFJOB_COMPUTE_CUDA_LIB", TFJ_FAKE_COMPUTE_OK, 1), 0);
	TFJ_CHECK_INT(tfj_computelib_find(buf, sizeof(buf)), 0);
	TFJ_CHECK_STR(buf, TFJ_FAKE_COMPUTE_OK);
	TFJ_CHECK_INT(tfj_computelib_find(buf, 8), TFJ_ETOOBIG);
	/* An explicit path that does not exist is not replaced by another. */
	TFJ_CHECK_INT(setenv("TFJOB_COMPUTE_CUDA_LIB", "/nonexistent/x.so", 1), 0);
	TFJ_CHECK_INT(tfj_computelib_find(buf, sizeof(buf)), TFJ_ENOTFOUND);
	TFJ_CHECK(strstr(tfj_err_detail(), "/nonexistent/x.so") != NULL);
	/* Unset: next to the executable, where the build puts the real one. */
	TFJ_CHECK_INT(unsetenv("TFJOB_COMPUTE_CUDA_LIB"), 0);
	TFJ_CHECK_INT(tfj_testutil_exe_dir(exe, sizeof(exe)), 0);
	snprintf(want, sizeof(want), "%s/%s", exe, TFJ_COMPUTE_CUDA_LIB);
	if (TFJ_HAVE_CUDA_LIB) {
		TFJ_CHECK_INT(tfj_computelib_find(buf, sizeof(buf)), 0);
		TFJ_CHECK_STR(buf, want);
	} else {
		TFJ_CHECK_INT(tfj_computelib_find(buf, sizeof(buf)), TFJ_ENOTFOUND);
		TFJ_CHECK(strstr(tfj_err_detail(), want) != NULL);
		TFJ_CHECK(strstr(tfj_err_detail(), "/../lib/tfjob/" TFJ_COMPUTE_CUDA_LIB) != NULL);
	}
}

/* The real library of a CUDA build loads and passes the ABI check here. */
static void test_real_library(void)
{
	struct tfj_computelib *lib = NULL;
	char exe[4096], path[4200];

	if (!TFJ_HAVE_CUDA_LIB) {
		printf("  (no CUDA backend library in this build)\n");
		TFJ_CHECK_INT(TFJ_HAVE_CUDA_LIB, 0);
		return;
	}
	TFJ_CHECK_INT(tfj_testutil_exe_dir(exe, sizeof(exe)), 0);
	snprintf(path, sizeof(path), "%s/%s", exe, TFJ_COMPUTE_CUDA_LIB);
	TFJ_CHECK_INT(tfj_computelib_load(&lib, path), 0);
	TFJ_CHECK(tfj_computelib_ops(lib) != NULL);
	tfj_computelib_unload(lib);
}

/*
 * Through tfj_compute_open, with the fake library standing in for the CUDA
 * one on a node without a GPU. The process loads the library once, so this
 * runs after the loader tests have set TFJOB_COMPUTE_CUDA_LIB for good.
 */
static void test_open_falls_back(void)
{
	struct tfj_compute *c = NULL;

	TFJ_CHECK_INT(setenv("TFJOB_COMPUTE_CUDA_LIB", TFJ_FAKE_COMPUTE_OK, 1), 0);
	TFJ_CHECK_INT(tfj_compute_have_cuda(), 1);
	TFJ_CHECK_INT(tfj_compute_open(&c, "auto", 0), 0);
	TFJ_CHECK_INT(tfj_compute_is_gpu(c), 0);
	TFJ_CHECK_STR(tfj_compute_name(c), "cpu (openblas)");
	tfj_compute_free(c);
	c = NULL;
	TFJ_CHECK_INT(tfj_compute_open(&c, "gpu", 0), TFJ_EDEVICE);
	TFJ_CHECK(c == NULL);
	TFJ_CHECK(strstr(tfj_err_detail(), "fake backend: no device") != NULL);
}

int main(void)
{
	TFJ_RUN(test_accepts_matching_abi);
	TFJ_RUN(test_refuses_broken_libraries);
	TFJ_RUN(test_find);
	TFJ_RUN(test_real_library);
	TFJ_RUN(test_open_falls_back);
	return tfj_test_finish();
}
