/*
 * progstatus.h - the JSON form of .status.progress (struct
 * tfj_progress_status, jobstatus.h), part of tfj_jobstatus_decode and
 * tfj_jobstatus_encode: the fields jobstatus.h lists, the typed ones and
 * KEP-2779's (lastUpdatedTime, metrics[]).
 *
 * Encoding is deterministic (fixed key order, metrics as "%.6g" strings),
 * so the planner can compare old and new status and write only on change.
 * Decoding is type-checked (tfj/json.h); the metrics the encoder derives
 * from the typed fields are not decoded back, and entries beyond
 * TFJ_PROGREC_METRICS_MAX or too long for the struct are skipped.
 *
 * Ownership: plain values; the encoder adds to the caller's cJSON object.
 */
#ifndef TFJ_PROGSTATUS_H
#define TFJ_PROGSTATUS_H

#include <cjson/cJSON.h>

#include "tfjob/jobstatus.h"

/* Reads status.progress (absent or null: p untouched, p->present 0). */
int tfj_progstatus_decode(struct tfj_progress_status *p, const cJSON *status);

/*
 * 1 for the metric names the encoder derives from the typed fields (loss,
 * accuracy, examples_per_second): a trainer's metric of that name is not
 * listed twice.
 */
int tfj_progstatus_derived(const char *name);

/* Adds "progress" to the status object o when p->present. */
int tfj_progstatus_encode(cJSON *o, const struct tfj_progress_status *p);

#endif
