/*
 * tfj_test.h - a minimal test harness.
 *
 * A test program defines `static void test_x(void)` functions, calls
 * TFJ_RUN(test_x) for each from main() and returns tfj_test_finish(). Checks
 * record failures and continue, so one run shows every broken assertion.
 * The closing line is "N passed, N failed" (test functions, not checks).
 *
 * Every check counts itself, failed or not. A test function that ran no
 * check at all is reported as failed: a test that asserts nothing proves
 * nothing, and it usually means an early return skipped the real checks.
 * A test that has a legitimate reason to stop early (a missing tool, say)
 * still checks what it found, e.g. TFJ_CHECK_INT(rc, TFJ_EUNSUPP).
 *
 * Typed checks print both operands when they fail, so a failed
 * `acc >= 0.84` says which accuracy it got:
 *   TFJ_CHECK_EQ/NE/LT/LE/GT/GE(a, b)  a op b for any two arithmetic values
 *       (integers, floats, doubles, enums), compared exactly as the plain
 *       C expression would be; integers print as integers, floating point
 *       as %.9Lg. Pointers and strings are not arithmetic: use the checks
 *       below or TFJ_CHECK.
 *   TFJ_CHECK_INT(a, b)   a == b, both converted to long long first
 *   TFJ_CHECK_NEAR(a, b, tol)  |a - b| <= tol, computed in double
 *   TFJ_CHECK_STR(a, b)   equal C strings (NULL never matches)
 *   TFJ_CHECK_NULL(p) / TFJ_CHECK_NOT_NULL(p)
 *   TFJ_CHECK_OK(rc)      rc == 0; prints tfj_err_name(rc) and tfj_err_detail()
 * Every operand is evaluated exactly once. A NaN fails every ordering
 * check, as it does in C.
 *
 * Checks may run on any thread of the test program; the failure flag and
 * the check counter belong to the test function that is running. A check
 * in main() itself (setup before the first TFJ_RUN) that fails makes
 * tfj_test_finish() return 1 as well.
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
/* Counts one check for the running test; every TFJ_CHECK* macro calls it. */
void tfj_test_count(void);
/* Fails when rc != 0, naming the TFJ error code and the thread's detail. */
void tfj_test_check_ok(const char *file, int line, const char *expr, long long rc);
void tfj_test_run(const char *name, void (*fn)(void));
int tfj_test_finish(void);
uint64_t tfj_test_rand(void);
/* Uniform in [0, n). */
uint64_t tfj_test_below(uint64_t n);

#define TFJ_CHECK(c)                                                            \
	do {                                                                    \
		tfj_test_count();                                               \
		if (!(c))                                                       \
			tfj_test_fail(__FILE__, __LINE__, "%s", #c);            \
	} while (0)

/*
 * The kind of an arithmetic value, for printing it: 0 signed integer (also
 * enums, char, _Bool), 1 unsigned integer, 2 floating point.
 */
#define TFJ_TEST_KIND_(x)                                                       \
	_Generic((x),                                                           \
		unsigned char: 1, unsigned short: 1, unsigned int: 1,           \
		unsigned long: 1, unsigned long long: 1,                        \
		float: 2, double: 2, long double: 2,                            \
		default: 0)

/* Reports a failed comparison; a and b arrive as long double, which holds
 * every 64-bit integer and every double exactly. */
void tfj_test_fail_cmp(const char *file, int line, const char *expr_a, const char *op,
		       const char *expr_b, int kind_a, long double a, int kind_b, long double b);

/*
 * `a op b` exactly as C evaluates it (each side keeps its own type, so the
 * usual arithmetic conversions apply as in a plain TFJ_CHECK), each operand
 * evaluated once, both printed on failure. -Wsign-compare is off inside:
 * in `TFJ_CHECK_LE(len, 8)` the 8 is a variable of type int by then, and
 * the compiler no longer sees that it is a non-negative constant.
 */
#define TFJ_CHECK_CMP_(a, op, b)                                                \
	do {                                                                    \
		__typeof__(a) a_ = (a);                                         \
		__typeof__(b) b_ = (b);                                         \
		tfj_test_count();                                               \
		_Pragma("GCC diagnostic push")                                  \
		_Pragma("GCC diagnostic ignored \"-Wsign-compare\"")           \
		if (!(a_ op b_))                                                \
			tfj_test_fail_cmp(__FILE__, __LINE__, #a, #op, #b,      \
					  TFJ_TEST_KIND_(a_), (long double)a_,  \
					  TFJ_TEST_KIND_(b_), (long double)b_); \
		_Pragma("GCC diagnostic pop")                                   \
	} while (0)

/* Equality of integers, both converted to long long. */
#define TFJ_CHECK_INT(a, b)                                                     \
	do {                                                                    \
		long long a_ = (long long)(a), b_ = (long long)(b);             \
		tfj_test_count();                                               \
		if (a_ != b_)                                                   \
			tfj_test_fail(__FILE__, __LINE__, "%s == %s (%lld != %lld)", \
				      #a, #b, a_, b_);                          \
	} while (0)

#define TFJ_CHECK_EQ(a, b) TFJ_CHECK_CMP_(a, ==, b)
#define TFJ_CHECK_NE(a, b) TFJ_CHECK_CMP_(a, !=, b)
#define TFJ_CHECK_LT(a, b) TFJ_CHECK_CMP_(a, <, b)
#define TFJ_CHECK_LE(a, b) TFJ_CHECK_CMP_(a, <=, b)
#define TFJ_CHECK_GT(a, b) TFJ_CHECK_CMP_(a, >, b)
#define TFJ_CHECK_GE(a, b) TFJ_CHECK_CMP_(a, >=, b)

/* |a - b| <= tol, computed in double; a NaN anywhere fails. */
#define TFJ_CHECK_NEAR(a, b, tol)                                               \
	do {                                                                    \
		double a_ = (double)(a), b_ = (double)(b), t_ = (double)(tol);  \
		tfj_test_count();                                               \
		if (!(a_ - b_ <= t_ && b_ - a_ <= t_))                          \
			tfj_test_fail(__FILE__, __LINE__,                       \
				      "%s near %s within %s (%.9g vs %.9g, diff %.3g)", \
				      #a, #b, #tol, a_, b_, a_ - b_);           \
	} while (0)

#define TFJ_CHECK_STR(a, b)                                                     \
	do {                                                                    \
		const char *a_ = (a), *b_ = (b);                                \
		tfj_test_count();                                               \
		if (!a_ || !b_ || strcmp(a_, b_) != 0)                          \
			tfj_test_fail(__FILE__, __LINE__, "%s == %s (\"%s\" != \"%s\")", \
				      #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
	} while (0)

#define TFJ_CHECK_NULL(p)                                                       \
	do {                                                                    \
		const void *p_ = (p);                                           \
		tfj_test_count();                                               \
		if (p_ != NULL)                                                 \
			tfj_test_fail(__FILE__, __LINE__, "%s == NULL (%p)", #p, p_); \
	} while (0)

#define TFJ_CHECK_NOT_NULL(p)                                                   \
	do {                                                                    \
		tfj_test_count();                                               \
		if ((p) == NULL)                                                \
			tfj_test_fail(__FILE__, __LINE__, "%s != NULL", #p);    \
	} while (0)

#define TFJ_CHECK_OK(rc) tfj_test_check_ok(__FILE__, __LINE__, #rc, (long long)(rc))

#define TFJ_RUN(fn) tfj_test_run(#fn, fn)

#endif
