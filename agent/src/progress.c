/*
 * progress.c - progress records, the progress regex and line framing
 * (see progress.h).
 */
#include "progress.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tfj/clock.h>
#include <tfj/err.h>
#include <tfj/json.h>

static const char *const field_names[TFJ_PF_COUNT] = {
	"step", "loss", "accuracy", "examples_per_sec"
};

const char *tfj_progress_field_name(enum tfj_progress_field f)
{
	if ((int)f < 0 || f >= TFJ_PF_COUNT)
		return NULL;
	return field_names[f];
}

int tfj_progress_field_parse(enum tfj_progress_field *out, const char *name)
{
	int i;

	for (i = 0; i < TFJ_PF_COUNT; i++) {
		if (strcmp(name, field_names[i]) == 0) {
			*out = (enum tfj_progress_field)i;
			return 0;
		}
	}
	if (strcmp(name, "global_step") == 0) {
		*out = TFJ_PF_STEP;
		return 0;
	}
	if (strcmp(name, "eps") == 0 || strcmp(name, "examples_per_second") == 0) {
		*out = TFJ_PF_EPS;
		return 0;
	}
	return tfj_err_set(TFJ_EINVAL, "unknown progress field '%s' (step, loss, accuracy, "
			   "examples_per_sec)", name);
}

/* Reads an optional finite number under any of two keys. */
static int opt_number(struct tfj_progress *p, enum tfj_progress_field f, double *dst,
		      const cJSON *obj, const char *key, const char *alias)
{
	const char *keys[2] = { key, alias };
	int i, rc;

	for (i = 0; i < 2; i++) {
		const cJSON *item;
		double v;

		if (!keys[i])
			continue;
		item = cJSON_GetObjectItemCaseSensitive(obj, keys[i]);
		if (!item || cJSON_IsNull(item))
			continue;
		rc = tfj_json_get_number(&v, obj, keys[i]);
		if (rc < 0)
			return rc;
		if (!isfinite(v))
			return tfj_err_set(TFJ_ERANGE, "progress: '%s' is not finite", keys[i]);
		*dst = v;
		p->have |= TFJ_PF_BIT(f);
		return 0;
	}
	return 0;
}

int tfj_progress_parse_record(struct tfj_progress *out, const char *line, size_t len)
{
	const size_t plen = sizeof(TFJ_PROGRESS_PREFIX) - 1;
	struct tfj_progress p;
	cJSON *root = NULL;
	int rc, i;

	memset(out, 0, sizeof(*out));
	if (len < plen || memcmp(line, TFJ_PROGRESS_PREFIX, plen) != 0)
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
	{
		static const char *const step_keys[2] = { "step", "global_step" };
		for (i = 0; i < 2; i++) {
			const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, step_keys[i]);
			if (!item || cJSON_IsNull(item))
				continue;
			rc = tfj_json_get_int64(&p.step, root, step_keys[i], 0, TFJ_JSON_INT_MAX);
			if (rc < 0)
				goto out;
			p.have |= TFJ_PF_BIT(TFJ_PF_STEP);
			break;
		}
	}
	if ((rc = opt_number(&p, TFJ_PF_LOSS, &p.loss, root, "loss", NULL)) < 0 ||
	    (rc = opt_number(&p, TFJ_PF_ACCURACY, &p.accuracy, root, "accuracy", "test_accuracy")) < 0 ||
	    (rc = opt_number(&p, TFJ_PF_EPS, &p.examples_per_sec, root, "examples_per_sec",
			     "examples_per_second")) < 0)
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

/* --- regex ---------------------------------------------------------------- */

static int put(char *out, size_t cap, size_t *n, const char *s)
{
	size_t l = strlen(s);

	if (l >= cap - *n)
		return tfj_err_set(TFJ_ETOOBIG, "progress regex: pattern too long");
	memcpy(out + *n, s, l);
	*n += l;
	out[*n] = '\0';
	return 0;
}

static int putc_(char *out, size_t cap, size_t *n, char c)
{
	char s[2] = { c, '\0' };

	return put(out, cap, n, s);
}

static const char *perl_class(char c)
{
	switch (c) {
	case 'd': return "[0-9]";
	case 'D': return "[^0-9]";
	case 's': return "[[:space:]]";
	case 'S': return "[^[:space:]]";
	case 'w': return "[[:alnum:]_]";
	case 'W': return "[^[:alnum:]_]";
	default: return NULL;
	}
}

/*
 * Copies a bracket expression starting at p[0] == '[' verbatim, so that
 * '(' and '\' inside it are not taken for groups or escapes. Returns the
 * index after the closing ']'.
 */
