#include <string.h>

#include "tfj/err.h"
#include "tfj_test.h"

static void test_names_and_messages(void)
{
	TFJ_CHECK_STR(tfj_err_name(TFJ_OK), "ok");
	TFJ_CHECK_STR(tfj_err_name(TFJ_EPARSE), "parse");
	TFJ_CHECK_STR(tfj_err_str(TFJ_ETOOBIG), "input exceeds its limit");
	TFJ_CHECK_STR(tfj_err_name(-9999), "unknown");
	TFJ_CHECK_STR(tfj_err_str(12345), "unknown error");
}

static void test_codes_are_distinct_and_negative(void)
{
	static const int codes[] = {
#define X(sym, val, name, msg) sym,
		TFJ_ERR_TABLE(X)
#undef X
	};
	size_t n = sizeof(codes) / sizeof(codes[0]), i, j;

	for (i = 1; i < n; i++) {
		TFJ_CHECK_LT(codes[i], 0);
		for (j = 0; j < i; j++)
			TFJ_CHECK(codes[i] != codes[j]);
	}
}

static void test_detail(void)
{
	char big[2 * TFJ_ERR_DETAIL_MAX];

	tfj_err_clear();
	TFJ_CHECK_STR(tfj_err_detail(), "");
	TFJ_CHECK_INT(tfj_err_set(TFJ_EINVAL, "key %s: %d", "replicas", 7), TFJ_EINVAL);
	TFJ_CHECK_STR(tfj_err_detail(), "key replicas: 7");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	tfj_err_set(TFJ_EIO, "%s", big);
	TFJ_CHECK_INT(strlen(tfj_err_detail()), TFJ_ERR_DETAIL_MAX - 1);
}

int main(void)
{
	TFJ_RUN(test_names_and_messages);
	TFJ_RUN(test_codes_are_distinct_and_negative);
	TFJ_RUN(test_detail);
	return tfj_test_finish();
}
