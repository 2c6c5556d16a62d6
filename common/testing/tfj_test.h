/*
 * tfj_test.h - a minimal test harness.
 *
 * A test program defines `static void test_x(void)` functions, calls
 * TFJ_RUN(test_x) for each from main() and returns tfj_test_finish(). Checks
 * record failures and continue, so one run shows every broken assertion.
 * The closing line is "N passed, N failed" (test functions, not checks).
 *
 * Property tests draw from tfj_test_rand(), seeded from TFJ_TEST_SEED or a
 * fixed default; the seed is printed so a failure can be replayed.
 */
#ifndef TFJ_TEST_H
#define TFJ_TEST_H

#include <stdint.h>
#include <string.h>

void tfj_test_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void tfj_test_run(const char *name, void (*fn)(void));
int tfj_test_finish(void);
uint64_t tfj_test_rand(void);
/* Uniform in [0, n). */
uint64_t tfj_test_below(uint64_t n);

#define TFJ_CHECK(c)                                                            \
	do {                                                                    \
		if (!(c))                                                       \
			tfj_test_fail(__FILE__, __LINE__, "%s", #c);            \
	} while (0)

#define TFJ_CHECK_INT(a, b)                                                     \
	do {                                                                    \
		long long a_ = (long long)(a), b_ = (long long)(b);             \
		if (a_ != b_)                                                   \
			tfj_test_fail(__FILE__, __LINE__, "%s == %s (%lld != %lld)", \
				      #a, #b, a_, b_);                          \
	} while (0)

#define TFJ_CHECK_STR(a, b)                                                     \
	do {                                                                    \
		const char *a_ = (a), *b_ = (b);                                \
		if (!a_ || !b_ || strcmp(a_, b_) != 0)                          \
			tfj_test_fail(__FILE__, __LINE__, "%s == %s (\"%s\" != \"%s\")", \
				      #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
	} while (0)

#define TFJ_RUN(fn) tfj_test_run(#fn, fn)

#endif
