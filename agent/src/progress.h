/*
 * progress.h - training progress read from the training command's output.
 *
 * Two sources, both line based:
 *  - progress records of tfjob-runtime: a stdout line `TFJ_PROGRESS {json}`
 *    (docs/runtime-protocol.md), read with common's tfj_progrec_parse
 *    (tfj/progrec.h, the same module the runtime writes them with).
 *  - for foreign commands (a Python trainer), an optional extended POSIX
 *    regular expression applied to every stdout and stderr line
 *    (progress_regex.h);
 *  - TensorFlow's and Keras' own log lines (progress_tf.h), built in.
 *
 * Lines are framed with a hard cap: a line longer than the cap is never
 * parsed (the bytes were already passed through by the supervisor).
 *
 * Ownership: a tracker owns its framing buffers and the stderr tail; it
 * borrows the regex (which must outlive it). Free with the _free calls,
 * which accept NULL.
 */
#ifndef TFJ_AGENT_PROGRESS_H
#define TFJ_AGENT_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#include <tfj/progrec.h>

#include "progress_tf.h"

#define TFJ_PROGRESS_LINE_DEFAULT (64u * 1024u)
#define TFJ_PROGRESS_LINE_MIN 256u
#define TFJ_PROGRESS_LINE_MAX (16u * 1024u * 1024u)
#define TFJ_PROGRESS_REGEX_MAX 1024u  /* pattern bytes as given */
#define TFJ_PROGRESS_TAIL 1024u       /* bytes of stderr kept for the exit message */

/*
 * What the agent knows of the command's progress: the newest value of each
 * field of the records (struct tfj_progrec) merged so far, when the latest
 * arrived and how many were accepted.
 */
struct tfj_progress_state {
	unsigned have;          /* TFJ_PROGREC_BIT of every field ever seen */
	int64_t step;           /* global step, >= 0 */
	double loss;
	double accuracy;
	double examples_per_sec;
	int64_t total_steps;    /* the training length, >= 1 */
	int64_t unix_time_ms;   /* when the latest record was seen */
	uint64_t records;       /* records (runtime or regex) accepted */
	struct tfj_progress_metrics named; /* the latest TensorFlow line's named metrics */
};

/*
 * Field for a name as the --progress-field flag and the regex's named groups
 * spell it: tfj_progrec_field_name's names, also "global_step", "eps",
 * "examples_per_second" and "total_steps". TFJ_EINVAL if unknown.
 */
int tfj_progress_field_parse(enum tfj_progrec_field *out, const char *name);

/* The regular expression for foreign commands: progress_regex.h. */
struct tfj_progress_regex;

/* Copies the fields `upd` has into `state`; counts one record. */
void tfj_progress_merge(struct tfj_progress_state *state, const struct tfj_progrec *upd);

enum tfj_progress_stream { TFJ_STREAM_STDOUT = 0, TFJ_STREAM_STDERR = 1 };

struct tfj_progress_framer {
	char *buf;
	size_t len;
	int skipping;             /* inside a line longer than the cap */
	int after_cr;             /* the last line ended with '\r' */
};

struct tfj_progress_tracker {
	size_t line_max;
	const struct tfj_progress_regex *regex;   /* borrowed; NULL = none */
	struct tfj_progress_framer fr[2];
	struct tfj_progress_state state;
	struct tfj_progress_tf tf;  /* built-in TensorFlow/Keras patterns' state */
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
