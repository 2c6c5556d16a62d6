/*
 * progress.c - progress tracking and line framing (see progress.h); records
 * are parsed by common's progrec.c, the regular expression for foreign
 * commands is in progress_regex.c.
 */
#include "progress.h"
#include "progress_regex.h"
#include "progress_tf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tfj/clock.h>
#include <tfj/err.h>

int tfj_progress_field_parse(enum tfj_progrec_field *out, const char *name)
{
	int i;

	for (i = 0; i < TFJ_PROGREC_NFIELDS; i++) {
		if (strcmp(name, tfj_progrec_field_name((enum tfj_progrec_field)i)) == 0) {
			*out = (enum tfj_progrec_field)i;
			return 0;
		}
	}
	if (strcmp(name, "global_step") == 0) {
		*out = TFJ_PROGREC_STEP;
		return 0;
	}
	if (strcmp(name, "eps") == 0 || strcmp(name, "examples_per_second") == 0) {
		*out = TFJ_PROGREC_EPS;
		return 0;
	}
	if (strcmp(name, "total_steps") == 0) {
		*out = TFJ_PROGREC_TOTAL;
		return 0;
	}
	return tfj_err_set(TFJ_EINVAL, "unknown progress field '%s' (step, loss, accuracy, "
			   "examples_per_sec, max_steps)", name);
}

void tfj_progress_merge(struct tfj_progress_state *state, const struct tfj_progrec *upd)
{
	if (upd->have & TFJ_PROGREC_BIT(TFJ_PROGREC_STEP))
		state->step = upd->step;
	if (upd->have & TFJ_PROGREC_BIT(TFJ_PROGREC_LOSS))
		state->loss = upd->loss;
	if (upd->have & TFJ_PROGREC_BIT(TFJ_PROGREC_ACCURACY))
		state->accuracy = upd->accuracy;
	if (upd->have & TFJ_PROGREC_BIT(TFJ_PROGREC_EPS))
		state->examples_per_sec = upd->examples_per_sec;
	if (upd->have & TFJ_PROGREC_BIT(TFJ_PROGREC_TOTAL))
		state->total_steps = upd->total_steps;
	state->have |= upd->have;
	state->unix_time_ms = tfj_clock_unix_ms();
	state->records++;
}

/* --- tracker -------------------------------------------------------------- */

int tfj_progress_tracker_init(struct tfj_progress_tracker *t, size_t line_max,
			      const struct tfj_progress_regex *regex)
{
	int i;

	memset(t, 0, sizeof(*t));
	if (line_max < TFJ_PROGRESS_LINE_MIN || line_max > TFJ_PROGRESS_LINE_MAX)
		return tfj_err_set(TFJ_ERANGE, "line cap %zu outside [%u, %u]", line_max,
				   TFJ_PROGRESS_LINE_MIN, TFJ_PROGRESS_LINE_MAX);
	t->line_max = line_max;
	t->regex = regex;
	for (i = 0; i < 2; i++) {
		/* One byte more for the terminator regexec needs. */
		t->fr[i].buf = malloc(line_max + 1);
		if (!t->fr[i].buf) {
			tfj_progress_tracker_free(t);
			return tfj_err_set(TFJ_ENOMEM, "line buffer");
		}
	}
	return 0;
}

static int handle_line(struct tfj_progress_tracker *t, enum tfj_progress_stream s,
		       char *line, size_t len)
{
	struct tfj_progrec upd;
	int rc;

	line[len] = '\0';
	if (len > 0 && line[len - 1] == '\r')
		line[--len] = '\0';
	t->lines++;
	if (s == TFJ_STREAM_STDOUT) {
		rc = tfj_progrec_parse(&upd, line, len);
		if (rc == 0) {
			tfj_progress_merge(&t->state, &upd);
			return 1;
		}
		if (rc != TFJ_ENOTFOUND) {
			t->bad_records++;
			return 0;
		}
	}
	/* A line with a NUL byte would be cut short by regexec; skip it. */
	if (t->regex && memchr(line, '\0', len) == NULL &&
	    tfj_progress_regex_match(&upd, t->regex, line) == 0) {
		tfj_progress_merge(&t->state, &upd);
		return 1;
	}
	/* TensorFlow's and Keras' own lines (progress_tf.h). */
	if (memchr(line, '\0', len) == NULL && tfj_progress_tf_parse(&upd, &t->tf, line) == 0) {
		if (t->tf.named.n)
			t->state.named = t->tf.named;
		tfj_progress_merge(&t->state, &upd);
		return 1;
	}
	return 0;
}

