/*
 * progress_regex.c - progress from a foreign command's output through a
 * POSIX regular expression with named groups (see progress_regex.h).
 */
#include "progress_regex.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

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
				enum tfj_progrec_field f;

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

int tfj_progress_regex_map(struct tfj_progress_regex *re, enum tfj_progrec_field f, int group)
{
	if ((int)f < 0 || f >= TFJ_PROGREC_NFIELDS)
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
	enum tfj_progrec_field f;
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
	for (i = 0; i < TFJ_PROGREC_NFIELDS; i++) {
		if (re->group[i] && (size_t)re->group[i] > re->nsub)
			return tfj_err_set(TFJ_ERANGE, "progress regex: field '%s' maps to missing group %d",
					   tfj_progrec_field_name((enum tfj_progrec_field)i), re->group[i]);
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

/* Where a number field goes in a record; NULL for the integer fields. */
static double *number_field(struct tfj_progrec *r, int f)
{
	switch (f) {
	case TFJ_PROGREC_LOSS:
		return &r->loss;
	case TFJ_PROGREC_ACCURACY:
		return &r->accuracy;
	case TFJ_PROGREC_EPS:
		return &r->examples_per_sec;
	default:
		return NULL;
	}
}

/* Where an integer field goes in a record; NULL for a number field. */
static int64_t *int_field(struct tfj_progrec *r, int f)
{
	if (f == TFJ_PROGREC_STEP)
		return &r->step;
	if (f == TFJ_PROGREC_TOTAL)
		return &r->total_steps;
	return NULL;
}

#define TFJ_PROGRESS_MAX_GROUPS 64

int tfj_progress_regex_match(struct tfj_progrec *out, const struct tfj_progress_regex *re,
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
	for (f = 0; f < TFJ_PROGREC_NFIELDS; f++) {
		int g = re->group[f];
		const char *s;
		size_t l;

		if (g <= 0 || (size_t)g >= nm || m[g].rm_so < 0)
			continue;
		s = line + m[g].rm_so;
		l = (size_t)(m[g].rm_eo - m[g].rm_so);
		/* The step and the total are integers, every other field a number. */
		if (sub_number(number_field(out, f), int_field(out, f), int_field(out, f) != NULL,
			       s, l) == 0 &&
		    (f != TFJ_PROGREC_TOTAL || out->total_steps > 0))
			out->have |= TFJ_PROGREC_BIT(f);
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
