/*
 * progress.h - machine-readable progress records on stdout.
 *
 * One record per line: the literal prefix "TFJ_PROGRESS " and a compact
 * JSON object, e.g.
 *   TFJ_PROGRESS {"role":"worker","index":1,"step":1200,"loss":0.41,...}
 * The agent forwards these lines; docs/runtime-protocol.md lists the keys.
 * Keys and role names are fixed ASCII chosen by the runtime, values are
 * numbers or booleans (non-finite numbers become null), so no escaping is
 * needed. Each record is written with one fwrite and flushed, so records
 * from a task never interleave with its other output.
 */
#ifndef TFJ_PROGRESS_H
#define TFJ_PROGRESS_H

#include <stdint.h>

#include <tfj/buf.h>

#define TFJ_PROGRESS_PREFIX "TFJ_PROGRESS "
#define TFJ_PROGRESS_MAX 1024

struct tfj_progress {
	struct tfj_buf b;
};

void tfj_progress_begin(struct tfj_progress *p, const char *role, int index);
void tfj_progress_int(struct tfj_progress *p, const char *key, int64_t v);
void tfj_progress_num(struct tfj_progress *p, const char *key, double v);
void tfj_progress_bool(struct tfj_progress *p, const char *key, int v);
/* Writes the line to stdout and frees the buffer. */
void tfj_progress_end(struct tfj_progress *p);

#endif
