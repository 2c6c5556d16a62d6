/*
 * test_parse.c - numbers, durations, booleans and host:port.
 */
#include <stdint.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/parse.h>

#include "tfj_test.h"

static void test_i64(void)
{
	int64_t v = 7;
	int i = 0;

	TFJ_CHECK_INT(tfj_parse_i64(&v, "42", 0, 100, "--x"), 0);
	TFJ_CHECK_INT(v, 42);
	TFJ_CHECK_INT(tfj_parse_i64(&v, "-5", -10, 10, "--x"), 0);
	TFJ_CHECK_INT(v, -5);
	TFJ_CHECK_INT(tfj_parse_i64(&v, "9223372036854775807", 0, INT64_MAX, "--x"), 0);
	TFJ_CHECK(v == INT64_MAX);
	v = 7;
	/* Overflow, trailing garbage, empty, out of range: errors, *out untouched. */
	TFJ_CHECK_INT(tfj_parse_i64(&v, "9223372036854775808", 0, INT64_MAX, "--x"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_i64(&v, "-9223372036854775809", INT64_MIN, 0, "--x"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_i64(&v, "12abc", 0, 100, "--x"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_i64(&v, "12 ", 0, 100, "--x"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_i64(&v, "0x10", 0, 100, "--x"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_i64(&v, "", 0, 100, "--x"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_i64(&v, NULL, 0, 100, "--x"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_i64(&v, "-", 0, 100, "--x"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_i64(&v, "101", 0, 100, "--workers"), TFJ_EINVAL);
	TFJ_CHECK(strstr(tfj_err_detail(), "--workers") != NULL);
	TFJ_CHECK(strstr(tfj_err_detail(), "101") != NULL);
	TFJ_CHECK_INT(tfj_parse_i64(&v, "-1", 0, 100, "--x"), TFJ_EINVAL);
	TFJ_CHECK_INT(v, 7);
	TFJ_CHECK_INT(tfj_parse_int(&i, "256", 1, 256, "--x"), 0);
	TFJ_CHECK_INT(i, 256);
	TFJ_CHECK_INT(tfj_parse_int(&i, "2147483648", 1, INT32_MAX, "--x"), TFJ_EINVAL);
	TFJ_CHECK_INT(i, 256);
}

static void test_u64(void)
{
	uint64_t v = 3;

	TFJ_CHECK_INT(tfj_parse_u64(&v, "4096", 256, 1 << 20, "--line-max"), 0);
	TFJ_CHECK_INT(v, 4096);
	TFJ_CHECK_INT(tfj_parse_u64(&v, "18446744073709551615", 0, UINT64_MAX, "--x"), 0);
	TFJ_CHECK(v == UINT64_MAX);
	v = 3;
	/* Negative where unsigned: strtoull would wrap "-1" around. */
	TFJ_CHECK_INT(tfj_parse_u64(&v, "-1", 0, UINT64_MAX, "--x"), TFJ_EINVAL);
	TFJ_CHECK(strstr(tfj_err_detail(), "negative") != NULL);
	TFJ_CHECK_INT(tfj_parse_u64(&v, " -5", 0, UINT64_MAX, "--x"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_u64(&v, "18446744073709551616", 0, UINT64_MAX, "--x"),
		      TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_u64(&v, "12", 256, 1024, "--x"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_u64(&v, "1k", 0, 1024, "--x"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_u64(&v, "", 0, 1024, "--x"), TFJ_EINVAL);
	TFJ_CHECK_INT(v, 3);
}

static void test_double_and_seconds(void)
{
	double d = 9;

	TFJ_CHECK_INT(tfj_parse_double(&d, "12.5", 0, 100000, "--qps"), 0);
	TFJ_CHECK(d == 12.5);
	TFJ_CHECK_INT(tfj_parse_double(&d, "1e3", 0, 100000, "--qps"), 0);
	TFJ_CHECK(d == 1000);
	d = 9;
	TFJ_CHECK_INT(tfj_parse_double(&d, "nan", 0, 100000, "--qps"), TFJ_EINVAL);
	TFJ_CHECK(strstr(tfj_err_detail(), "--qps") != NULL);
	TFJ_CHECK_INT(tfj_parse_double(&d, "inf", 0, 1e308, "--qps"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_double(&d, "1e999", 0, 1e308, "--qps"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_double(&d, "-0.5", 0, 1, "--qps"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_double(&d, "1.5x", 0, 10, "--qps"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_double(&d, "", 0, 10, "--qps"), TFJ_EINVAL);
	TFJ_CHECK(d == 9);

	TFJ_CHECK_INT(tfj_parse_seconds(&d, "0.5", 0.1, 86400, "--peer-timeout"), 0);
	TFJ_CHECK(d == 0.5);
	TFJ_CHECK_INT(tfj_parse_seconds(&d, "300", 0.1, 86400, "--peer-timeout"), 0);
	TFJ_CHECK(d == 300);
	/* No unit suffixes: the CLIs have always taken plain seconds. */
	TFJ_CHECK_INT(tfj_parse_seconds(&d, "30s", 0.1, 86400, "--peer-timeout"), TFJ_EINVAL);
	TFJ_CHECK(strstr(tfj_err_detail(), "seconds") != NULL);
	TFJ_CHECK(strstr(tfj_err_detail(), "--peer-timeout") != NULL);
	TFJ_CHECK_INT(tfj_parse_seconds(&d, "0", 0.1, 86400, "--peer-timeout"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_seconds(&d, "1e9", 0, 3600, "--grace-period"), TFJ_EINVAL);
	TFJ_CHECK(d == 300);
}

static void test_bool(void)
{
	static const char *const yes[] = { "true", "1", "yes", NULL };
	static const char *const no[] = { "false", "0", "no" };
	static const char *const bad[] = { "maybe", "", "TRUE", "on", "2", "yes " };
	size_t i;
	int b;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		b = 0;
		TFJ_CHECK_INT(tfj_parse_bool(&b, yes[i], "--sync"), 0);
		TFJ_CHECK_INT(b, 1);
	}
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		b = 1;
		TFJ_CHECK_INT(tfj_parse_bool(&b, no[i], "--sync"), 0);
		TFJ_CHECK_INT(b, 0);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		b = 5;
		TFJ_CHECK_INT(tfj_parse_bool(&b, bad[i], "--leader-elect"), TFJ_EINVAL);
		TFJ_CHECK_INT(b, 5);
		TFJ_CHECK(strstr(tfj_err_detail(), "boolean") != NULL);
	}
}

static void test_hostport(void)
{
	char host[16];
	int port = -1;

	TFJ_CHECK_INT(tfj_parse_hostport(host, sizeof(host), &port, "ps-0:2222", 0, "peer"), 0);
	TFJ_CHECK_STR(host, "ps-0");
	TFJ_CHECK_INT(port, 2222);
	TFJ_CHECK_INT(tfj_parse_hostport(host, sizeof(host), &port, "[::1]:9090", 0, "peer"), 0);
	TFJ_CHECK_STR(host, "::1");
	TFJ_CHECK_INT(port, 9090);
	/* Unbracketed v6: the last colon separates the port. */
	TFJ_CHECK_INT(tfj_parse_hostport(host, sizeof(host), &port, "fe80::1:80", 0, "peer"), 0);
	TFJ_CHECK_STR(host, "fe80::1");
	TFJ_CHECK_INT(port, 80);

	port = -1;
	strcpy(host, "untouched");
	TFJ_CHECK_INT(tfj_parse_hostport(host, sizeof(host), &port, "[::1]80", 0, "peer"),
		      TFJ_EINVAL);
	TFJ_CHECK(strstr(tfj_err_detail(), "[v6]:port") != NULL);
	TFJ_CHECK_INT(tfj_parse_hostport(host, sizeof(host), &port, "[::1", 0, "peer"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_hostport(host, sizeof(host), &port, "host", 0, "peer"), TFJ_EINVAL);
	TFJ_CHECK(strstr(tfj_err_detail(), "no port") != NULL);
	TFJ_CHECK_INT(tfj_parse_hostport(host, sizeof(host), &port, "host:", 0, "peer"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_hostport(host, sizeof(host), &port, ":80", 0, "peer"), TFJ_EINVAL);
	TFJ_CHECK(strstr(tfj_err_detail(), "empty host") != NULL);
	TFJ_CHECK_INT(tfj_parse_hostport(host, sizeof(host), &port, "[]:80", 0, "peer"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_hostport(host, sizeof(host), &port, "h:0", 0, "peer"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_hostport(host, sizeof(host), &port, "h:65536", 0, "peer"),
		      TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_hostport(host, sizeof(host), &port, "h:80x", 0, "peer"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_hostport(host, sizeof(host), &port, "h:-80", 0, "peer"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_hostport(host, sizeof(host), &port, "", 0, "peer"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_hostport(host, sizeof(host), &port, "0123456789abcdef:1", 0,
					 "peer"), TFJ_EINVAL);
	TFJ_CHECK(strstr(tfj_err_detail(), "longer") != NULL);
	TFJ_CHECK_INT(tfj_parse_hostport(host, sizeof(host), &port, "0123456789abcde:1", 0,
					 "peer"), 0);
	TFJ_CHECK_STR(host, "0123456789abcde");

	/* Listen addresses: empty host, bare port, port 0. */
	port = -1;
	TFJ_CHECK_INT(tfj_parse_hostport(host, sizeof(host), &port, ":8080",
					 TFJ_HOSTPORT_EMPTY_HOST, "addr"), 0);
	TFJ_CHECK_STR(host, "");
	TFJ_CHECK_INT(port, 8080);
	TFJ_CHECK_INT(tfj_parse_hostport(host, sizeof(host), &port, "9091", 0, "addr"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_parse_hostport(host, sizeof(host), &port, "9091",
					 TFJ_HOSTPORT_BARE_PORT, "addr"), 0);
	TFJ_CHECK_STR(host, "");
	TFJ_CHECK_INT(port, 9091);
	TFJ_CHECK_INT(tfj_parse_hostport(host, sizeof(host), &port, "127.0.0.1:0",
					 TFJ_HOSTPORT_PORT_ZERO, "addr"), 0);
	TFJ_CHECK_INT(port, 0);
	TFJ_CHECK_INT(tfj_parse_hostport(host, sizeof(host), &port, "[::]:0",
					 TFJ_HOSTPORT_PORT_ZERO, "addr"), 0);
	TFJ_CHECK_STR(host, "::");
}

/* The listen-address form of the servers' flags (--metrics-addr, --report-addr). */
#define LISTEN(s) tfj_parse_hostport(host, sizeof(host), &port, s, TFJ_HOSTPORT_LISTEN, "a")

static void test_hostport_listen(void)
{
	char host[64];
	int port;

	TFJ_CHECK_INT(LISTEN(":8080"), 0);
	TFJ_CHECK_STR(host, "");
	TFJ_CHECK_INT(port, 8080);
	TFJ_CHECK_INT(LISTEN("127.0.0.1:0"), 0);
	TFJ_CHECK_STR(host, "127.0.0.1");
	TFJ_CHECK_INT(LISTEN("[::1]:9090"), 0);
	TFJ_CHECK_STR(host, "::1");
	TFJ_CHECK_INT(port, 9090);
	TFJ_CHECK_INT(LISTEN("9091"), 0);
	TFJ_CHECK_INT(port, 9091);
	TFJ_CHECK_INT(LISTEN("localhost:80"), TFJ_EINVAL);
	TFJ_CHECK_INT(LISTEN(":70000"), TFJ_EINVAL);
	TFJ_CHECK_INT(LISTEN("1.2.3.4:"), TFJ_EINVAL);
	TFJ_CHECK_INT(LISTEN("[::1]80"), TFJ_EINVAL);
	TFJ_CHECK_INT(LISTEN(""), TFJ_EINVAL);
}

static void test_flag_eq(void)
{
	TFJ_CHECK(tfj_parse_flag_eq("peer-timeout", 12, "peer-timeout"));
	TFJ_CHECK(tfj_parse_flag_eq("peer_timeout", 12, "peer-timeout"));
	TFJ_CHECK(tfj_parse_flag_eq("peer_timeout=5", 12, "peer-timeout"));
	TFJ_CHECK(!tfj_parse_flag_eq("peer-timeou", 11, "peer-timeout"));
	TFJ_CHECK(!tfj_parse_flag_eq("peer-timeouts", 13, "peer-timeout"));
	TFJ_CHECK(!tfj_parse_flag_eq("peer.timeout", 12, "peer-timeout"));
	TFJ_CHECK(!tfj_parse_flag_eq("ps", 2, "psx"));
	TFJ_CHECK(tfj_parse_flag_eq("", 0, ""));
}

int main(void)
{
	TFJ_RUN(test_flag_eq);
	TFJ_RUN(test_i64);
	TFJ_RUN(test_u64);
	TFJ_RUN(test_double_and_seconds);
	TFJ_RUN(test_bool);
	TFJ_RUN(test_hostport);
	TFJ_RUN(test_hostport_listen);
	return tfj_test_finish();
}
