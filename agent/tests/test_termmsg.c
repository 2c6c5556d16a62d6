/*
 * test_termmsg.c - termination message content, size cap and file.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tfj/err.h>
#include <tfj/exitcode.h>
#include <tfj/json.h>
#include "termmsg.h"
#include "tfj_test.h"

static cJSON *parse(const char *s)
{
	cJSON *j = NULL;

	TFJ_CHECK_INT(tfj_json_parse(&j, s, strlen(s), TFJ_TERMMSG_MAX), 0);
	return j;
}

static void test_content(void)
{
	struct tfj_termmsg m = { "PeerWaitTimeout", 138, 0, 1, 1200, "peer ps:0 missing", 0, 0, 0, 0 };
	char out[TFJ_TERMMSG_MAX + 1];
	const char *s;
	int64_t i64;
	int b, n;
	cJSON *j;

	n = tfj_termmsg_encode(out, sizeof(out), &m);
	TFJ_CHECK_GT(n, 0);
	j = parse(out);
	TFJ_CHECK_INT(tfj_json_get_string(&s, j, "reason"), 0);
	TFJ_CHECK_STR(s, "PeerWaitTimeout");
	TFJ_CHECK_INT(tfj_json_get_int64(&i64, j, "exitCode", 0, 255), 0);
	TFJ_CHECK_INT(i64, 138);
	TFJ_CHECK_INT(tfj_json_get_bool(&b, j, "retryable"), 0);
	TFJ_CHECK_INT(b, 1);
	TFJ_CHECK_INT(tfj_json_get_int64(&i64, j, "lastStep", 0, TFJ_JSON_INT_MAX), 0);
	TFJ_CHECK_INT(i64, 1200);
	TFJ_CHECK_INT(tfj_json_get_string(&s, j, "message"), 0);
	TFJ_CHECK_STR(s, "peer ps:0 missing");
	/* No loss or accuracy known: neither key. */
	TFJ_CHECK(cJSON_GetObjectItem(j, "loss") == NULL);
	TFJ_CHECK(cJSON_GetObjectItem(j, "accuracy") == NULL);
	cJSON_Delete(j);

	/* The final figures, exactly (the operator's status falls back on them). */
	m.has_loss = m.has_accuracy = 1;
	m.loss = 6.00689e-07;
	m.accuracy = 0.8734;
	TFJ_CHECK_GT(tfj_termmsg_encode(out, sizeof(out), &m), 0);
	j = parse(out);
	{
		double d;

		TFJ_CHECK_INT(tfj_json_get_number(&d, j, "loss"), 0);
		TFJ_CHECK(d == 6.00689e-07);
		TFJ_CHECK_INT(tfj_json_get_number(&d, j, "accuracy"), 0);
		TFJ_CHECK(d == 0.8734);
	}
	cJSON_Delete(j);
	/* A value that is not finite is left out rather than written as null. */
	m.loss = NAN;
	TFJ_CHECK_GT(tfj_termmsg_encode(out, sizeof(out), &m), 0);
	j = parse(out);
	TFJ_CHECK(cJSON_GetObjectItem(j, "loss") == NULL);
	TFJ_CHECK(cJSON_GetObjectItem(j, "accuracy") != NULL);
	cJSON_Delete(j);
	m.has_loss = m.has_accuracy = 0;

	/* No step seen, no message: both keys absent; code 2 is permanent. */
	m.reason = "InvalidTFConfig";
	m.exit_code = 2;
	m.has_last_step = 0;
	m.message = NULL;
	TFJ_CHECK_GT(tfj_termmsg_encode(out, sizeof(out), &m), 0);
	j = parse(out);
	TFJ_CHECK(cJSON_GetObjectItem(j, "lastStep") == NULL);
	TFJ_CHECK(cJSON_GetObjectItem(j, "message") == NULL);
	TFJ_CHECK_INT(tfj_json_get_bool(&b, j, "retryable"), 0);
	TFJ_CHECK_INT(b, 0);
	cJSON_Delete(j);
	TFJ_CHECK_INT(tfj_exitcode_retryable(0), 0);
	TFJ_CHECK_INT(tfj_exitcode_retryable(127), 0);
	TFJ_CHECK_INT(tfj_exitcode_retryable(128), 1);
	TFJ_CHECK_INT(tfj_exitcode_retryable(255), 1);
}

