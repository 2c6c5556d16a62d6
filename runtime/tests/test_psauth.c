/*
 * test_psauth.c - the per-job ps secret: loading, the check, the counters.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/grpc.h>

#include <tfj/err.h>

#include "wire/psauth.h"
#include "tfj_test.h"
#include "tfj_testutil.h"

#define SECRET "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static char dir[128];

static const char *put(const char *name, const char *data)
{
	static char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "wb");
	if (f) {
		fputs(data, f);
		fclose(f);
	}
	return p;
}

static void test_off_without_file(void)
{
	struct tfj_psauth a;

	TFJ_CHECK_OK(tfj_psauth_load(&a, NULL));
	TFJ_CHECK(!tfj_psauth_on(&a));
	/* Off: everything passes and nothing is counted as refused. */
	TFJ_CHECK_OK(tfj_psauth_check(&a, NULL, 0));
	TFJ_CHECK_OK(tfj_psauth_check(&a, "Bearer nonsense", 15));
	TFJ_CHECK_INT(a.refused, 0);
	TFJ_CHECK_OK(tfj_psauth_load(&a, ""));
	TFJ_CHECK(!tfj_psauth_on(&a));
	tfj_psauth_free(&a);
}

static void test_right_and_wrong(void)
{
	struct tfj_psauth a;
	char v[128];
	size_t n;

	/* The trailing newline of an editor or `echo` is not part of the secret. */
	TFJ_CHECK_OK(tfj_psauth_load(&a, put("ok", SECRET "\n")));
	TFJ_CHECK(tfj_psauth_on(&a));
	TFJ_CHECK_INT(a.len, strlen(SECRET));
	n = (size_t)snprintf(v, sizeof(v), "Bearer %s", SECRET);
	TFJ_CHECK_OK(tfj_psauth_check(&a, v, n));
	/* None, empty, no scheme, other scheme, one byte off, a prefix, one byte more. */
	TFJ_CHECK_INT(tfj_psauth_check(&a, NULL, 0), TFJ_EAUTH);
	TFJ_CHECK_INT(tfj_psauth_check(&a, "Bearer ", 7), TFJ_EAUTH);
	TFJ_CHECK_INT(tfj_psauth_check(&a, SECRET, strlen(SECRET)), TFJ_EAUTH);
	n = (size_t)snprintf(v, sizeof(v), "Basic %s", SECRET);
	TFJ_CHECK_INT(tfj_psauth_check(&a, v, n), TFJ_EAUTH);
	n = (size_t)snprintf(v, sizeof(v), "Bearer %s", SECRET);
	v[n - 1] = 'X';
	TFJ_CHECK_INT(tfj_psauth_check(&a, v, n), TFJ_EAUTH);
	v[n - 1] = SECRET[strlen(SECRET) - 1];
	TFJ_CHECK_INT(tfj_psauth_check(&a, v, n - 1), TFJ_EAUTH);
	n = (size_t)snprintf(v, sizeof(v), "Bearer %sf", SECRET);
	TFJ_CHECK_INT(tfj_psauth_check(&a, v, n), TFJ_EAUTH);
	TFJ_CHECK_INT(a.accepted, 1);
	TFJ_CHECK_INT(a.refused, 7);
	tfj_psauth_free(&a);
	TFJ_CHECK(!tfj_psauth_on(&a));
}

static void test_metadata(void)
{
	struct tfj_psauth a;
	grpc_metadata_array md;
	grpc_metadata e[2];
	char v[128];
	size_t n;

	TFJ_CHECK_OK(tfj_psauth_load(&a, put("md", SECRET)));
	memset(e, 0, sizeof(e));
	md.count = 0;
	md.capacity = 2;
	md.metadata = e;
	/* No authorization entry at all. */
	TFJ_CHECK_INT(tfj_psauth_check_md(&a, &md), TFJ_EAUTH);
	n = (size_t)snprintf(v, sizeof(v), "Bearer %s", SECRET);
	e[0].key = grpc_slice_from_static_string("user-agent");
	e[0].value = grpc_slice_from_static_string("x");
	e[1].key = grpc_slice_from_static_string("authorization");
	e[1].value = grpc_slice_from_copied_buffer(v, n);
	md.count = 2;
	TFJ_CHECK_OK(tfj_psauth_check_md(&a, &md));
	TFJ_CHECK_INT(tfj_psauth_check_md(&a, NULL), TFJ_EAUTH);
	grpc_slice_unref(e[1].value);
	TFJ_CHECK_INT(a.accepted, 1);
	TFJ_CHECK_INT(a.refused, 2);
	tfj_psauth_free(&a);
}

static void test_bad_files(void)
{
	struct tfj_psauth a;
	char big[TFJ_PSAUTH_MAX_BYTES + 8];

	/* A named file that is missing: an error, never "off". */
	TFJ_CHECK_INT(tfj_psauth_load(&a, "/nonexistent/ps-secret"), TFJ_ENOTFOUND);
	TFJ_CHECK(!tfj_psauth_on(&a));
	TFJ_CHECK_INT(tfj_psauth_load(&a, put("short", "abc")), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_psauth_load(&a, put("space", "0123456789 abcdef0123")), TFJ_EINVAL);
	TFJ_CHECK(strstr(tfj_err_detail(), "0123456789") == NULL); /* never echoes the secret */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	TFJ_CHECK_INT(tfj_psauth_load(&a, put("big", big)), TFJ_ETOOBIG);
	TFJ_CHECK(!tfj_psauth_on(&a));
}

static void test_env(void)
{
	struct tfj_psauth a;

	unsetenv(TFJ_PSAUTH_ENV);
	TFJ_CHECK_OK(tfj_psauth_from_env(&a));
	TFJ_CHECK(!tfj_psauth_on(&a));
	setenv(TFJ_PSAUTH_ENV, put("env", SECRET), 1);
	TFJ_CHECK_OK(tfj_psauth_from_env(&a));
	TFJ_CHECK(tfj_psauth_on(&a));
	tfj_psauth_free(&a);
	unsetenv(TFJ_PSAUTH_ENV);
}

int main(void)
{
	if (tfj_testutil_tmpdir(dir, sizeof(dir), "tfj-psauth") != 0)
		return 1;
	TFJ_RUN(test_off_without_file);
	TFJ_RUN(test_right_and_wrong);
	TFJ_RUN(test_metadata);
	TFJ_RUN(test_bad_files);
	TFJ_RUN(test_env);
	tfj_testutil_rmtree(dir);
	return tfj_test_finish();
}