static int copy_bracket(char *out, size_t cap, size_t *n, const char *p, size_t *i)
{
	size_t j = *i + 1;
	int rc;

	if (p[j] == '^')
		j++;
	if (p[j] == ']')
		j++; /* a leading ']' is a literal */
	while (p[j] && p[j] != ']') {
		if (p[j] == '[' && (p[j + 1] == ':' || p[j + 1] == '.' || p[j + 1] == '=')) {
			char kind = p[j + 1];
			const char *end;
			char close[3] = { kind, ']', '\0' };

			end = strstr(p + j + 2, close);
			if (!end)
				return tfj_err_set(TFJ_EINVAL, "progress regex: unterminated [%c", kind);
			j = (size_t)(end - p) + 2;
			continue;
		}
		j++;
	}
	if (p[j] != ']')
		return tfj_err_set(TFJ_EINVAL, "progress regex: unterminated bracket expression");
	j++;
	{
		char tmp[TFJ_PROGRESS_REGEX_MAX + 1];
		size_t l = j - *i;

		memcpy(tmp, p + *i, l);
		tmp[l] = '\0';
		if ((rc = put(out, cap, n, tmp)) < 0)
			return rc;
	}
	*i = j;
	return 0;
}

int tfj_progress_regex_compile(struct tfj_progress_regex *re, const char *pattern)
{
	/* Each input byte expands to at most 13 bytes ("[^[:alnum:]_]"). */
	char out[TFJ_PROGRESS_REGEX_MAX * 13 + 1];
	size_t n = 0, i = 0, plen;
	int groups = 0, rc;

	memset(re, 0, sizeof(*re));
	out[0] = '\0';
	plen = strlen(pattern);
	if (plen == 0)
		return tfj_err_set(TFJ_EINVAL, "progress regex: empty pattern");
	if (plen > TFJ_PROGRESS_REGEX_MAX)
		return tfj_err_set(TFJ_ETOOBIG, "progress regex: longer than %u bytes",
				   TFJ_PROGRESS_REGEX_MAX);
	while (i < plen) {
		char c = pattern[i];

		if (c == '\\') {
			const char *cls;

			if (i + 1 >= plen)
				return tfj_err_set(TFJ_EINVAL, "progress regex: trailing backslash");
			cls = perl_class(pattern[i + 1]);
			if (cls) {
				rc = put(out, sizeof(out), &n, cls);
			} else {
				rc = putc_(out, sizeof(out), &n, '\\');
				if (rc == 0)
					rc = putc_(out, sizeof(out), &n, pattern[i + 1]);
			}
			if (rc < 0)
				return rc;
			i += 2;
		} else if (c == '[') {
			if ((rc = copy_bracket(out, sizeof(out), &n, pattern, &i)) < 0)
				return rc;
		} else if (c == '(') {
			groups++;
			if ((rc = putc_(out, sizeof(out), &n, '(')) < 0)
				return rc;
			i++;
			if (pattern[i] == '?' && pattern[i + 1] == '<') {
				/* (?<name>...): a named group; POSIX sees a plain group. */
				char name[32];
				size_t k = 0;
				enum tfj_progress_field f;

				i += 2;
				while (pattern[i] && pattern[i] != '>') {
					if (k + 1 >= sizeof(name))
						return tfj_err_set(TFJ_EINVAL, "progress regex: group name too long");
					name[k++] = pattern[i++];
				}
				name[k] = '\0';
				if (pattern[i] != '>')
					return tfj_err_set(TFJ_EINVAL, "progress regex: unterminated (?<name>");
				i++;
				if ((rc = tfj_progress_field_parse(&f, name)) < 0)
					return tfj_err_set(rc, "progress regex: %s", tfj_err_detail());
				if (re->group[f])
					return tfj_err_set(TFJ_EINVAL, "progress regex: field '%s' named twice", name);
				re->group[f] = groups;
			} else if (pattern[i] == '?') {
				return tfj_err_set(TFJ_EINVAL, "progress regex: only (?<name>...) group "
						   "extensions are supported");
			}
		} else {
			if ((rc = putc_(out, sizeof(out), &n, c)) < 0)
				return rc;
			i++;
		}
	}
	rc = regcomp(&re->re, out, REG_EXTENDED);
	if (rc != 0) {
		char msg[128];

		regerror(rc, &re->re, msg, sizeof(msg));
		memset(re, 0, sizeof(*re));
		return tfj_err_set(TFJ_EINVAL, "progress regex: %s", msg);
	}
	re->compiled = 1;
	re->nsub = re->re.re_nsub;
	return 0;
}

int tfj_progress_regex_map(struct tfj_progress_regex *re, enum tfj_progress_field f, int group)
{
	if ((int)f < 0 || f >= TFJ_PF_COUNT)
		return tfj_err_set(TFJ_EINVAL, "progress regex: bad field");
	if (group < 1 || (size_t)group > re->nsub)
		return tfj_err_set(TFJ_ERANGE, "progress regex: group %d does not exist (pattern has %zu)",
				   group, re->nsub);
	re->group[f] = group;
	return 0;
}