static void test_size_cap(void)
{
	struct tfj_termmsg m = { "Error", 1, 0, 1, 5, NULL, 0, 0, 0, 0 };
	char out[TFJ_TERMMSG_MAX + 1];
	char *big = malloc(20000);
	const char *s;
	size_t i;
	cJSON *j;
	int n;

	TFJ_CHECK(big != NULL);
	if (!big)
		return;
	/* Characters that expand when escaped, and an ending that must survive. */
	for (i = 0; i < 19990; i++)
		big[i] = "\"\\\001ab\n"[i % 6];
	memcpy(big + 19990, "THE END", 8);
	m.message = big;
	n = tfj_termmsg_encode(out, sizeof(out), &m);
	TFJ_CHECK_GT(n, 0);
	TFJ_CHECK_LE(n, (int)TFJ_TERMMSG_MAX);
	TFJ_CHECK_INT(strlen(out), n);
	j = parse(out);
	TFJ_CHECK_INT(tfj_json_get_string(&s, j, "message"), 0);
	TFJ_CHECK_GT(strlen(s), 500);
	TFJ_CHECK(strcmp(s + strlen(s) - 7, "THE END") == 0);
	TFJ_CHECK(strchr(s, '\x01') == NULL);
	cJSON_Delete(j);

	/* Multi-byte characters are never cut in half. */
	for (i = 0; i + 3 <= 19000; i += 3)
		memcpy(big + i, "\xe2\x82\xac", 3);
	big[i] = '\0';
	n = tfj_termmsg_encode(out, sizeof(out), &m);
	TFJ_CHECK_GT(n, 0);
	TFJ_CHECK_LE(n, (int)TFJ_TERMMSG_MAX);
	j = parse(out);
	TFJ_CHECK_INT(tfj_json_get_string(&s, j, "message"), 0);
	TFJ_CHECK(strlen(s) % 3 == 0);
	cJSON_Delete(j);

	/* A small buffer shortens the message; a tiny one is an error. */
	n = tfj_termmsg_encode(out, 120, &m);
	TFJ_CHECK_GT(n, 0);
	TFJ_CHECK_LT(n, 120);
	TFJ_CHECK_INT(tfj_termmsg_encode(out, 30, &m), TFJ_ETOOBIG);
	free(big);
}

static void test_sanitize(void)
{
	char out[64];

	tfj_termmsg_sanitize(out, sizeof(out), "ok\xff\xc3(\x7f\tline\n\xc3\xa9");
	TFJ_CHECK_STR(out, "ok?" "?(?\tline\n\xc3\xa9");
	/* Overlong and surrogate encodings are invalid. */
	tfj_termmsg_sanitize(out, sizeof(out), "\xc0\xaf\xed\xa0\x80");
	TFJ_CHECK_STR(out, "?????");
	TFJ_CHECK_INT(tfj_termmsg_sanitize(out, 3, "\xc3\xa9\xc3\xa9"), 2);
	TFJ_CHECK_INT(tfj_termmsg_sanitize(out, 2, "\xc3\xa9"), 0);
}

static void test_write(void)
{
	struct tfj_termmsg m = { "Completed", 0, 0, 1, 10, NULL, 0, 0, 0, 0 };
	char path[] = "/tmp/tfj-termmsg-XXXXXX";
	char buf[TFJ_TERMMSG_MAX + 10];
	FILE *f;
	size_t n;
	int fd = mkstemp(path);

	TFJ_CHECK_GE(fd, 0);
	/* Old longer content must be truncated. */
	TFJ_CHECK(write(fd, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 97) == 97);
	close(fd);
	TFJ_CHECK_INT(tfj_termmsg_write(path, &m), 0);
	f = fopen(path, "rb");
	TFJ_CHECK(f != NULL);
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = '\0';
		fclose(f);
		TFJ_CHECK_STR(buf, "{\"reason\":\"Completed\",\"exitCode\":0,\"retryable\":false,"
			      "\"lastStep\":10,\"signal\":0}");
	}
	unlink(path);
	TFJ_CHECK_INT(tfj_termmsg_write("/nonexistent-dir/x/termination-log", &m), TFJ_EIO);
}

int main(void)
{
	TFJ_RUN(test_content);
	TFJ_RUN(test_size_cap);
	TFJ_RUN(test_sanitize);
	TFJ_RUN(test_write);
	return tfj_test_finish();
}
