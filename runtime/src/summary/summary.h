/*
 * summary.h - TensorBoard scalars: the Event messages of an event file,
 * and the writer a task keeps for one run directory.
 *
 * A run is a directory under --logdir (the coordinator writes "train", the
 * evaluator "eval"); TensorBoard shows each as one line per tag. The
 * writer creates <logdir>/<run>/events.out.tfevents.<unix s>.<host>.<pid>,
 * whose first record names the format ("brain.Event:2") and whose every
 * further record is one Event {wall_time, step, summary{value{tag,
 * simple_value}...}} (evfile.h frames them). A new process makes a new
 * file; TensorBoard reads a run's files in name order, so a restarted task
 * continues the same curves.
 *
 * Summaries are an aid, never a reason to stop training: after the first
 * failed write the writer logs one warning and writes nothing more.
 *
 * Ownership: tfj_summary_open() returns a writer that tfj_summary_free()
 * closes (it accepts NULL). Every writer call accepts NULL and then does
 * nothing, so callers need no "is --logdir set" test at each call. Tags
 * are copied into the record, not kept.
 */
#ifndef TFJ_SUMMARY_H
#define TFJ_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#define TFJ_SUMMARY_MAX_VALUES 16   /* values in one Event */
#define TFJ_SUMMARY_MAX_TAG 128     /* bytes of one tag */
#define TFJ_SUMMARY_FILE_VERSION "brain.Event:2"

struct tfj_summary_value {
	const char *tag;
	double value;                /* stored as float, as TensorBoard's scalars are */
};

/*
 * Encodes Event{wall_time, step, summary{the n values}} into out (room for
 * cap bytes); *len receives its size. A NaN value means "not known yet"
 * (tfj_summary_rate's first call) and is left out; when every value is NaN,
 * *len is 0 and nothing is to be written. TFJ_EINVAL for n of 0 or over
 * TFJ_SUMMARY_MAX_VALUES, an empty, missing or over-long tag;
 * TFJ_ETOOBIG when out is too small.
 */
int tfj_summary_encode(uint8_t *out, size_t cap, size_t *len, double wall_time, int64_t step,
		       const struct tfj_summary_value *v, size_t n);

/* Encodes a file's first Event{wall_time, file_version}. */
int tfj_summary_encode_version(uint8_t *out, size_t cap, size_t *len, double wall_time);

struct tfj_summary;

/*
 * Creates <logdir>/<run> (logdir must exist; run is one path component)
 * and a new event file in it, and writes its version record.
 */
int tfj_summary_open(struct tfj_summary **out, const char *logdir, const char *run);

/*
 * Appends one Event of n scalar values at `step` (see tfj_summary_encode;
 * none when every value is NaN). Errors are also logged, once.
 */
int tfj_summary_scalars(struct tfj_summary *w, int64_t step, const struct tfj_summary_value *v,
			size_t n);

/*
 * Global steps per second since the previous call (the step rate between
 * two summaries); NaN, which tfj_summary_scalars leaves out, on the first
 * call, when the step went back (a restart from a checkpoint), and for NULL.
 */
double tfj_summary_rate(struct tfj_summary *w, int64_t step);

/* The event file's path ("" for NULL). */
const char *tfj_summary_path(const struct tfj_summary *w);

/* Closes the file and frees the writer; accepts NULL. */
void tfj_summary_free(struct tfj_summary *w);

#endif
