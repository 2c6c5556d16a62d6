/*
 * heaptrim.c - malloc_trim after bursts, and the heap's figures for
 * /metrics (see heaptrim.h for when and why).
 */
#include "app/heaptrim.h"

/*
 * The allocator's own calls are tfj/heap.h's. Without a known allocator
 * (AddressSanitizer's) this module never trims and shows no heap figures.
 */
#include <tfj/err.h>
#include <tfj/heap.h>

#include "app/procmem.h"

void tfj_heaptrim_init(struct tfj_heaptrim *t, uint64_t min_gap_ms)
{
	t->min_gap_ms = min_gap_ms ? min_gap_ms : TFJ_HEAPTRIM_MIN_GAP_MS;
	t->last_ms = 0;
	t->trimmed_work = 0;
	t->prev_work = 0;
	t->checked = 0;
	atomic_store(&t->trims, 0);
	atomic_store(&t->returned_bytes, 0);
}

int tfj_heaptrim_due(struct tfj_heaptrim *t, uint64_t now_ms, uint64_t work, int idle)
{
	/* Quiet since the previous check: the burst is over, not between two keys. */
	int quiet = t->checked && work == t->prev_work;

	t->prev_work = work;
	t->checked = 1;
	if (!idle || !quiet || work == t->trimmed_work)
		return 0;
	if (t->last_ms && now_ms - t->last_ms < t->min_gap_ms)
		return 0;
	t->last_ms = now_ms ? now_ms : 1;
	t->trimmed_work = work;
	return 1;
}

/* RssAnon in bytes, 0 when it cannot be read. */
static uint64_t anon_bytes(void)
{
	struct tfj_procmem m;

	return tfj_procmem_read(&m) ? 0 : m.anon_bytes;
}

int tfj_heaptrim_tick(struct tfj_heaptrim *t, uint64_t now_ms, uint64_t work, int idle)
{
	uint64_t before, after;

	if (tfj_heap_kind() == TFJ_HEAP_NONE)
		return 0;
	if (!tfj_heaptrim_due(t, now_ms, work, idle))
		return 0;
	before = anon_bytes();
	tfj_heap_release();
	after = anon_bytes();
	atomic_fetch_add(&t->trims, 1);
	if (before > after)
		atomic_fetch_add(&t->returned_bytes, before - after);
	return 1;
}

int tfj_heaptrim_metrics(const struct tfj_heaptrim *t, struct tfj_buf *out)
{
	struct tfj_heap_stats hs;
	int rc;

	if (tfj_heap_stats(&hs))
		return 0;
	rc = tfj_buf_printf(out,
		"# HELP tfjob_operator_heap_bytes The allocator's heap: bytes in use, and bytes "
		"free inside its arenas (resident until trimmed or reused).\n"
		"# TYPE tfjob_operator_heap_bytes gauge\n"
		"tfjob_operator_heap_bytes{state=\"in_use\"} %llu\n"
		"tfjob_operator_heap_bytes{state=\"free\"} %llu\n",
		(unsigned long long)hs.in_use, (unsigned long long)hs.free);
	if (rc == 0 && t)
		rc = tfj_buf_printf(out,
			"# HELP tfjob_operator_heap_trims_total Free heap memory handed back to "
			"the kernel after a burst of work (malloc_trim, or jemalloc's purge).\n"
			"# TYPE tfjob_operator_heap_trims_total counter\n"
			"tfjob_operator_heap_trims_total %llu\n"
			"# HELP tfjob_operator_heap_trim_returned_bytes_total Anonymous resident "
			"memory those trims returned (RssAnon before minus after).\n"
			"# TYPE tfjob_operator_heap_trim_returned_bytes_total counter\n"
			"tfjob_operator_heap_trim_returned_bytes_total %llu\n",
			(unsigned long long)atomic_load(&t->trims),
			(unsigned long long)atomic_load(&t->returned_bytes));
	return rc ? TFJ_ETOOBIG : 0;
}
