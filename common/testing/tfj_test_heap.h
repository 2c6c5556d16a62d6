/*
 * tfj_test_heap.h - the allocator a test binary was built for, for the
 * tests that run once on glibc's allocator and once linked with jemalloc
 * (as the operator is). The build defines TFJ_TEST_HEAP_JEMALLOC for the
 * jemalloc variant; without it the allocator is glibc's, or none under
 * AddressSanitizer. A test checks tfj_heap_kind() against this first, so
 * that a test meant for one allocator cannot pass on another. Header only.
 */
#ifndef TFJ_TEST_HEAP_H
#define TFJ_TEST_HEAP_H

#include <tfj/glibcheap.h>
#include <tfj/heap.h>

static inline enum tfj_heap_kind tfj_test_expected_heap_kind(void)
{
#ifdef TFJ_TEST_HEAP_JEMALLOC
	return TFJ_HEAP_JEMALLOC;
#else
	return TFJ_GLIBC_HEAP ? TFJ_HEAP_GLIBC : TFJ_HEAP_NONE;
#endif
}

#endif
