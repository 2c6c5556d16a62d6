/*
 * progrec.h - the progress record, the contract between tfjob-runtime (which
 * writes it) and the agent (which reads it).
 *
 * One record per stdout line: the literal prefix "TFJ_PROGRESS " and a
 * compact JSON object, e.g.
 *   TFJ_PROGRESS {"role":"worker","index":1,"step":1200,"loss":0.41,...}
 * docs/runtime-protocol.md lists the keys; the TFJ_PROGREC_KEY_* names below
 * are the whole set the runtime writes.
 *
 * Writer: keys and role names are fixed ASCII chosen by the writer, values
 * are numbers or booleans (a non-finite number is written as null), so no
 * escaping is needed. A record is at most TFJ_PROGREC_MAX bytes, prefix and
 * newline included: a field that does not fit is left out, and a record
 * whose closing brace does not fit becomes {"error":"record too long"}, so
 * the line is always one complete record.
 *
 * Reader: tfj_progrec_parse() takes one line and reads the five fields the
 * agent reports (step, loss, accuracy, examples/s, total steps) with the type-checked
 * getters of json.h. Unknown keys are ignored, null means absent, and a
 * known key of the wrong type, out of range or not finite makes the whole
 * record invalid. The reader accepts lines of any length the caller framed
 * (foreign trainers may write longer records than the runtime does).
 *
 * Ownership: the writer formats into the caller's buffer and allocates
 * nothing; the reader fills the caller's struct and keeps nothing.
 */
#ifndef TFJ_PROGREC_H
#define TFJ_PROGREC_H

#include <stddef.h>
#include <stdint.h>

#define TFJ_PROGREC_PREFIX "TFJ_PROGRESS "
/* Bytes of one written record, prefix and newline included. */
#define TFJ_PROGREC_MAX 1024

/* A trainer's named metrics (report.proto's Progress.metrics): at most
 * TFJ_PROGREC_METRICS_MAX per report, names of at most
 * TFJ_PROGREC_METRIC_NAME - 1 characters. One bound for the agent that sends
 * them, the operator's report decoder, its planner and the TFJob status. */
#define TFJ_PROGREC_METRICS_MAX 16
#define TFJ_PROGREC_METRIC_NAME 64

/* Keys the runtime writes (docs/runtime-protocol.md). */
#define TFJ_PROGREC_KEY_ROLE "role"
#define TFJ_PROGREC_KEY_INDEX "index"
#define TFJ_PROGREC_KEY_FINAL "final"
#define TFJ_PROGREC_KEY_STEP "step"
#define TFJ_PROGREC_KEY_LOCAL_STEP "local_step"
#define TFJ_PROGREC_KEY_LOSS "loss"
#define TFJ_PROGREC_KEY_ACCURACY "accuracy"
#define TFJ_PROGREC_KEY_EXAMPLES_PER_SEC "examples_per_sec"
#define TFJ_PROGREC_KEY_STALE "stale"
#define TFJ_PROGREC_KEY_PULL_MS "pull_ms"
#define TFJ_PROGREC_KEY_COMPUTE_MS "compute_ms"
#define TFJ_PROGREC_KEY_PUSH_MS "push_ms"
#define TFJ_PROGREC_KEY_WAIT_MS "wait_ms"
#define TFJ_PROGREC_KEY_STEP_MS "step_ms"
#define TFJ_PROGREC_KEY_TEST_ACCURACY "test_accuracy"
#define TFJ_PROGREC_KEY_TEST_LOSS "test_loss"
#define TFJ_PROGREC_KEY_EXAMPLES "examples"
#define TFJ_PROGREC_KEY_TRAIN_S "train_s"
#define TFJ_PROGREC_KEY_TIME_S "time_s"
/* Written alone when a record does not fit. */
#define TFJ_PROGREC_KEY_ERROR "error"
/* Other trainers' spellings the reader also accepts. */
#define TFJ_PROGREC_KEY_GLOBAL_STEP "global_step"
#define TFJ_PROGREC_KEY_EXAMPLES_PER_SECOND "examples_per_second"
/*
 * The training length in global steps (--max-steps, or epochs x steps per
 * epoch), the total that progress percentages and ETAs are computed from;
 * "total_steps" is accepted as its other spelling. Read from any trainer's
 * records; tfjob-runtime's records do not carry it (the agent reads its
 * start line instead, agent/src/progress_tf.h).
 */
#define TFJ_PROGREC_KEY_MAX_STEPS "max_steps"
#define TFJ_PROGREC_KEY_TOTAL_STEPS "total_steps"

/* --- writer ---------------------------------------------------------------- */

struct tfj_progrec_writer {
	char *buf;    /* the caller's; always NUL-terminated */
	size_t max;   /* bytes the record may use: min(size - 1, TFJ_PROGREC_MAX) */
	size_t len;   /* bytes written so far */
};

/*
 * Starts a record in buf (size bytes; TFJ_PROGREC_MAX + 1 holds any record):
 * the prefix, `role` and `index`. `role` and every key must be plain ASCII
 * without quotes or backslashes; they are written as given.
 */
void tfj_progrec_begin(struct tfj_progrec_writer *w, char *buf, size_t size, const char *role,
		       int index);
void tfj_progrec_int(struct tfj_progrec_writer *w, const char *key, int64_t v);
/* Written with %.6g; NaN and infinities as null. */
void tfj_progrec_num(struct tfj_progrec_writer *w, const char *key, double v);
void tfj_progrec_bool(struct tfj_progrec_writer *w, const char *key, int v);
/*
 * Closes the record with "}\n" and returns its length (w->buf holds the
 * line). Never fails: a record that ran out of room is replaced as the
 * header says; 0 only when buf is too small for even that replacement.
 */
size_t tfj_progrec_end(struct tfj_progrec_writer *w);

/* --- reader ---------------------------------------------------------------- */

/* The fields the reader extracts, as bit positions of tfj_progrec.have. */
enum tfj_progrec_field {
	TFJ_PROGREC_STEP = 0,
	TFJ_PROGREC_LOSS,
	TFJ_PROGREC_ACCURACY,
	TFJ_PROGREC_EPS,      /* examples per second */
	TFJ_PROGREC_TOTAL,    /* total steps (max_steps) */
	TFJ_PROGREC_NFIELDS
};

#define TFJ_PROGREC_BIT(f) (1u << (f))

struct tfj_progrec {
	unsigned have;            /* TFJ_PROGREC_BIT of each field present */
	int64_t step;             /* global step, >= 0 */
	double loss;              /* finite */
	double accuracy;          /* "accuracy", else "test_accuracy"; finite */
	double examples_per_sec;  /* finite */
	int64_t total_steps;      /* max_steps, else total_steps; >= 1 */
};

/* "step", "loss", "accuracy", "examples_per_sec", "max_steps"; NULL when out of range. */
const char *tfj_progrec_field_name(enum tfj_progrec_field f);

/*
 * Parses one line (without its newline; a trailing CR and blanks are
 * ignored) as a progress record. Returns 0 and fills *out (its `have` says
 * which fields were present, at least one), TFJ_ENOTFOUND when the line does
 * not start with the prefix, or TFJ_EPARSE / TFJ_ETYPE / TFJ_ERANGE for a
 * record that is malformed (*out is then all zero).
 */
int tfj_progrec_parse(struct tfj_progrec *out, const char *line, size_t len);

#endif
