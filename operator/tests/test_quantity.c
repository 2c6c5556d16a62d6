/*
 * test_quantity.c - Kubernetes quantities as milli-units: the suffixes, the
 * rounding, the limits and the canonical form written back.
 */
#include <stdint.h>

#include <tfj/err.h>

#include "tfjob/quantity.h"
#include "tfj_test.h"

static int64_t q(const char *s)
{
	int64_t v = -1;

	TFJ_CHECK_OK(tfj_quantity_parse(&v, s));
	return v;
}

static void test_suffixes(void)
{
	TFJ_CHECK_EQ(q("1"), (int64_t)1000);
	TFJ_CHECK_EQ(q("500m"), (int64_t)500);
	TFJ_CHECK_EQ(q("1.5"), (int64_t)1500);
	TFJ_CHECK_EQ(q(".5"), (int64_t)500);
	TFJ_CHECK_EQ(q("+2"), (int64_t)2000);
	TFJ_CHECK_EQ(q("0"), (int64_t)0);
	TFJ_CHECK_EQ(q("1Ki"), (int64_t)1024000);
	TFJ_CHECK_EQ(q("2Gi"), (int64_t)2 * 1024 * 1024 * 1024 * 1000);
	TFJ_CHECK_EQ(q("1.5Gi"), (int64_t)3 * 512 * 1024 * 1024 * 1000);
	TFJ_CHECK_EQ(q("128M"), (int64_t)128000000000);
	TFJ_CHECK_EQ(q("1k"), (int64_t)1000000);
	TFJ_CHECK_EQ(q("1e3"), (int64_t)1000000);
	TFJ_CHECK_EQ(q("25E-3"), (int64_t)25);
	TFJ_CHECK_EQ(q("0.05"), (int64_t)50);
	TFJ_CHECK_EQ(q("007"), (int64_t)7000);
}

static void test_rounds_up_below_milli(void)
{
	/* The API server keeps milli precision and rounds up. */
	TFJ_CHECK_EQ(q("1n"), (int64_t)1);
	TFJ_CHECK_EQ(q("1500u"), (int64_t)2);
	TFJ_CHECK_EQ(q("0.0001"), (int64_t)1);
	TFJ_CHECK_EQ(q("1e-30"), (int64_t)1);
	TFJ_CHECK_EQ(q("0e-50"), (int64_t)0);
}

static void test_rejects(void)
{
	static const char *const bad[] = { "", "-1", "m", "1x", "1KiB", "1.2.3", ".", "1e", "1e+",
					   "1e1000", "Gi", " 1", "1 ", "0x10", "1Mi5" };
	int64_t v;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = tfj_quantity_parse(&v, bad[i]);
		TFJ_CHECK_LT(rc, 0);
		if (rc >= 0)
			tfj_test_fail(__FILE__, __LINE__, "accepted '%s'", bad[i]);
	}
	TFJ_CHECK_INT(tfj_quantity_parse(&v, "9Ei"), TFJ_ERANGE);
	TFJ_CHECK_INT(tfj_quantity_parse(&v, "10000000000000000"), TFJ_ERANGE);
	TFJ_CHECK_INT(tfj_quantity_parse(&v, "1234567890123456789012345678901"), TFJ_ERANGE);
	TFJ_CHECK_INT(tfj_quantity_parse(&v, NULL), TFJ_EINVAL);
}

static void test_json_and_sum(void)
{
	cJSON *n = cJSON_CreateNumber(4), *f = cJSON_CreateNumber(0.5), *s = cJSON_CreateString("250m");
	cJSON *b = cJSON_CreateTrue();
	int64_t v = 0, acc = 0;

	TFJ_CHECK_OK(tfj_quantity_from_json(&v, n));
	TFJ_CHECK_EQ(v, (int64_t)4000);
	TFJ_CHECK_OK(tfj_quantity_add(&acc, v));
	TFJ_CHECK_OK(tfj_quantity_from_json(&v, s));
	TFJ_CHECK_OK(tfj_quantity_add(&acc, v));
	TFJ_CHECK_EQ(acc, (int64_t)4250);
	TFJ_CHECK_INT(tfj_quantity_from_json(&v, f), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_quantity_from_json(&v, b), TFJ_ETYPE);
	acc = INT64_MAX - 1;
	TFJ_CHECK_INT(tfj_quantity_add(&acc, 2), TFJ_ERANGE);
	TFJ_CHECK_EQ(acc, INT64_MAX - 1);
	cJSON_Delete(n);
	cJSON_Delete(f);
	cJSON_Delete(s);
	cJSON_Delete(b);
}

static void test_format(void)
{
	char buf[TFJ_QUANTITY_FMT_LEN];
	int64_t v;

	TFJ_CHECK_OK(tfj_quantity_format(buf, sizeof(buf), 3000));
	TFJ_CHECK_STR(buf, "3");
	TFJ_CHECK_OK(tfj_quantity_format(buf, sizeof(buf), 1500));
	TFJ_CHECK_STR(buf, "1500m");
	TFJ_CHECK_OK(tfj_quantity_format(buf, sizeof(buf), INT64_MAX));
	TFJ_CHECK_STR(buf, "9223372036854775807m");
	TFJ_CHECK_INT(tfj_quantity_format(buf, 3, 1500), TFJ_ETOOBIG);
	TFJ_CHECK_INT(tfj_quantity_format(buf, sizeof(buf), -1), TFJ_EINVAL);
	/* What is written reads back as the same value. */
	TFJ_CHECK_OK(tfj_quantity_format(buf, sizeof(buf), q("3Gi")));
	TFJ_CHECK_OK(tfj_quantity_parse(&v, buf));
	TFJ_CHECK_EQ(v, q("3Gi"));
}

int main(void)
{
	TFJ_RUN(test_suffixes);
	TFJ_RUN(test_rounds_up_below_milli);
	TFJ_RUN(test_rejects);
	TFJ_RUN(test_json_and_sum);
	TFJ_RUN(test_format);
	return tfj_test_finish();
}
