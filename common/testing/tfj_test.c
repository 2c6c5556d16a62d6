/*
 * tfj_test.c - the harness behind tfj_test.h.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "tfj_test.h"

static int current_failed;
static int passed, failed;
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
	current_failed = 1;
}

void tfj_test_run(const char *name, void (*fn)(void))
{
	current_failed = 0;
	fn();
	if (current_failed) {
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
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
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
