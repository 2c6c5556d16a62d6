/*
 * test_heaptrim.c - when the heap trim runs (after a burst, when idle, not
 * more often than its gap), that a trim really returns freed pages of this
 * process, and its figures on /metrics.
 */
#include <stdlib.h>
#include <string.h>

#include <tfj/buf.h>
#include <tfj/heap.h>

#include "app/heaptrim.h"
#include "app/procmem.h"
#include "tfj_test.h"
#include "tfj_test_heap.h"

/* Times are plain numbers (ms): the rule is checked without waiting. */
static void test_due_after_a_burst(void)
{
	struct tfj_heaptrim t;

	tfj_heaptrim_init(&t, 10000);
	/* Nothing has happened yet: nothing to give back. */
	TFJ_CHECK_INT(tfj_heaptrim_due(&t, 1000, 0, 1), 0);
	TFJ_CHECK_INT(tfj_heaptrim_due(&t, 1500, 0, 1), 0);
	/* A burst: the work count moves, keys are queued. */
	TFJ_CHECK_INT(tfj_heaptrim_due(&t, 2000, 40, 0), 0);
	TFJ_CHECK_INT(tfj_heaptrim_due(&t, 2500, 90, 0), 0);
	/* Idle for a moment, but work happened since the previous check. */
	TFJ_CHECK_INT(tfj_heaptrim_due(&t, 3000, 100, 1), 0);
	/* Idle and quiet since the previous check: trim. */
	TFJ_CHECK_INT(tfj_heaptrim_due(&t, 3500, 100, 1), 1);
	/* Nothing new since: never again. */
	TFJ_CHECK_INT(tfj_heaptrim_due(&t, 4000, 100, 1), 0);
	TFJ_CHECK_INT(tfj_heaptrim_due(&t, 60000, 100, 1), 0);
}

static void test_not_while_busy(void)
{
	struct tfj_heaptrim t;

	tfj_heaptrim_init(&t, 10000);
	TFJ_CHECK_INT(tfj_heaptrim_due(&t, 1000, 5, 1), 0);
	/* Quiet, but a key is still queued or being processed. */
	TFJ_CHECK_INT(tfj_heaptrim_due(&t, 1500, 5, 0), 0);
	TFJ_CHECK_INT(tfj_heaptrim_due(&t, 2000, 5, 0), 0);
	TFJ_CHECK_INT(tfj_heaptrim_due(&t, 2500, 5, 1), 1);
}

static void test_gap_between_trims(void)
{
	struct tfj_heaptrim t;

	tfj_heaptrim_init(&t, 10000);
	TFJ_CHECK_INT(tfj_heaptrim_due(&t, 1000, 1, 1), 0);
	TFJ_CHECK_INT(tfj_heaptrim_due(&t, 1500, 1, 1), 1);
	/* Short bursts one after another: one trim per gap at most. */
	TFJ_CHECK_INT(tfj_heaptrim_due(&t, 2000, 2, 1), 0);
	TFJ_CHECK_INT(tfj_heaptrim_due(&t, 2500, 2, 1), 0);
	TFJ_CHECK_INT(tfj_heaptrim_due(&t, 11000, 2, 1), 0);
	TFJ_CHECK_INT(tfj_heaptrim_due(&t, 11500, 2, 1), 1);
	/* The default gap. */
	tfj_heaptrim_init(&t, 0);
	TFJ_CHECK_EQ(t.min_gap_ms, TFJ_HEAPTRIM_MIN_GAP_MS);
}

/* Without a known allocator: nothing to trim or show. */
static void check_no_allocator(void)
{
	struct tfj_heaptrim t;
	struct tfj_buf out;

	tfj_heaptrim_init(&t, 10000);
	TFJ_CHECK_INT(tfj_heaptrim_tick(&t, 1000, 1, 1), 0);
	TFJ_CHECK_INT(tfj_heaptrim_tick(&t, 1500, 1, 1), 0);
	TFJ_CHECK_EQ(atomic_load(&t.trims), 0);
	tfj_buf_init(&out, 1 << 16);
	TFJ_CHECK_INT(tfj_heaptrim_metrics(&t, &out), 0);
	TFJ_CHECK_EQ(out.len, 0);
	tfj_buf_free(&out);
}

/*
 * The edge: 16 MiB freed in the middle of the heap stay resident until the
 * trim, which hands them back. On glibc a small block after each 64 KiB
 * one keeps them off the top, which free() would shrink by itself; on
 * jemalloc they are dirty pages until its decay time (10 s) has passed.
 */
static void test_trim_returns_freed_pages(void)
{
	enum { N = 256, BIG = 64 << 10 };
	static char *big[N], *small[N];
	struct tfj_heaptrim t;
	struct tfj_buf out;

	/* Built for glibc and for jemalloc (operator_test_heaptrim_jemalloc). */
	TFJ_CHECK_EQ(tfj_heap_kind(), tfj_test_expected_heap_kind());
	if (tfj_heap_kind() == TFJ_HEAP_NONE) {
		check_no_allocator();
		return;
	}
	for (int i = 0; i < N; i++) {
		big[i] = malloc(BIG);
		small[i] = malloc(32);
		TFJ_CHECK(big[i] && small[i]);
		memset(big[i], 1, BIG);
	}
	for (int i = 0; i < N; i++)
		free(big[i]);
	tfj_heaptrim_init(&t, 10000);
	TFJ_CHECK_INT(tfj_heaptrim_tick(&t, 1000, 1, 1), 0);
	TFJ_CHECK_INT(tfj_heaptrim_tick(&t, 1500, 1, 1), 1);
	TFJ_CHECK_EQ(atomic_load(&t.trims), 1);
	/* At least half of what was freed (the rest: pages the allocator reused). */
	TFJ_CHECK(atomic_load(&t.returned_bytes) >= (uint64_t)N * BIG / 2);
	for (int i = 0; i < N; i++)
		free(small[i]);

	tfj_buf_init(&out, 1 << 16);
	TFJ_CHECK_INT(tfj_heaptrim_metrics(&t, &out), 0);
	TFJ_CHECK(strstr(out.ptr, "tfjob_operator_heap_bytes{state=\"in_use\"} ") != NULL);
	TFJ_CHECK(strstr(out.ptr, "tfjob_operator_heap_bytes{state=\"free\"} ") != NULL);
	TFJ_CHECK(strstr(out.ptr, "tfjob_operator_heap_trims_total 1\n") != NULL);
	TFJ_CHECK(strstr(out.ptr, "tfjob_operator_heap_trim_returned_bytes_total ") != NULL);
	tfj_buf_free(&out);
	/* Without a trimmer only the heap's own figures. */
	tfj_buf_init(&out, 1 << 16);
	TFJ_CHECK_INT(tfj_heaptrim_metrics(NULL, &out), 0);
	TFJ_CHECK(strstr(out.ptr, "tfjob_operator_heap_bytes{state=\"free\"} ") != NULL);
	TFJ_CHECK(strstr(out.ptr, "heap_trims_total") == NULL);
	tfj_buf_free(&out);
}

int main(void)
{
	TFJ_RUN(test_due_after_a_burst);
	TFJ_RUN(test_not_while_busy);
	TFJ_RUN(test_gap_between_trims);
	TFJ_RUN(test_trim_returns_freed_pages);
	return tfj_test_finish();
}
