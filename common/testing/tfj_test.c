/*
 * tfj_test.c - the harness behind tfj_test.h.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "tfj/err.h"
#include "tfj_test.h"

/* Atomic because tests run checks from their worker threads too. */
static atomic_int current_failed;
static atomic_long current_checks;
static atomic_int running;
static int passed, failed;
/* Failed checks in main() itself, outside every test function. */
static atomic_int outside_failed;
static uint64_t rng_state;
static int rng_ready;
static uint64_t seed_value;

void tfj_test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "  FAIL %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	atomic_store(&current_failed, 1);
	if (!atomic_load(&running))
		atomic_fetch_add(&outside_failed, 1);
}

/* One operand of a failed comparison as text, in the notation of its kind. */
static void fmt_value(char *buf, size_t cap, int kind, long double v)
{
	if (kind == 2)
		snprintf(buf, cap, "%.9Lg", v);
	else if (kind == 1)
		snprintf(buf, cap, "%llu", (unsigned long long)v);
	else
		snprintf(buf, cap, "%lld", (long long)v);
}

void tfj_test_fail_cmp(const char *file, int line, const char *expr_a, const char *op,
		       const char *expr_b, int kind_a, long double a, int kind_b, long double b)
{
	char va[64], vb[64];

	fmt_value(va, sizeof(va), kind_a, a);
	fmt_value(vb, sizeof(vb), kind_b, b);
	tfj_test_fail(file, line, "%s %s %s (%s vs %s)", expr_a, op, expr_b, va, vb);
}

void tfj_test_count(void)
{
	atomic_fetch_add(&current_checks, 1);
}

void tfj_test_check_ok(const char *file, int line, const char *expr, long long rc)
{
	tfj_test_count();
	if (rc != 0) {
		const char *detail = tfj_err_detail();

		tfj_test_fail(file, line, "%s == 0 (%lld, %s%s%s)", expr, rc,
			      rc >= INT_MIN && rc <= INT_MAX ? tfj_err_name((int)rc) : "unknown",
			      detail[0] ? ": " : "", detail);
	}
}

void tfj_test_run(const char *name, void (*fn)(void))
{
	atomic_store(&current_failed, 0);
	atomic_store(&current_checks, 0);
	atomic_store(&running, 1);
	fn();
	atomic_store(&running, 0);
	if (atomic_load(&current_checks) == 0) {
		fprintf(stderr, "  FAIL %s: ran no check; a test must assert something\n", name);
		atomic_store(&current_failed, 1);
	}
	if (atomic_load(&current_failed)) {
		failed++;
		fprintf(stderr, "not ok - %s\n", name);
	} else {
		passed++;
		fprintf(stderr, "ok - %s\n", name);
	}
}

int tfj_test_finish(void)
{
	if (rng_ready)
		fprintf(stderr, "seed was TFJ_TEST_SEED=%" PRIu64 "\n", seed_value);
	if (atomic_load(&outside_failed))
		fprintf(stderr, "not ok - %d check(s) in main(), outside every test, failed\n",
			atomic_load(&outside_failed));
	printf("%d passed, %d failed\n", passed, failed);
	return failed || atomic_load(&outside_failed) ? 1 : 0;
}

uint64_t tfj_test_rand(void)
{
	/* splitmix64: small, fast and good enough for generating inputs. */
	uint64_t z;

	if (!rng_ready) {
		const char *s = getenv("TFJ_TEST_SEED");
		char *end = NULL;

		seed_value = 0x5eed1234abcdULL;
		if (s && *s) {
			unsigned long long v = strtoull(s, &end, 10);
			if (end && *end == '\0')
				seed_value = v;
		}
		rng_ready = 1;
		rng_state = seed_value;
		fprintf(stderr, "property tests seeded with TFJ_TEST_SEED=%" PRIu64 "\n", seed_value);
	}
	z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t tfj_test_below(uint64_t n)
{
	return n ? tfj_test_rand() % n : 0;
}
