/*
 * test_heap.c - which allocator serves malloc, its figures and the release
 * of free memory. Built twice: on glibc's allocator (common_test_heap; none
 * under AddressSanitizer) and linked with jemalloc
 * (common_test_heap_jemalloc, TFJ_TEST_HEAP_JEMALLOC), as the operator is.
 */
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/heap.h>

#include "tfj_test.h"
#include "tfj_test_heap.h"

/* The allocator found at run time is the one the test was built with. */
static void test_kind(void)
{
	static const char *const names[] = { "none", "glibc", "jemalloc" };

	TFJ_CHECK_EQ(tfj_heap_kind(), tfj_test_expected_heap_kind());
	TFJ_CHECK_STR(tfj_heap_name(), names[tfj_test_expected_heap_kind()]);
}

/*
 * 8 MiB in 1 KiB blocks show in the bytes in use, and leave them again
 * when freed; the release hands free pages back without touching what is
 * in use.
 */
static void test_stats_follow_allocations(void)
{
	enum { N = 8192, SZ = 1024 };
	static char *blk[N];
	struct tfj_heap_stats s0, s1, s2, s3;

	if (tfj_heap_kind() == TFJ_HEAP_NONE) {
		TFJ_CHECK_INT(tfj_heap_stats(&s0), TFJ_EUNSUPP);
		TFJ_CHECK_EQ(s0.in_use, 0);
		TFJ_CHECK_EQ(s0.free, 0);
		tfj_heap_release(); /* a no-op */
		return;
	}
	TFJ_CHECK_INT(tfj_heap_stats(&s0), 0);
	for (int i = 0; i < N; i++) {
		blk[i] = malloc(SZ);
		TFJ_CHECK(blk[i] != NULL);
		memset(blk[i], i & 0xff, SZ);
	}
	TFJ_CHECK_INT(tfj_heap_stats(&s1), 0);
	/* Per-thread caches may hold a few blocks back from the count. */
	TFJ_CHECK_GE(s1.in_use, s0.in_use + (uint64_t)N * SZ * 7 / 8);
	for (int i = 0; i < N; i++)
		free(blk[i]);
	TFJ_CHECK_INT(tfj_heap_stats(&s2), 0);
	TFJ_CHECK_LE(s2.in_use + (uint64_t)N * SZ * 7 / 8, s1.in_use);
	tfj_heap_release();
	TFJ_CHECK_INT(tfj_heap_stats(&s3), 0);
	/* What is in use stays; what is free only shrinks. */
	TFJ_CHECK_LE(s3.in_use, s2.in_use + (uint64_t)N * SZ / 8);
	TFJ_CHECK_LE(s3.free, s2.free);
	/*
	 * jemalloc counts its free pages as resident until purged. glibc's
	 * free bytes stay free bytes after malloc_trim (only their pages go).
	 */
	if (tfj_heap_kind() == TFJ_HEAP_JEMALLOC)
		TFJ_CHECK_LE(s3.free + (uint64_t)N * SZ / 2, s2.free);
}

int main(void)
{
	/* As the operator calls it, before any thread starts. */
	tfj_heap_limit_arenas(2);
	TFJ_RUN(test_kind);
	TFJ_RUN(test_stats_follow_allocations);
	return tfj_test_finish();
}
