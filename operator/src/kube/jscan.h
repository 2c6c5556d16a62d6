/*
 * jscan.h - a bounded JSON scanner: byte ranges of values without a tree.
 *
 * A LIST page or a watch line carries objects written by any tenant of the
 * cluster. Parsing the whole page into one tree lets one object's depth or
 * size fail every other object of the page (issue 14). The scanner finds
 * the ranges of an object's members and an array's elements by counting
 * brackets and skipping strings: no recursion, no allocation, one pass
 * bounded by the input length, so nesting depth costs nothing. It checks
 * only as much syntax as it needs to find the ranges; every range it hands
 * out is parsed (and so fully checked) by tfj_json_parse afterwards.
 *
 * Ownership: spans point into the caller's buffer.
 */
#ifndef TFJ_JSCAN_H
#define TFJ_JSCAN_H

#include <stddef.h>

struct tfj_jscan_span {
	const char *p;
	size_t n;
};

/*
 * The value starting at text[*pos] (leading whitespace skipped) into *out;
 * *pos is moved just past it. TFJ_EPARSE when no complete value is there.
 */
int tfj_jscan_value(struct tfj_jscan_span *out, const char *text, size_t len, size_t *pos);

/*
 * The value of member `key` (compared byte for byte with the raw key, as
 * the API server writes keys without escapes) of the object `obj`; the
 * first one when the key repeats, as cJSON does. TFJ_ENOTFOUND when
 * absent, TFJ_ETYPE when obj is not an object, TFJ_EPARSE when malformed
 * before the key was found.
 */
int tfj_jscan_member(struct tfj_jscan_span *out, struct tfj_jscan_span obj, const char *key);

/* 1 when the span is the literal null. */
int tfj_jscan_is_null(struct tfj_jscan_span v);

struct tfj_jscan_iter {
	struct tfj_jscan_span arr;
	size_t pos;
	int started;
};

/* Starts iterating the array `arr`; TFJ_ETYPE when it is not an array. */
int tfj_jscan_iter_init(struct tfj_jscan_iter *it, struct tfj_jscan_span arr);
/* 1 with the next element in *out, 0 at the end, TFJ_EPARSE when malformed. */
int tfj_jscan_iter_next(struct tfj_jscan_span *out, struct tfj_jscan_iter *it);

/*
 * The string value v, unescaped, into out (NUL-terminated). TFJ_ETYPE when
 * v is not a string, TFJ_ETOOBIG when it does not fit, TFJ_EPARSE.
 */
int tfj_jscan_string(char *out, size_t outlen, struct tfj_jscan_span v);

/*
 * The string at a path of object members (e.g. {"metadata", "name", NULL})
 * inside obj, as tfj_jscan_string; TFJ_ENOTFOUND when a step is missing.
 */
int tfj_jscan_path_string(char *out, size_t outlen, struct tfj_jscan_span obj,
			  const char *const *path);

#endif
