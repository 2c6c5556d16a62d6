/*
 * jscan.c - the bounded JSON scanner. Every loop advances through the
 * input and stops at its end; depth is a counter, never the C stack.
 */
#include "kube/jscan.h"

#include <string.h>

#include <tfj/err.h>
#include <tfj/json.h>

static size_t skip_ws(const char *s, size_t n, size_t i)
{
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	return i;
}

/* A byte that cannot be part of a number or literal (NUL can: parsing rejects it later). */
static int ends_scalar(char c)
{
	return c && strchr(",:{}[]\" \t\r\n", c) != NULL;
}

/* s[i] is '"': the index just past the closing quote, or 0 when unterminated. */
static size_t string_end(const char *s, size_t n, size_t i)
{
	for (i++; i < n; i++) {
		if (s[i] == '\\')
			i++; /* the escaped byte cannot close the string */
		else if (s[i] == '"')
			return i + 1;
	}
	return 0;
}

/* s[i] is '{' or '[': the index just past the matching close, or 0. */
static size_t nested_end(const char *s, size_t n, size_t i)
{
	size_t depth = 0;

	while (i < n) {
		char c = s[i];
		if (c == '"') {
			size_t e = string_end(s, n, i);
			if (!e)
				return 0;
			i = e;
			continue;
		}
		if (c == '{' || c == '[') {
			depth++;
		} else if (c == '}' || c == ']') {
			/* A mismatched pair ({]) passes here; tfj_json_parse rejects it. */
			if (--depth == 0)
				return i + 1;
		}
		i++;
	}
	return 0;
}

int tfj_jscan_value(struct tfj_jscan_span *out, const char *text, size_t len, size_t *pos)
{
	size_t i = skip_ws(text, len, *pos), e;

	if (i >= len)
		return tfj_err_set(TFJ_EPARSE, "JSON scan: value expected at byte %zu", i);
	if (text[i] == '"') {
		e = string_end(text, len, i);
	} else if (text[i] == '{' || text[i] == '[') {
		e = nested_end(text, len, i);
	} else {
		for (e = i; e < len && !ends_scalar(text[e]); e++)
			;
		if (e == i)
			e = 0;
	}
	if (!e)
		return tfj_err_set(TFJ_EPARSE, "JSON scan: bad or unterminated value at byte %zu", i);
	out->p = text + i;
	out->n = e - i;
	*pos = e;
	return 0;
}

int tfj_jscan_member(struct tfj_jscan_span *out, struct tfj_jscan_span obj, const char *key)
{
	const char *s = obj.p;
	size_t n = obj.n, klen = strlen(key), i = skip_ws(s, n, 0);
	struct tfj_jscan_span k, v;

	if (i >= n || s[i] != '{')
		return tfj_err_set(TFJ_ETYPE, "JSON scan: looking up '%s' in a non-object", key);
	i = skip_ws(s, n, i + 1);
	if (i < n && s[i] == '}')
		return tfj_err_set(TFJ_ENOTFOUND, "JSON scan: missing key '%s'", key);
	for (;;) {
		if (i >= n || s[i] != '"' || tfj_jscan_value(&k, s, n, &i))
			return tfj_err_set(TFJ_EPARSE, "JSON scan: member name expected");
		i = skip_ws(s, n, i);
		if (i >= n || s[i] != ':')
			return tfj_err_set(TFJ_EPARSE, "JSON scan: ':' expected");
		i++;
		if (tfj_jscan_value(&v, s, n, &i))
			return TFJ_EPARSE;
		if (k.n == klen + 2 && memcmp(k.p + 1, key, klen) == 0) {
			*out = v;
			return 0;
		}
		i = skip_ws(s, n, i);
		if (i < n && s[i] == ',') {
			i = skip_ws(s, n, i + 1);
			continue;
		}
		if (i < n && s[i] == '}')
			return tfj_err_set(TFJ_ENOTFOUND, "JSON scan: missing key '%s'", key);
		return tfj_err_set(TFJ_EPARSE, "JSON scan: ',' or '}' expected");
	}
}

int tfj_jscan_is_null(struct tfj_jscan_span v)
{
	return v.n == 4 && memcmp(v.p, "null", 4) == 0;
}

int tfj_jscan_iter_init(struct tfj_jscan_iter *it, struct tfj_jscan_span arr)
{
	size_t i = skip_ws(arr.p, arr.n, 0);

	memset(it, 0, sizeof(*it));
	if (i >= arr.n || arr.p[i] != '[')
		return tfj_err_set(TFJ_ETYPE, "JSON scan: not an array");
	it->arr = arr;
	it->pos = i + 1;
	return 0;
}

int tfj_jscan_iter_next(struct tfj_jscan_span *out, struct tfj_jscan_iter *it)
{
	const char *s = it->arr.p;
	size_t n = it->arr.n, i = skip_ws(s, n, it->pos);

	if (i < n && s[i] == ']')
		return 0;
	if (it->started) {
		if (i >= n || s[i] != ',')
			return tfj_err_set(TFJ_EPARSE, "JSON scan: ',' or ']' expected");
		i++;
	}
	if (tfj_jscan_value(out, s, n, &i))
		return TFJ_EPARSE;
	it->pos = i;
	it->started = 1;
	return 1;
}

int tfj_jscan_string(char *out, size_t outlen, struct tfj_jscan_span v)
{
	cJSON *str = NULL;
	size_t len;
	int rc;

	if (!outlen)
		return tfj_err_set(TFJ_EINVAL, "JSON scan: no room");
	out[0] = '\0';
	if (v.n < 2 || v.p[0] != '"')
		return tfj_err_set(TFJ_ETYPE, "JSON scan: not a string");
	/* A string parses to a depth-1 tree of about its own size. */
	if ((rc = tfj_json_parse(&str, v.p, v.n, v.n)))
		return rc;
	len = strlen(str->valuestring);
	if (len >= outlen) {
		rc = tfj_err_set(TFJ_ETOOBIG, "JSON scan: string of %zu bytes", len);
	} else {
		memcpy(out, str->valuestring, len + 1);
	}
	cJSON_Delete(str);
	return rc;
}

int tfj_jscan_path_string(char *out, size_t outlen, struct tfj_jscan_span obj,
			  const char *const *path)
{
	struct tfj_jscan_span v = obj;
	int rc;

	for (; *path; path++)
		if ((rc = tfj_jscan_member(&v, v, *path)))
			return rc;
	return tfj_jscan_string(out, outlen, v);
}