/*
 * The end of the next line: '\n' or '\r'. Keras redraws its progress bar
 * with '\r' on a terminal, so an epoch would otherwise be one line, parsed
 * only when it ends. The '\n' of a "\r\n" is swallowed by the framer
 * (after_cr), however the two bytes are split between reads.
 */
static const char *line_end(const char *data, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (data[i] == '\n' || data[i] == '\r')
			return data + i;
	return NULL;
}

static void tail_append(struct tfj_progress_tracker *t, const char *data, size_t len)
{
	if (len >= TFJ_PROGRESS_TAIL) {
		memcpy(t->tail, data + len - TFJ_PROGRESS_TAIL, TFJ_PROGRESS_TAIL);
		t->tail_len = TFJ_PROGRESS_TAIL;
		return;
	}
	if (len > TFJ_PROGRESS_TAIL - t->tail_len) {
		size_t drop = len - (TFJ_PROGRESS_TAIL - t->tail_len);
		memmove(t->tail, t->tail + drop, t->tail_len - drop);
		t->tail_len -= drop;
	}
	memcpy(t->tail + t->tail_len, data, len);
	t->tail_len += len;
}

int tfj_progress_tracker_feed(struct tfj_progress_tracker *t, enum tfj_progress_stream s,
			      const char *data, size_t len)
{
	struct tfj_progress_framer *fr = &t->fr[s == TFJ_STREAM_STDERR ? 1 : 0];
	int changed = 0;

	if (s == TFJ_STREAM_STDERR)
		tail_append(t, data, len);
	while (len > 0) {
		const char *nl;
		size_t chunk;

		if (fr->after_cr && *data == '\n') {
			fr->after_cr = 0;
			data++;
			len--;
			continue;
		}
		fr->after_cr = 0;
		nl = line_end(data, len);
		chunk = nl ? (size_t)(nl - data) : len;

		if (fr->skipping) {
			/* Inside an over-long line: drop bytes up to its end. */
		} else if (chunk > t->line_max - fr->len) {
			fr->skipping = 1;
			fr->len = 0;
		} else {
			memcpy(fr->buf + fr->len, data, chunk);
			fr->len += chunk;
		}
		if (!nl)
			break;
		if (fr->skipping) {
			t->long_lines++;
			fr->skipping = 0;
		} else {
			changed |= handle_line(t, s, fr->buf, fr->len);
		}
		fr->len = 0;
		fr->after_cr = *nl == '\r';
		data = nl + 1;
		len -= chunk + 1;
	}
	return changed;
}

int tfj_progress_tracker_flush(struct tfj_progress_tracker *t)
{
	int i, changed = 0;

	for (i = 0; i < 2; i++) {
		struct tfj_progress_framer *fr = &t->fr[i];

		if (fr->skipping) {
			t->long_lines++;
		} else if (fr->len > 0 && fr->buf) {
			changed |= handle_line(t, i ? TFJ_STREAM_STDERR : TFJ_STREAM_STDOUT,
					       fr->buf, fr->len);
		}
		fr->len = 0;
		fr->skipping = 0;
	}
	return changed;
}

size_t tfj_progress_tracker_tail(const struct tfj_progress_tracker *t, char *out, size_t outlen)
{
	const char *p = t->tail;
	size_t len = t->tail_len;

	if (outlen == 0)
		return 0;
	/* When the tail was cut, its first line is partial: start after it. */
	if (len == TFJ_PROGRESS_TAIL) {
		const char *nl = memchr(p, '\n', len);
		if (nl && (size_t)(nl - p) + 1 < len) {
			len -= (size_t)(nl - p) + 1;
			p = nl + 1;
		}
	}
	while (len > 0 && (p[len - 1] == '\n' || p[len - 1] == '\r' || p[len - 1] == ' ' ||
			   p[len - 1] == '\t'))
		len--;
	if (len > outlen - 1) {
		p += len - (outlen - 1);
		len = outlen - 1;
	}
	memcpy(out, p, len);
	out[len] = '\0';
	return len;
}

void tfj_progress_tracker_free(struct tfj_progress_tracker *t)
{
	int i;

	if (!t)
		return;
	for (i = 0; i < 2; i++) {
		free(t->fr[i].buf);
		t->fr[i].buf = NULL;
	}
}
