/*
 * procmem.h - the operator's own memory, for /metrics: resident set size
 * and its peak (the high-water mark the kernel keeps), read from
 * /proc/self/status.
 *
 * The peak is what a memory limit is measured against: an OOM kill happens
 * at the peak, not at the average. docs/reliability.md gives the peaks the
 * memory budget tests measured and the chart's limit follows from them.
 *
 * Ownership: nothing is allocated beyond the call.
 */
#ifndef TFJ_PROCMEM_H
#define TFJ_PROCMEM_H

#include <stddef.h>
#include <stdint.h>

#include <tfj/buf.h>

struct tfj_procmem {
	uint64_t rss_bytes;   /* VmRSS */
	uint64_t peak_bytes;  /* VmHWM */
	uint64_t anon_bytes;  /* RssAnon (heap, stacks, written data); 0 when not shown */
};

/*
 * Pure. Reads the VmRSS and VmHWM lines ("VmHWM:\t  1234 kB") of a
 * /proc/<pid>/status text of len bytes, and RssAnon when it is there
 * (Linux 4.5 and later; else anon_bytes is 0). TFJ_EPARSE when VmRSS or
 * VmHWM is missing or malformed.
 */
int tfj_procmem_parse(struct tfj_procmem *out, const char *text, size_t len);

/* Reads /proc/self/status; errors as tfj_file_read and tfj_procmem_parse. */
int tfj_procmem_read(struct tfj_procmem *out);

/*
 * Appends process_resident_memory_bytes and
 * tfjob_operator_process_peak_resident_memory_bytes; nothing when /proc
 * cannot be read (not Linux). TFJ_ETOOBIG when out is full.
 */
int tfj_procmem_metrics(struct tfj_buf *out);

#endif
