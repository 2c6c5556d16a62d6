/*
 * progress.h - training progress read from the training command's output.
 *
 * Two sources, both line based:
 *  - progress records of tfjob-runtime: a stdout line `TFJ_PROGRESS {json}`
 *    (docs/runtime-protocol.md). The JSON object is parsed with the shared
 *    type-checked getters; unknown keys are ignored, a known key of the wrong
 *    type makes the whole record invalid.
 *  - for foreign commands (a Python trainer), an optional extended POSIX
 *    regular expression applied to every stdout and stderr line
 *    (progress_regex.h).
 *
 * Lines are framed with a hard cap: a line longer than the cap is never
 * parsed (the bytes were already passed through by the supervisor).
 *
 * Ownership: a tracker owns its framing buffers and the stderr tail; it
 * borrows the regex (which must outlive it). Free with the _free calls,
 * which accept NULL.
 */
#ifndef TFJ_PROGRESS_H
#define TFJ_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#define TFJ_PROGRESS_PREFIX "TFJ_PROGRESS "
#define TFJ_PROGRESS_LINE_DEFAULT (64u * 1024u)
#define TFJ_PROGRESS_LINE_MIN 256u
#define TFJ_PROGRESS_LINE_MAX (16u * 1024u * 1024u)
#define TFJ_PROGRESS_REGEX_MAX 1024u  /* pattern bytes as given */
#define TFJ_PROGRESS_TAIL 1024u       /* bytes of stderr kept for the exit message */

enum tfj_progress_field {
	TFJ_PF_STEP = 0,
	TFJ_PF_LOSS,
	TFJ_PF_ACCURACY,
	TFJ_PF_EPS,      /* examples per second */
	TFJ_PF_COUNT
};

/* Bits of tfj_progress.have. */
#define TFJ_PF_BIT(f) (1u << (f))

struct tfj_progress {
	unsigned have;          /* TFJ_PF_BIT of every field ever seen */
	int64_t step;           /* global step, >= 0 */
	double loss;
	double accuracy;
	double examples_per_sec;
	int64_t unix_time_ms;   /* when the latest record was seen */
	uint64_t records;       /* records (runtime or regex) accepted */
};

/* "step", "loss", "accuracy", "examples_per_sec"; NULL when out of range. */
const char *tfj_progress_field_name(enum tfj_progress_field f);
/* Field for a name (also "global_step" and "eps"); TFJ_EINVAL if unknown. */
int tfj_progress_field_parse(enum tfj_progress_field *out, const char *name);

/*
 * Parses one line (without its newline) as a runtime progress record.
 * Returns 0 and fills *out (its `have` says which fields were present),
 * TFJ_ENOTFOUND when the line is not a record at all, or TFJ_EPARSE /
 * TFJ_ETYPE / TFJ_ERANGE for a record that is malformed.
 */
int tfj_progress_parse_record(struct tfj_progress *out, const char *line, size_t len);

/* The regular expression for foreign commands: progress_regex.h. */
struct tfj_progress_regex;

/* Copies the fields `upd` has into `state`; counts one record. */
void tfj_progress_merge(struct tfj_progress *state, const struct tfj_progress *upd);

enum tfj_progress_stream { TFJ_STREAM_STDOUT = 0, TFJ_STREAM_STDERR = 1 };

struct tfj_progress_framer {
	char *buf;
	size_t len;
	int skipping;             /* inside a line longer than the cap */
};

struct tfj_progress_tracker {
	size_t line_max;
	const struct tfj_progress_regex *regex;   /* borrowed; NULL = none */
	struct tfj_progress_framer fr[2];
	struct tfj_progress state;
	uint64_t lines;           /* complete lines examined */
	uint64_t long_lines;      /* lines over the cap, not parsed */
	uint64_t bad_records;     /* TFJ_PROGRESS lines that did not parse */
	char tail[TFJ_PROGRESS_TAIL];
	size_t tail_len;
};

int tfj_progress_tracker_init(struct tfj_progress_tracker *t, size_t line_max,
			      const struct tfj_progress_regex *regex);
/*
 * Feeds output bytes of one stream. Returns 1 when the progress state
 * changed (a record was accepted), else 0. Never fails: a line it cannot
 * hold is skipped.
 */
int tfj_progress_tracker_feed(struct tfj_progress_tracker *t, enum tfj_progress_stream s,
			      const char *data, size_t len);
/* Processes a final line that had no newline (at end of output). */
int tfj_progress_tracker_flush(struct tfj_progress_tracker *t);
/*
 * Writes the last complete lines of stderr (at most TFJ_PROGRESS_TAIL
 * bytes, valid UTF-8, trailing whitespace trimmed) into out. Returns length.
 */
size_t tfj_progress_tracker_tail(const struct tfj_progress_tracker *t, char *out, size_t outlen);
void tfj_progress_tracker_free(struct tfj_progress_tracker *t);

#endif
