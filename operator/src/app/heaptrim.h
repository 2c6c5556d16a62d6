/*
 * heaptrim.h - hands the allocator's free memory back to the kernel once a
 * burst of work is over, and reports what the heap holds.
 *
 * An allocator keeps memory that was freed: glibc's inside its arenas (only
 * the top of the main heap shrinks by itself), jemalloc's as dirty pages it
 * returns only after a decay time. A busy phase (hundreds of jobs created
 * at once: watch events parsed whole, pod bodies built, responses read)
 * frees most of what it allocated, but the pages stay resident and the
 * process looks as large afterwards as at its peak. tfj_heap_release()
 * returns the free pages (malloc_trim(0) on glibc, a purge of every arena
 * on jemalloc), at the cost of a walk over the allocator's free lists and
 * of page faults when the memory is used again, so it runs only when a
 * burst has ended, and not more often than a set gap:
 *
 *   due  when something happened since the last trim (the work count
 *        moved), nothing happened since the previous check (the burst is
 *        over, not paused between two keys), nothing is queued or being
 *        processed, and the last trim is at least min_gap_ms old.
 *
 * main checks once per loop (every 500 ms), so a trim follows the end of a
 * burst by half a second to a second and never runs in a hot loop.
 *
 * Threads: tfj_heaptrim_tick on one thread (main); tfj_heaptrim_metrics
 * from any (the figures it reads are atomics).
 *
 * Ownership: the caller owns the struct; nothing is allocated.
 */
#ifndef TFJ_HEAPTRIM_H
#define TFJ_HEAPTRIM_H

#include <stdatomic.h>
#include <stdint.h>

#include <tfj/buf.h>

/*
 * The operator's jemalloc options (app/main.c defines malloc_conf with
 * them): 2 arenas instead of 4 per core, as its threads allocate little
 * each.
 */
#define TFJ_HEAPTRIM_MALLOC_CONF "narenas:2"

/* Least time between two trims by default. */
#define TFJ_HEAPTRIM_MIN_GAP_MS 10000

struct tfj_heaptrim {
	uint64_t min_gap_ms;
	uint64_t last_ms;      /* when the last trim ran; 0: never */
	uint64_t trimmed_work; /* the work count when it ran */
	uint64_t prev_work;    /* the work count at the previous check */
	int checked;           /* prev_work is set */
	_Atomic uint64_t trims;          /* trims run */
	_Atomic uint64_t returned_bytes; /* anonymous resident memory they returned, summed */
};

/* min_gap_ms 0: TFJ_HEAPTRIM_MIN_GAP_MS. */
void tfj_heaptrim_init(struct tfj_heaptrim *t, uint64_t min_gap_ms);

/*
 * Pure but for *t: 1 when a trim is due at now_ms (monotonic) with `work`
 * a count that only grows while the process works (keys added and
 * processed) and `idle` nonzero when no key is queued or being processed;
 * else 0. Every call remembers `work` for the next one; a 1 also records
 * the trim as done at now_ms.
 */
int tfj_heaptrim_due(struct tfj_heaptrim *t, uint64_t now_ms, uint64_t work, int idle);

/*
 * tfj_heaptrim_due, and when due tfj_heap_release(), counting the
 * anonymous resident memory (RssAnon) it returned. Returns 1 when it
 * trimmed. Without a known allocator (AddressSanitizer's) it never trims.
 */
int tfj_heaptrim_tick(struct tfj_heaptrim *t, uint64_t now_ms, uint64_t work, int idle);

/*
 * Appends tfjob_operator_heap_bytes{state="in_use"|"free"}
 * (tfj_heap_stats: bytes handed out, bytes held free),
 * tfjob_operator_heap_trims_total and
 * tfjob_operator_heap_trim_returned_bytes_total. t may be NULL (no trim
 * counters). Nothing without a known allocator. TFJ_ETOOBIG when out is
 * full.
 */
int tfj_heaptrim_metrics(const struct tfj_heaptrim *t, struct tfj_buf *out);

#endif
