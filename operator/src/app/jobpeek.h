/*
 * jobpeek.h - a few fields of a cached TFJob read from its compact JSON
 * text (controller.h's tfj_controller_get_job_text) without a tree of the
 * whole object.
 *
 * The report path looks at the job of every report (its uid and its status:
 * app/reporthub.c). The pod
 * templates a TFJob carries can be hundreds of KB, and a cJSON tree of
 * them is ten times that: parsing the whole job per report would cost more
 * than everything else a report does. Here the bounded scanner (jscan.h)
 * finds the members, and only what is read is parsed.
 *
 * Pure: no I/O, no state. The text is one the informer cache holds, so it
 * is valid JSON whose keys are written without escapes (jscan.h).
 * Ownership: out structs are the caller's.
 */
#ifndef TFJ_JOBPEEK_H
#define TFJ_JOBPEEK_H

#include <stddef.h>

#include "tfjob/jobstatus.h"

/*
 * metadata.uid into out (NUL-terminated). TFJ_ENOTFOUND when missing,
 * TFJ_ETYPE when not a string, TFJ_ETOOBIG when it does not fit outlen,
 * TFJ_EPARSE on malformed text.
 */
int tfj_jobpeek_uid(char *out, size_t outlen, const char *text, size_t len);

/*
 * The job's status as tfj_jobstatus_decode reads it (absent or null: an
 * empty status, 0), parsing the status member alone, at most
 * TFJ_TFJOB_MAX_BYTES. On failure *out is empty.
 */
int tfj_jobpeek_status(struct tfj_job_status *out, const char *text, size_t len);

#endif
