#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tfj/err.h"
#include "tfj/log.h"
#include "tfj_test.h"

/* Runs fn with stderr redirected into a temporary file; returns its text. */
static char *capture(void (*fn)(void))
{
	static char out[8192];
	FILE *tmp = tmpfile();
	int saved = dup(STDERR_FILENO);
	size_t n;

	fflush(stderr);
	dup2(fileno(tmp), STDERR_FILENO);
	fn();
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(tmp);
	n = fread(out, 1, sizeof(out) - 1, tmp);
	out[n] = '\0';
	fclose(tmp);
	return out;
}

static void log_kv_line(void)
{
	tfj_log_info("pod created", "pod", "job-worker-0", "note", "has space", "token", "abc123",
		     "tokenFile", "/var/run/token");
}

static void log_debug_line(void) { tfj_log_debug("hidden", "k", "v"); }

static void log_json_line(void)
{
	tfj_log_warn("quote\"d", "path", "a\\b\n", "password", "hunter2");
}

static void log_fmt_line(void)
{
	tfj_log_fmt(TFJ_LOG_ERROR, "request failed: Authorization: Bearer s3cr3t\nnext");
}

static void test_kv_format_and_secret_keys(void)
{
	char *s;

	tfj_log_set_format(TFJ_LOG_FMT_KV);
	tfj_log_set_level(TFJ_LOG_INFO);
	tfj_log_set_component("test");
	s = capture(log_kv_line);
	TFJ_CHECK(strstr(s, "level=info comp=test msg=\"pod created\" pod=job-worker-0") != NULL);
	TFJ_CHECK(strstr(s, "note=\"has space\"") != NULL);
	TFJ_CHECK(strstr(s, "abc123") == NULL);
	TFJ_CHECK(strstr(s, "token=[REDACTED]") != NULL);
	TFJ_CHECK(strstr(s, "tokenFile=/var/run/token") != NULL);
	TFJ_CHECK(s[strlen(s) - 1] == '\n');
}

static void test_level_filter(void)
{
	tfj_log_set_level(TFJ_LOG_INFO);
	TFJ_CHECK_STR(capture(log_debug_line), "");
	tfj_log_set_level(TFJ_LOG_DEBUG);
	TFJ_CHECK(strstr(capture(log_debug_line), "msg=hidden k=v") != NULL);
	tfj_log_set_level(TFJ_LOG_INFO);
}

static void test_json_format(void)
{
	char *s;

	tfj_log_set_format(TFJ_LOG_FMT_JSON);
	s = capture(log_json_line);
	TFJ_CHECK(strncmp(s, "{\"ts\":\"", 7) == 0);
	TFJ_CHECK(strstr(s, "\"msg\":\"quote\\\"d\"") != NULL);
	TFJ_CHECK(strstr(s, "\"path\":\"a\\\\b\\n\"") != NULL);
	TFJ_CHECK(strstr(s, "\"password\":\"[REDACTED]\"") != NULL);
	TFJ_CHECK(strstr(s, "hunter2") == NULL);
	tfj_log_set_format(TFJ_LOG_FMT_KV);
}

static void test_fmt_redacts(void)
{
	char *s = capture(log_fmt_line);

	TFJ_CHECK(strstr(s, "s3cr3t") == NULL);
	TFJ_CHECK(strstr(s, "Authorization: [REDACTED]") != NULL);
	TFJ_CHECK(strstr(s, "next") != NULL);
}

static void test_redact_text(void)
{
	char out[256];

	tfj_log_redact(out, sizeof(out), "GET /api\r\nAuthorization: Bearer abc.def\r\nHost: x");
	TFJ_CHECK_STR(out, "GET /api\r\nAuthorization: [REDACTED]\r\nHost: x");
	tfj_log_redact(out, sizeof(out), "using bearer eyJhbGciOi.xyz for call");
	TFJ_CHECK_STR(out, "using bearer [REDACTED] for call");
	tfj_log_redact(out, sizeof(out), "url?token=abc&x=1 password = p4ss \"api_key\": \"k\"");
	TFJ_CHECK_STR(out, "url?token=[REDACTED]&x=1 password = [REDACTED] \"api_key\": \"[REDACTED]\"");
	tfj_log_redact(out, sizeof(out), "tokenFile=/path stays");
	TFJ_CHECK_STR(out, "tokenFile=/path stays");
	/* Truncation still terminates and never overflows. */
	TFJ_CHECK_INT(tfj_log_redact(out, 5, "abcdefgh"), 4);
	TFJ_CHECK_STR(out, "abcd");
}

static void test_parse(void)
{
	enum tfj_log_level lv;
	enum tfj_log_format f;

	TFJ_CHECK_INT(tfj_log_parse_level(&lv, "WARN"), 0);
	TFJ_CHECK_INT(lv, TFJ_LOG_WARN);
	TFJ_CHECK_INT(tfj_log_parse_level(&lv, "loud"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_log_parse_format(&f, "json"), 0);
	TFJ_CHECK_INT(f, TFJ_LOG_FMT_JSON);
	TFJ_CHECK_INT(tfj_log_parse_format(&f, "xml"), TFJ_EINVAL);
}

static void long_line(void)
{
	static char v[TFJ_LOG_LINE_MAX * 2];

	memset(v, 'v', sizeof(v) - 1);
	tfj_log_info("long", "v", v);
}

static void test_long_line_truncated(void)
{
	char *s = capture(long_line);

	TFJ_CHECK_LE(strlen(s), TFJ_LOG_LINE_MAX);
	TFJ_CHECK(strstr(s, "...\n") != NULL);
}

int main(void)
{
	TFJ_RUN(test_kv_format_and_secret_keys);
	TFJ_RUN(test_level_filter);
	TFJ_RUN(test_json_format);
	TFJ_RUN(test_fmt_redacts);
	TFJ_RUN(test_redact_text);
	TFJ_RUN(test_parse);
	TFJ_RUN(test_long_line_truncated);
	return tfj_test_finish();
}
