/*
 * progress_tf.c - Keras and tf.estimator log lines as progress records.
 */
#include "progress_tf.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

/* Bounds that keep (epoch-1)*T + S far from overflowing. */
#define MAX_COUNT 1000000000LL
/* Longest line prefix examined; Keras and estimator lines are far shorter. */
#define SCAN_MAX 2048

/*
 * Copies line into out without ANSI escape sequences (Keras 3 draws its
 * counts bold and its bar in colour: ESC [ ... final byte) and without
 * backspaces; at most SCAN_MAX - 1 bytes.
 */
static void strip_ansi(char *out, const char *line)
{
	size_t n = 0;

	while (*line && n < SCAN_MAX - 1) {
		if (*line == '\x1b') {
			line++;
			if (*line == '[') {
				line++;
				while (*line && !(*line >= '@' && *line <= '~'))
					line++;
			}
			if (*line)
				line++;
			continue;
		}
		if (*line != '\b')
			out[n++] = *line;
		line++;
	}
	out[n] = '\0';
}

static const char *skip_blank(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* A non-negative decimal integer at *p (at most MAX_COUNT); advances *p. */
static int read_count(int64_t *out, const char **p)
{
	const char *s = *p;
	int64_t v = 0;

	if (!isdigit((unsigned char)*s))
		return -1;
	while (isdigit((unsigned char)*s)) {
		v = v * 10 + (*s - '0');
		if (v > MAX_COUNT)
			return -1;
		s++;
	}
	*out = v;
	*p = s;
	return 0;
}

/* A finite number at *p ending at a blank, ',', NUL or the end; advances *p. */
static int read_number(double *out, const char **p)
{
	char *end;
	double v;

	if (!isdigit((unsigned char)**p) && **p != '-' && **p != '.')
		return -1;
	errno = 0;
	v = strtod(*p, &end);
	if (end == *p || errno || !isfinite(v))
		return -1;
	if (*end && *end != ' ' && *end != ',' && *end != '\t' && *end != '(')
		return -1;
	*out = v;
	*p = end;
	return 0;
}

static int is_accuracy_name(const char *name, size_t n)
{
	static const char *const names[] = { "accuracy", "acc", "sparse_categorical_accuracy",
					     "categorical_accuracy", "binary_accuracy" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == n && !memcmp(names[i], name, n))
			return 1;
	return 0;
}

/* Keeps a numeric item as a named metric, while there is room. */
static void add_named(struct tfj_progress_metrics *named, const char *name, size_t n, double v)
{
	if (named->n >= TFJ_PROGREC_METRICS_MAX || n >= TFJ_PROGREC_METRIC_NAME)
		return;
	memcpy(named->m[named->n].name, name, n);
	named->m[named->n].name[n] = '\0';
	named->m[named->n].value = v;
	named->n++;
}

static int is_step_name(const char *name, size_t n)
{
	return (n == 4 && !memcmp(name, "step", 4)) || (n == 11 && !memcmp(name, "global_step", 11));
}

/*
 * Finds `name<sep>value` items anywhere in s: a name is a run of
 * [A-Za-z0-9_/] preceded by start, blank, ',' or '-'. Fills loss, accuracy
 * and (when want_step) step / global_step; every other numeric item but the
 * step goes to *named.
 */
static void read_items(struct tfj_progrec *out, struct tfj_progress_metrics *named, const char *s,
		       const char *sep, int want_step)
{
	size_t seplen = strlen(sep);
	const char *p = s;

	while ((p = strstr(p, sep)) != NULL) {
		const char *end = p, *name = p, *v = p + seplen;
		size_t n;
		double d;
		int64_t i;

		while (name > s && (isalnum((unsigned char)name[-1]) || name[-1] == '_'))
			name--;
		n = (size_t)(end - name);
		p += seplen;
		if (n == 0 || (name > s && name[-1] != ' ' && name[-1] != ',' && name[-1] != '-' &&
			       name[-1] != '\t' && name[-1] != ':'))
			continue;
		if (!is_step_name(name, n)) {
			const char *nv = v;

			if (read_number(&d, &nv) == 0)
				add_named(named, name, n, d);
		}
		if (n == 4 && !memcmp(name, "loss", 4)) {
			if (read_number(&d, &v) == 0) {
				out->loss = d;
				out->have |= TFJ_PROGREC_BIT(TFJ_PROGREC_LOSS);
			}
		} else if (is_accuracy_name(name, n)) {
			if (read_number(&d, &v) == 0 && d >= 0 && d <= 1) {
				out->accuracy = d;
				out->have |= TFJ_PROGREC_BIT(TFJ_PROGREC_ACCURACY);
			}
		} else if (want_step && is_step_name(name, n)) {
			if (read_count(&i, &v) == 0 && (!*v || !isdigit((unsigned char)*v))) {
				out->step = i;
				out->have |= TFJ_PROGREC_BIT(TFJ_PROGREC_STEP);
			}
		}
	}
}

/* "Epoch E/N" alone on its line (Keras prints it before each epoch). */
static int parse_epoch(struct tfj_progress_tf *st, const char *p)
{
	int64_t e, n;

	if (strncmp(p, "Epoch ", 6))
		return -1;
	p += 6;
	if (read_count(&e, &p) || *p++ != '/' || read_count(&n, &p) || e < 1 || e > n)
		return -1;
	if (*skip_blank(p))
		return -1;
	st->epoch = e;
	st->epochs = n;
	st->per_epoch = 0;
	return 0;
}

/*
 * The training length from a Keras line of epoch st->epoch: N epochs of T
 * steps. Only the epoch's first progress line fixes T; a line with another
 * T is not fit's (model.evaluate or predict draws its own bar, with no
 * Epoch line before it), so it gives no total rather than a wrong one.
 */
static void keras_total(struct tfj_progrec *out, struct tfj_progress_tf *st, int64_t t)
{
	if (st->epoch < 1 || st->epochs < 1)
		return;
	if (st->per_epoch == 0)
		st->per_epoch = t;
	if (st->per_epoch != t || st->epochs > MAX_COUNT / t)
		return;
	out->total_steps = st->epochs * t;
	out->have |= TFJ_PROGREC_BIT(TFJ_PROGREC_TOTAL);
}

/* "S/T" + a bar or " - " items: a Keras progress line. */
static int parse_keras(struct tfj_progrec *out, struct tfj_progress_tf *st, const char *p)
{
	int64_t s, t;

	if (read_count(&s, &p) || *p++ != '/' || read_count(&t, &p) || t < 1 || s > t ||
	    *p != ' ')
		return -1;
	/* The rest must look like Keras: " - name: value" items. */
	if (!strstr(p, " - ") || !strstr(p, ": "))
		return -1;
	read_items(out, &st->named, p, ": ", 0);
	if (!(out->have & (TFJ_PROGREC_BIT(TFJ_PROGREC_LOSS) |
			   TFJ_PROGREC_BIT(TFJ_PROGREC_ACCURACY))))
		return -1;
	out->step = st->epoch > 0 ? (st->epoch - 1) * t + s : s;
	out->have |= TFJ_PROGREC_BIT(TFJ_PROGREC_STEP);
	keras_total(out, st, t);
	return 0;
}

int tfj_progress_tf_parse(struct tfj_progrec *out, struct tfj_progress_tf *st, const char *line)
{
	char buf[SCAN_MAX];
	const char *p;

	strip_ansi(buf, line);
	p = skip_blank(buf);

	memset(out, 0, sizeof(*out));
	st->named.n = 0;
	if (parse_epoch(st, p) == 0)
		return TFJ_ENOTFOUND;
	if (isdigit((unsigned char)*p)) {
		if (parse_keras(out, st, p) == 0)
			return 0;
		memset(out, 0, sizeof(*out));
		st->named.n = 0;
	}
	/* tf.estimator: "loss = X, step = N" or an evaluation's "accuracy = X, ...". */
	if (strstr(p, "loss = ") || strstr(p, "accuracy = ")) {
		read_items(out, &st->named, p, " = ", 1);
		if (out->have)
			return 0;
	}
	memset(out, 0, sizeof(*out));
	st->named.n = 0;
	return TFJ_ENOTFOUND;
}
