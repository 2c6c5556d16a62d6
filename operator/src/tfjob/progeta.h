/*
 * progeta.h - how far a job is and when it will end: the progress
 * percentage and the estimated remaining seconds of status.progress, from
 * the training length (total steps) and the recent step rate.
 *
 * The step rate is measured over a window of (operator clock, global step)
 * samples, one per report of the lead replica (report/progress.c) that
 * advanced its step: the samples of the
 * last TFJ_PROGETA_WINDOW_MS, at most TFJ_PROGETA_SAMPLES of them, and
 * always the two newest (reports sparser than the window still give a
 * rate, over the gap between them). A step that goes back (a restart from
 * a checkpoint) starts the window over, so a rewind never yields a rate
 * from before it.
 *
 * Unknowns stay unknown: no total, no percentage and no ETA; fewer than two
 * samples, less than TFJ_PROGETA_MIN_SPAN_MS between them, or no steps
 * made in the window, no ETA; an ETA above TFJ_PROGETA_MAX_S (a job that
 * all but stopped) is none either.
 *
 * Pure: no clock (times come in as arguments), no heap. Copy with `=`.
 */
#ifndef TFJ_PROGETA_H
#define TFJ_PROGETA_H

#include <stdint.h>

#define TFJ_PROGETA_SAMPLES 16
#define TFJ_PROGETA_WINDOW_MS 60000
#define TFJ_PROGETA_MIN_SPAN_MS 1000
#define TFJ_PROGETA_MAX_S (366LL * 24 * 3600)

struct tfj_progeta_sample {
	int64_t ms;     /* operator clock */
	int64_t step;   /* global step */
};

/* Oldest first: s[0] .. s[n-1]. */
struct tfj_progeta_window {
	struct tfj_progeta_sample s[TFJ_PROGETA_SAMPLES];
	unsigned n;
};

/* Adds a sample of the job's step at operator time now_ms. */
void tfj_progeta_add(struct tfj_progeta_window *w, int64_t now_ms, int64_t step);

/* Steps per second over the window into *out: 0, or TFJ_ENOTFOUND when unknown. */
int tfj_progeta_rate(double *out, const struct tfj_progeta_window *w);

/*
 * Percentage done (0-100, rounded down: 100 only once step reaches total)
 * for a known total (>= 1); TFJ_ENOTFOUND when total < 1.
 */
int tfj_progeta_percent(int *out, int64_t step, int64_t total);

/*
 * Seconds left (rounded up) at `rate` steps per second: 0 once step reaches
 * total. TFJ_ENOTFOUND when total < 1, rate is not positive and finite, or
 * the result is above TFJ_PROGETA_MAX_S.
 */
int tfj_progeta_remaining(int64_t *out, int64_t step, int64_t total, double rate);

#endif
