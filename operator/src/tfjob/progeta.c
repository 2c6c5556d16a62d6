/*
 * progeta.c - progress percentage and ETA (see progeta.h).
 */
#include "tfjob/progeta.h"

#include <math.h>
#include <string.h>

#include <tfj/err.h>

void tfj_progeta_add(struct tfj_progeta_window *w, int64_t now_ms, int64_t step)
{
	unsigned drop = 0;

	if (w->n > 0 && (step < w->s[w->n - 1].step || now_ms < w->s[w->n - 1].ms))
		w->n = 0;
	if (w->n > 0 && step == w->s[w->n - 1].step)
		return;
	if (w->n == TFJ_PROGETA_SAMPLES)
		drop = 1;
	/* Samples older than the window go, but the newest one stays. */
	while (w->n - drop > 1 && w->s[drop].ms < now_ms - TFJ_PROGETA_WINDOW_MS)
		drop++;
	if (drop) {
		memmove(w->s, w->s + drop, (w->n - drop) * sizeof(w->s[0]));
		w->n -= drop;
	}
	w->s[w->n].ms = now_ms;
	w->s[w->n].step = step;
	w->n++;
}

int tfj_progeta_rate(double *out, const struct tfj_progeta_window *w)
{
	int64_t dms, dstep;

	*out = 0;
	if (w->n < 2 || w->n > TFJ_PROGETA_SAMPLES)
		return TFJ_ENOTFOUND;
	dms = w->s[w->n - 1].ms - w->s[0].ms;
	dstep = w->s[w->n - 1].step - w->s[0].step;
	if (dms < TFJ_PROGETA_MIN_SPAN_MS || dstep <= 0)
		return TFJ_ENOTFOUND;
	*out = (double)dstep * 1000.0 / (double)dms;
	return 0;
}

int tfj_progeta_percent(int *out, int64_t step, int64_t total)
{
	double pct;

	*out = 0;
	if (total < 1)
		return TFJ_ENOTFOUND;
	if (step >= total) {
		*out = 100;
		return 0;
	}
	if (step <= 0)
		return 0;
	/* In doubles: step * 100 could overflow int64; 99 at most before the end. */
	pct = floor((double)step * 100.0 / (double)total);
	*out = pct > 99 ? 99 : (int)pct;
	return 0;
}

int tfj_progeta_remaining(int64_t *out, int64_t step, int64_t total, double rate)
{
	double s;

	*out = 0;
	if (total < 1)
		return TFJ_ENOTFOUND;
	if (step >= total)
		return 0;
	if (!isfinite(rate) || rate <= 0)
		return TFJ_ENOTFOUND;
	s = ceil((double)(total - (step < 0 ? 0 : step)) / rate);
	if (!(s <= (double)TFJ_PROGETA_MAX_S))
		return TFJ_ENOTFOUND;
	*out = (int64_t)s;
	return 0;
}
