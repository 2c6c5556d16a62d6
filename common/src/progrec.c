/*
 * progrec.c - the progress record's writer and reader (see progrec.h).
 */
#include "tfj/progrec.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tfj/err.h"
#include "tfj/json.h"

/* --- writer ---------------------------------------------------------------- */

/*
 * Appends all of the formatted text or nothing, like a tfj_buf with a
 * maximum: a field that does not fit is dropped whole, never cut, so what
 * was written stays valid JSON up to the last complete field.
 */
__attribute__((format(printf, 2, 3)))
static int put(struct tfj_progrec_writer *w, const char *fmt, ...)
{
	size_t room = w->max - w->len;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(w->buf + w->len, room + 1, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n > room) {
		w->buf[w->len] = '\0';
		return TFJ_ETOOBIG;
	}
	w->len += (size_t)n;
	return 0;
}

void tfj_progrec_begin(struct tfj_progrec_writer *w, char *buf, size_t size, const char *role,
		       int index)
{
	w->buf = buf;
	w->len = 0;
	w->max = 0;
	if (size == 0)
		return;
	w->max = size - 1 < TFJ_PROGREC_MAX ? size - 1 : TFJ_PROGREC_MAX;
	buf[0] = '\0';
	/* When even this does not fit, len stays 0 and the fields are skipped. */
	put(w, TFJ_PROGREC_PREFIX "{\"" TFJ_PROGREC_KEY_ROLE "\":\"%s\",\"" TFJ_PROGREC_KEY_INDEX
	    "\":%d", role, index);
}

void tfj_progrec_int(struct tfj_progrec_writer *w, const char *key, int64_t v)
{
	if (w->len > 0)
		put(w, ",\"%s\":%" PRId64, key, v);
}

void tfj_progrec_num(struct tfj_progrec_writer *w, const char *key, double v)
{
	if (w->len == 0)
		return;
	if (isfinite(v))
		put(w, ",\"%s\":%.6g", key, v);
	else
		put(w, ",\"%s\":null", key);
}

void tfj_progrec_bool(struct tfj_progrec_writer *w, const char *key, int v)
{
	if (w->len > 0)
		put(w, ",\"%s\":%s", key, v ? "true" : "false");
}

size_t tfj_progrec_end(struct tfj_progrec_writer *w)
{
	if (w->max == 0)
		return 0;
	/* A record that hit the cap is still one complete line: say so instead. */
	if (w->len == 0 || put(w, "}\n") != 0) {
		w->len = 0;
		w->buf[0] = '\0';
		if (put(w, TFJ_PROGREC_PREFIX "{\"" TFJ_PROGREC_KEY_ERROR "\":\"record too long\"}\n") != 0)
			return 0;
	}
	return w->len;
}

/* --- reader ---------------------------------------------------------------- */

static const char *const field_names[TFJ_PROGREC_NFIELDS] = {
	TFJ_PROGREC_KEY_STEP, TFJ_PROGREC_KEY_LOSS, TFJ_PROGREC_KEY_ACCURACY,
	TFJ_PROGREC_KEY_EXAMPLES_PER_SEC, TFJ_PROGREC_KEY_MAX_STEPS
};

const char *tfj_progrec_field_name(enum tfj_progrec_field f)
{
	if ((int)f < 0 || f >= TFJ_PROGREC_NFIELDS)
		return NULL;
	return field_names[f];
}

/* 1 when obj has `key` with a value other than null. */
static int present(const cJSON *obj, const char *key)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);

	return item && !cJSON_IsNull(item);
}

/*
 * Reads an optional integer >= min under the first of two keys present:
 * the step (>= 0) and the training length (>= 1: "no steps to run" would
 * make every percentage 100).
 */
static int opt_int(struct tfj_progrec *p, enum tfj_progrec_field f, int64_t *dst, int64_t min,
		   const cJSON *obj, const char *key, const char *alias)
{
	const char *keys[2] = { key, alias };
	int i, rc;

	for (i = 0; i < 2; i++) {
		if (!present(obj, keys[i]))
			continue;
		rc = tfj_json_get_int64(dst, obj, keys[i], min, TFJ_JSON_INT_MAX);
		if (rc < 0)
			return rc;
		p->have |= TFJ_PROGREC_BIT(f);
		return 0;
	}
	return 0;
}

/* Reads an optional finite number under the first of two keys present. */
static int opt_number(struct tfj_progrec *p, enum tfj_progrec_field f, double *dst,
		      const cJSON *obj, const char *key, const char *alias)
{
	const char *keys[2] = { key, alias };
	int i, rc;

	for (i = 0; i < 2; i++) {
		double v;

		if (!keys[i] || !present(obj, keys[i]))
			continue;
		rc = tfj_json_get_number(&v, obj, keys[i]);
		if (rc < 0)
			return rc;
		if (!isfinite(v))
			return tfj_err_set(TFJ_ERANGE, "progress: '%s' is not finite", keys[i]);
		*dst = v;
		p->have |= TFJ_PROGREC_BIT(f);
		return 0;
	}
	return 0;
}

int tfj_progrec_parse(struct tfj_progrec *out, const char *line, size_t len)
{
	const size_t plen = sizeof(TFJ_PROGREC_PREFIX) - 1;
	struct tfj_progrec p;
	cJSON *root = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (len < plen || memcmp(line, TFJ_PROGREC_PREFIX, plen) != 0)
		return TFJ_ENOTFOUND;
	line += plen;
	len -= plen;
	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	memset(&p, 0, sizeof(p));
	rc = tfj_json_parse(&root, line, len, len);
	if (rc < 0)
		return tfj_err_set(rc, "progress record: %s", tfj_err_detail());
	if (!cJSON_IsObject(root)) {
		rc = tfj_err_set(TFJ_ETYPE, "progress record: not a JSON object");
		goto out;
	}
	if ((rc = opt_int(&p, TFJ_PROGREC_STEP, &p.step, 0, root, TFJ_PROGREC_KEY_STEP,
			  TFJ_PROGREC_KEY_GLOBAL_STEP)) < 0 ||
	    (rc = opt_int(&p, TFJ_PROGREC_TOTAL, &p.total_steps, 1, root,
			  TFJ_PROGREC_KEY_MAX_STEPS, TFJ_PROGREC_KEY_TOTAL_STEPS)) < 0 ||
	    (rc = opt_number(&p, TFJ_PROGREC_LOSS, &p.loss, root, TFJ_PROGREC_KEY_LOSS, NULL)) < 0 ||
	    (rc = opt_number(&p, TFJ_PROGREC_ACCURACY, &p.accuracy, root, TFJ_PROGREC_KEY_ACCURACY,
			     TFJ_PROGREC_KEY_TEST_ACCURACY)) < 0 ||
	    (rc = opt_number(&p, TFJ_PROGREC_EPS, &p.examples_per_sec, root,
			     TFJ_PROGREC_KEY_EXAMPLES_PER_SEC,
			     TFJ_PROGREC_KEY_EXAMPLES_PER_SECOND)) < 0)
		goto out;
	if (p.have == 0) {
		rc = tfj_err_set(TFJ_EPARSE, "progress record: no known field");
		goto out;
	}
	*out = p;
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}
