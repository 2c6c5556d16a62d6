/*
 * test_file.c - bounded whole-file reads and secret reads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tfj/err.h>
#include <tfj/file.h>

#include "tfj_test.h"

static char dir[64];

static const char *put(const char *name, const char *data, size_t n)
{
	static char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "wb");
	if (f) {
		fwrite(data, 1, n, f);
		fclose(f);
	}
	return p;
}

static void test_read_whole_and_cap(void)
{
	const char *p = put("exact", "12345", 5);
	char *out = NULL;
	size_t len = 99;

	/* Exactly at the cap is fine; one byte over is TFJ_ETOOBIG with nothing out. */
	TFJ_CHECK_INT(tfj_file_read(&out, &len, p, 5, TFJ_FILE_REGULAR), 0);
	TFJ_CHECK(out != NULL && len == 5 && memcmp(out, "12345", 6) == 0);
	free(out);
	out = (char *)p;
	TFJ_CHECK_INT(tfj_file_read(&out, &len, p, 4, TFJ_FILE_REGULAR), TFJ_ETOOBIG);
	TFJ_CHECK(out == NULL && len == 0);
	TFJ_CHECK(strstr(tfj_err_detail(), "exact") != NULL);

	p = put("empty", "", 0);
	TFJ_CHECK_INT(tfj_file_read(&out, &len, p, 0, TFJ_FILE_REGULAR), 0);
	TFJ_CHECK_INT(len, 0);
	TFJ_CHECK_STR(out, "");
	free(out);
}

/* Larger than the first chunk: the buffer grows to the cap and no further. */
static void test_growth(void)
{
	size_t n = 100000, len = 0, i;
	char *data = malloc(n), *out = NULL;

	TFJ_CHECK(data != NULL);
	if (!data)
		return;
	for (i = 0; i < n; i++)
		data[i] = (char)('a' + i % 26);
	TFJ_CHECK_INT(tfj_file_read(&out, &len, put("big", data, n), n, 0), 0);
	TFJ_CHECK_INT(len, n);
	TFJ_CHECK(out && memcmp(out, data, n) == 0 && out[n] == '\0');
	free(out);
	/* A pipe has no size to hint at: the loop alone enforces the cap. */
	TFJ_CHECK_INT(tfj_file_read(&out, &len, "/dev/zero", 10000, 0), TFJ_ETOOBIG);
	TFJ_CHECK(out == NULL);
	free(data);
}

static void test_errors(void)
{
	char *out = NULL;
	size_t len;
	char p[128];

	snprintf(p, sizeof(p), "%s/missing", dir);
	TFJ_CHECK_INT(tfj_file_read(&out, &len, p, 10, 0), TFJ_ENOTFOUND);
	TFJ_CHECK(strstr(tfj_err_detail(), "missing") != NULL);
	TFJ_CHECK_INT(tfj_file_read_secret(&out, &len, p, 10), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(tfj_file_read(&out, &len, dir, 10, TFJ_FILE_REGULAR), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_file_read(&out, &len, "/dev/null", 10, TFJ_FILE_REGULAR), TFJ_EINVAL);
	/* Without the flag a character device reads like an empty file. */
	TFJ_CHECK_INT(tfj_file_read(&out, &len, "/dev/null", 10, 0), 0);
	TFJ_CHECK_INT(len, 0);
	free(out);
	TFJ_CHECK_INT(tfj_file_read(&out, &len, NULL, 10, 0), TFJ_EINVAL);
}

static void test_secret_trim(void)
{
	char *out = NULL;
	size_t len;

	TFJ_CHECK_INT(tfj_file_read_secret(&out, &len, put("t1", "abc.def\n", 8), 64), 0);
	TFJ_CHECK_STR(out, "abc.def");
	TFJ_CHECK_INT(len, 7);
	tfj_file_secret_free(out);
	/* Only trailing ASCII whitespace goes; leading and inner bytes stay. */
	TFJ_CHECK_INT(tfj_file_read_secret(&out, &len, put("t2", " a b\t\r\n \n", 9), 64), 0);
	TFJ_CHECK_STR(out, " a b");
	TFJ_CHECK_INT(len, 4);
	tfj_file_secret_free(out);
	TFJ_CHECK_INT(tfj_file_read_secret(&out, &len, put("t3", "\n\n", 2), 64), 0);
	TFJ_CHECK_STR(out, "");
	TFJ_CHECK_INT(len, 0);
	tfj_file_secret_free(out);
	/* The cap counts the bytes in the file, before trimming. */
	TFJ_CHECK_INT(tfj_file_read_secret(&out, &len, put("t4", "abcd\n", 5), 4), TFJ_ETOOBIG);
	TFJ_CHECK(out == NULL);
	tfj_file_secret_free(NULL);
}

int main(void)
{
	char cmd[128];
	int rc;

	snprintf(dir, sizeof(dir), "/tmp/tfj-file-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	TFJ_RUN(test_read_whole_and_cap);
	TFJ_RUN(test_growth);
	TFJ_RUN(test_errors);
	TFJ_RUN(test_secret_trim);
	rc = tfj_test_finish();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		rc = 1;
	return rc;
}
