/*
 * jobpeek.h - a few fields of a cached TFJob read from its compact JSON
 * text (controller.h's tfj_controller_get_job_text) without a tree of the
 * whole object.
 *
 * The report path looks at the job of every report (its uid, its status,
 * and for a succeeded job which replicas stop: app/reporthub.c). The pod
 * templates a TFJob carries can be hundreds of KB, and a cJSON tree of
 * them is ten times that: parsing the whole job per report would cost more
 * than everything else a report does. Here the bounded scanner (jscan.h)
 * finds the members, and only what is read is parsed.
 *
 * Pure: no I/O, no state. The text is one the informer cache holds, so it
 * is valid JSON whose keys are written without escapes (jscan.h).
 * Ownership: out structs are the caller's (tfj_tfjob_free for the brief).
 */
#ifndef TFJ_JOBPEEK_H
#define TFJ_JOBPEEK_H

#include <stddef.h>

#include "tfjob/jobstatus.h"
#include "tfjob/tfjob.h"

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

/*
 * The job decoded (tfj_tfjob_decode) from a copy of its text with only what
 * the replica types' decoding reads: metadata's name, namespace, uid,
 * resourceVersion, generation and deletionTimestamp; per replica type its
 * replicas, restartPolicy and, of each template container, name, image,
 * ports and whether it has a command; and the status. Metadata, each
 * rs[t]'s present, replicas, restart, port and has_command,
 * total_replicas and the status come out as decoding the whole text gives
 * them (an invalid replica spec included, which hides the types after it),
 * so stoprule.h answers the same. A spec over TFJ_TFJOB_MAX_SPEC_BYTES, or
 * the informer's mark of one (TFJ_TFJOB_OVERSIZE_KEY), fails it as it fails
 * the full decode; the spec's length in text is taken for its compact size,
 * which it is in text cJSON printed (the cache's). The rest of the spec is
 * absent (spec_valid says only whether metadata and the replica types are
 * valid) and rs[t].tmpl is the trimmed template: not for planning. Errors
 * as tfj_tfjob_decode, and TFJ_ETYPE when text is not an object.
 */
int tfj_jobpeek_brief(struct tfj_tfjob *out, const char *text, size_t len);

#endif
