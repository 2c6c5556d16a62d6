/*
 * test_retryafter.c - Retry-After parsing and the throttling retry policy.
 */
#include <string.h>

#include <tfj/err.h>

#include "kube/retryafter.h"
#include "tfj_test.h"

/* Wed, 21 Oct 2015 07:28:00 GMT */
#define T_2015 ((time_t)1445412480)

static void test_parse_seconds(void)
{
	long s = -1;

	TFJ_CHECK_INT(tfj_retryafter_parse(&s, "120", 0), 0);
	TFJ_CHECK_INT(s, 120);
	TFJ_CHECK_INT(tfj_retryafter_parse(&s, "0", 0), 0);
	TFJ_CHECK_INT(s, 0);
	TFJ_CHECK_INT(tfj_retryafter_parse(&s, "  7 \t", 0), 0);
	TFJ_CHECK_INT(s, 7);
	/* Huge values saturate at a day instead of overflowing. */
	TFJ_CHECK_INT(tfj_retryafter_parse(&s, "99999999999999999999999999", 0), 0);
	TFJ_CHECK_INT(s, 86400);
	TFJ_CHECK_INT(tfj_retryafter_parse(&s, "86401", 0), 0);
	TFJ_CHECK_INT(s, 86400);
}

static void test_parse_date(void)
{
	long s = -1;

	TFJ_CHECK_INT(tfj_retryafter_parse(&s, "Wed, 21 Oct 2015 07:28:00 GMT", T_2015 - 5), 0);
	TFJ_CHECK_INT(s, 5);
	/* A date in the past means "now". */
	TFJ_CHECK_INT(tfj_retryafter_parse(&s, "Wed, 21 Oct 2015 07:28:00 GMT", T_2015 + 60), 0);
	TFJ_CHECK_INT(s, 0);
	/* Far future: clamped to a day. */
	TFJ_CHECK_INT(tfj_retryafter_parse(&s, "Wed, 21 Oct 2015 07:28:00 GMT", T_2015 - 10 * 86400),
		      0);
	TFJ_CHECK_INT(s, 86400);
}

static void test_parse_bad(void)
{
	long s = 5;
	char longv[100];

	TFJ_CHECK_INT(tfj_retryafter_parse(&s, NULL, 0), TFJ_EINVAL);
	TFJ_CHECK_INT(s, 0);
	TFJ_CHECK_INT(tfj_retryafter_parse(&s, "", 0), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_retryafter_parse(&s, "   ", 0), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_retryafter_parse(&s, "-5", 0), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_retryafter_parse(&s, "1.5", 0), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_retryafter_parse(&s, "12abc", 0), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_retryafter_parse(&s, "soon", 0), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_retryafter_parse(&s, "Blursday, 99 Foo 2015 77:28:00 GMT", 0),
		      TFJ_EINVAL);
	memset(longv, '1', sizeof(longv) - 1);
	longv[sizeof(longv) - 1] = '\0';
	TFJ_CHECK_INT(tfj_retryafter_parse(&s, longv, 0), TFJ_EINVAL);
}

static void test_policy(void)
{
	/* 429: the server's wait, capped; 1 s without a usable header. */
	TFJ_CHECK_INT(tfj_retryafter_wait_ms(429, "2", 0, 0), 2000);
	TFJ_CHECK_INT(tfj_retryafter_wait_ms(429, "3600", 0, 0), TFJ_RETRYAFTER_CAP_S * 1000);
	TFJ_CHECK_INT(tfj_retryafter_wait_ms(429, NULL, 0, 0), 1000);
	TFJ_CHECK_INT(tfj_retryafter_wait_ms(429, "garbage", 0, 0), 1000);
	TFJ_CHECK_INT(tfj_retryafter_wait_ms(429, "0", 0, 0), TFJ_RETRYAFTER_MIN_MS);
	/* 503 only with a header. */
	TFJ_CHECK_INT(tfj_retryafter_wait_ms(503, "4", 0, 0), 4000);
	TFJ_CHECK_INT(tfj_retryafter_wait_ms(503, NULL, 0, 0), -1);
	TFJ_CHECK_INT(tfj_retryafter_wait_ms(503, "nope", 0, 0), -1);
	/* Other statuses are not this policy's business. */
	TFJ_CHECK_INT(tfj_retryafter_wait_ms(500, "1", 0, 0), -1);
	TFJ_CHECK_INT(tfj_retryafter_wait_ms(200, "1", 0, 0), -1);
	TFJ_CHECK_INT(tfj_retryafter_wait_ms(409, "1", 0, 0), -1);
	/* Bounded retries. */
	TFJ_CHECK_INT(tfj_retryafter_wait_ms(429, "1", TFJ_RETRYAFTER_MAX_RETRIES - 1, 0), 1000);
	TFJ_CHECK_INT(tfj_retryafter_wait_ms(429, "1", TFJ_RETRYAFTER_MAX_RETRIES, 0), -1);
	TFJ_CHECK_INT(tfj_retryafter_wait_ms(429, "1", -1, 0), -1);
}

int main(void)
{
	TFJ_RUN(test_parse_seconds);
	TFJ_RUN(test_parse_date);
	TFJ_RUN(test_parse_bad);
	TFJ_RUN(test_policy);
	return tfj_test_finish();
}
