#include <stdlib.h>
#include <string.h>

#include "tfj/buf.h"
#include "tfj/err.h"
#include "tfj_test.h"

static void test_append_within_limit(void)
{
	struct tfj_buf b = TFJ_BUF_INIT(16);

	TFJ_CHECK_STR(tfj_buf_cstr(&b), "");
	TFJ_CHECK_INT(tfj_buf_puts(&b, "hello"), 0);
	TFJ_CHECK_INT(tfj_buf_putc(&b, ' '), 0);
	TFJ_CHECK_INT(tfj_buf_printf(&b, "%d-%s", 42, "ab"), 0);
	TFJ_CHECK_STR(tfj_buf_cstr(&b), "hello 42-ab");
	TFJ_CHECK_INT(b.len, 11);
	tfj_buf_free(&b);
	tfj_buf_free(NULL);
}

static void test_limit_is_an_error_and_keeps_contents(void)
{
	struct tfj_buf b = TFJ_BUF_INIT(8);

	TFJ_CHECK_INT(tfj_buf_puts(&b, "12345678"), 0);
	TFJ_CHECK_INT(tfj_buf_putc(&b, '9'), TFJ_ETOOBIG);
	TFJ_CHECK_INT(tfj_buf_printf(&b, "%s", "x"), TFJ_ETOOBIG);
	TFJ_CHECK_STR(tfj_buf_cstr(&b), "12345678");
	TFJ_CHECK_LE(b.cap, 8);
	/* A size that would overflow len + n must not wrap around. */
	TFJ_CHECK_INT(tfj_buf_append(&b, "", (size_t)-1), TFJ_ETOOBIG);
	tfj_buf_free(&b);
}

static void test_consume_and_detach(void)
{
	struct tfj_buf b = TFJ_BUF_INIT(1024);
	char *s;

	tfj_buf_puts(&b, "line1\nline2\n");
	tfj_buf_consume(&b, 6);
	TFJ_CHECK_STR(tfj_buf_cstr(&b), "line2\n");
	tfj_buf_consume(&b, 100);
	TFJ_CHECK_INT(b.len, 0);
	tfj_buf_puts(&b, "x");
	s = tfj_buf_detach(&b);
	TFJ_CHECK_STR(s, "x");
	TFJ_CHECK(b.ptr == NULL && b.len == 0);
	free(s);
	s = tfj_buf_detach(&b);
	TFJ_CHECK_STR(s, "");
	free(s);
}

static void test_growth_many_small_appends(void)
{
	struct tfj_buf b = TFJ_BUF_INIT(100000);
	int i, ok = 1;

	for (i = 0; i < 10000; i++)
		ok &= tfj_buf_append(&b, "abcdefghij", 10) == 0;
	TFJ_CHECK(ok);
	TFJ_CHECK_INT(b.len, 100000);
	TFJ_CHECK_INT(tfj_buf_putc(&b, 'z'), TFJ_ETOOBIG);
	TFJ_CHECK(memcmp(b.ptr + 99990, "abcdefghij", 10) == 0);
	tfj_buf_free(&b);
}

int main(void)
{
	TFJ_RUN(test_append_within_limit);
	TFJ_RUN(test_limit_is_an_error_and_keeps_contents);
	TFJ_RUN(test_consume_and_detach);
	TFJ_RUN(test_growth_many_small_appends);
	return tfj_test_finish();
}