int tfj_progress_regex_map_spec(struct tfj_progress_regex *re, const char *spec)
{
	char name[32];
	const char *eq = strchr(spec, '=');
	enum tfj_progress_field f;
	char *end;
	long g;
	int rc;

	if (!eq || (size_t)(eq - spec) >= sizeof(name) || eq == spec)
		return tfj_err_set(TFJ_EINVAL, "progress field '%s': expected FIELD=GROUP", spec);
	memcpy(name, spec, (size_t)(eq - spec));
	name[eq - spec] = '\0';
	if ((rc = tfj_progress_field_parse(&f, name)) < 0)
		return rc;
	errno = 0;
	g = strtol(eq + 1, &end, 10);
	if (errno || end == eq + 1 || *end || g < 1 || g > 99)
		return tfj_err_set(TFJ_EINVAL, "progress field '%s': group must be 1-99", spec);
	return tfj_progress_regex_map(re, f, (int)g);
}

int tfj_progress_regex_check(const struct tfj_progress_regex *re)
{
	int i, any = 0;

	if (!re->compiled)
		return tfj_err_set(TFJ_EINVAL, "progress regex: not compiled");
	for (i = 0; i < TFJ_PF_COUNT; i++) {
		if (re->group[i] && (size_t)re->group[i] > re->nsub)
			return tfj_err_set(TFJ_ERANGE, "progress regex: field '%s' maps to missing group %d",
					   field_names[i], re->group[i]);
		if (re->group[i])
			any = 1;
	}
	if (!any)
		return tfj_err_set(TFJ_EINVAL, "progress regex: no field mapped (use (?<step>...) "
				   "or --progress-field step=N)");
	return 0;
}

/* Parses a whole substring as a number; 0 on success. */
static int sub_number(double *d, int64_t *i64, int integer, const char *s, size_t len)
{
	char tmp[64];
	char *end;

	if (len == 0 || len >= sizeof(tmp))
		return -1;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	errno = 0;
	if (integer) {
		long long v = strtoll(tmp, &end, 10);
		if (errno || *end || v < 0)
			return -1;
		*i64 = v;
		return 0;
	}
	*d = strtod(tmp, &end);
	if (errno || *end || !isfinite(*d))
		return -1;
	return 0;
}

#define TFJ_PROGRESS_MAX_GROUPS 64

int tfj_progress_regex_match(struct tfj_progress *out, const struct tfj_progress_regex *re,
			     const char *line)
{
	regmatch_t m[TFJ_PROGRESS_MAX_GROUPS];
	size_t nm;
	int f;

	memset(out, 0, sizeof(*out));
	if (!re->compiled)
		return TFJ_ENOTFOUND;
	nm = re->nsub + 1 < TFJ_PROGRESS_MAX_GROUPS ? re->nsub + 1 : TFJ_PROGRESS_MAX_GROUPS;
	if (regexec(&re->re, line, nm, m, 0) != 0)
		return TFJ_ENOTFOUND;
	for (f = 0; f < TFJ_PF_COUNT; f++) {
		int g = re->group[f];
		const char *s;
		size_t l;

		if (g <= 0 || (size_t)g >= nm || m[g].rm_so < 0)
			continue;
		s = line + m[g].rm_so;
		l = (size_t)(m[g].rm_eo - m[g].rm_so);
		switch (f) {
		case TFJ_PF_STEP:
			if (sub_number(NULL, &out->step, 1, s, l) == 0)
				out->have |= TFJ_PF_BIT(f);
			break;
		case TFJ_PF_LOSS:
			if (sub_number(&out->loss, NULL, 0, s, l) == 0)
				out->have |= TFJ_PF_BIT(f);
			break;
		case TFJ_PF_ACCURACY:
			if (sub_number(&out->accuracy, NULL, 0, s, l) == 0)
				out->have |= TFJ_PF_BIT(f);
			break;
		case TFJ_PF_EPS:
			if (sub_number(&out->examples_per_sec, NULL, 0, s, l) == 0)
				out->have |= TFJ_PF_BIT(f);
			break;
		}
	}
	return out->have ? 0 : TFJ_ENOTFOUND;
}

void tfj_progress_regex_free(struct tfj_progress_regex *re)
{
	if (!re)
		return;
	if (re->compiled)
		regfree(&re->re);
	memset(re, 0, sizeof(*re));
}

void tfj_progress_merge(struct tfj_progress *state, const struct tfj_progress *upd)
{
	if (upd->have & TFJ_PF_BIT(TFJ_PF_STEP))
		state->step = upd->step;
	if (upd->have & TFJ_PF_BIT(TFJ_PF_LOSS))
		state->loss = upd->loss;
	if (upd->have & TFJ_PF_BIT(TFJ_PF_ACCURACY))
		state->accuracy = upd->accuracy;
	if (upd->have & TFJ_PF_BIT(TFJ_PF_EPS))
		state->examples_per_sec = upd->examples_per_sec;
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
	struct tfj_progress upd;
	int rc;

	line[len] = '\0';
	if (len > 0 && line[len - 1] == '\r')
		line[--len] = '\0';
	t->lines++;
	if (s == TFJ_STREAM_STDOUT) {
		rc = tfj_progress_parse_record(&upd, line, len);
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
	return 0;
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
		const char *nl = memchr(data, '\n', len);
		size_t chunk = nl ? (size_t)(nl - data) : len;

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
