/*
 * json.c - type-checked getters over cJSON.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfj/err.h"
#include "tfj/json.h"

size_t tfj_json_depth(const cJSON *item)
{
	size_t max = 0, d;
	const cJSON *c;

	if (!item)
		return 0;
	for (c = item->child; c; c = c->next) {
		d = tfj_json_depth(c);
		if (d > max)
			max = d;
	}
	return max + 1;
}

/* Bytes of s as cJSON prints a string: quotes, escapes and \\uXXXX for controls. */
static size_t string_size(const char *s)
{
	size_t n = 2;

	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (*p == '"' || *p == '\\' || *p == '\b' || *p == '\f' || *p == '\n' ||
		    *p == '\r' || *p == '\t')
			n += 2;
		else if (*p < 32)
			n += 6;
		else
			n++;
	}
	return n;
}

/* Bytes of a number as cJSON prints it (print_number's three forms). */
static size_t number_size(double d, int i)
{
	char buf[32];
	int n;

	if (d != d || d - d != 0)
		n = 4; /* NaN and infinities print as null */
	else if (d == (double)i)
		n = snprintf(buf, sizeof(buf), "%d", i);
	else {
		n = snprintf(buf, sizeof(buf), "%1.15g", d);
		if (n > 0 && strtod(buf, NULL) != d)
			n = snprintf(buf, sizeof(buf), "%1.17g", d);
	}
	return n > 0 ? (size_t)n : 0;
}

static size_t text_size(const cJSON *item, size_t cap, size_t depth)
{
	const cJSON *c;
	size_t n;

	if (depth > TFJ_JSON_MAX_DEPTH * 16)
		return SIZE_MAX; /* not a tree tfj_json_parse made: call it too big */
	if (cJSON_IsString(item))
		return string_size(item->valuestring);
	if (cJSON_IsNumber(item))
		return number_size(item->valuedouble, item->valueint);
	if (cJSON_IsTrue(item) || cJSON_IsNull(item))
		return 4;
	if (cJSON_IsFalse(item))
		return 5;
	if (cJSON_IsRaw(item))
		return item->valuestring ? strlen(item->valuestring) : 0;
	/* An object or an array: brackets, commas, and per member its key and colon. */
	n = 2;
	for (c = item->child; c && n <= cap; c = c->next) {
		size_t v = text_size(c, cap - n, depth + 1);
		if (v > cap - n)
			return cap + 1;
		n += v + (c != item->child);
		if (cJSON_IsObject(item))
			n += string_size(c->string) + 1;
	}
	return n;
}

size_t tfj_json_text_size(const cJSON *item, size_t cap)
{
	size_t n;

	if (!item)
		return 0;
	if (cap == SIZE_MAX)
		cap--;
	n = text_size(item, cap, 0);
	return n > cap ? cap + 1 : n;
}

int tfj_json_parse(cJSON **out, const char *text, size_t len, size_t max_len)
{
	const char *end = NULL;
	cJSON *root;

	*out = NULL;
	if (len > max_len)
		return tfj_err_set(TFJ_ETOOBIG, "JSON document of %zu bytes exceeds the %zu-byte limit",
				   len, max_len);
	if (!text || !len)
		return tfj_err_set(TFJ_EPARSE, "empty JSON document");
	root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
	if (!root) {
		size_t at = (end && end >= text) ? (size_t)(end - text) : 0;
		return tfj_err_set(TFJ_EPARSE, "invalid JSON near byte %zu", at);
	}
	/* Only whitespace may follow the value (cJSON's require_null_terminated
	 * needs a NUL inside len, which length-delimited input does not have). */
	for (; end && end < text + len; end++) {
		if (*end != ' ' && *end != '\t' && *end != '\n' && *end != '\r') {
			cJSON_Delete(root);
			return tfj_err_set(TFJ_EPARSE, "trailing data after JSON value at byte %zu",
					   (size_t)(end - text));
		}
	}
	if (tfj_json_depth(root) > TFJ_JSON_MAX_DEPTH) {
		cJSON_Delete(root);
		return tfj_err_set(TFJ_ERANGE, "JSON nested deeper than %d levels", TFJ_JSON_MAX_DEPTH);
	}
	*out = root;
	return 0;
}

static int lookup(const cJSON **out, const cJSON *obj, const char *key)
{
	const cJSON *it;

	if (!cJSON_IsObject(obj))
		return tfj_err_set(TFJ_ETYPE, "looking up '%s' in a value that is not an object", key);
	it = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!it)
		return tfj_err_set(TFJ_ENOTFOUND, "missing key '%s'", key);
	*out = it;
	return 0;
}

int tfj_json_get_object(const cJSON **out, const cJSON *obj, const char *key)
{
	const cJSON *it = NULL;
	int rc = lookup(&it, obj, key);

	if (rc)
		return rc;
	if (!cJSON_IsObject(it))
		return tfj_err_set(TFJ_ETYPE, "key '%s': expected an object", key);
	*out = it;
	return 0;
}

int tfj_json_get_array(const cJSON **out, const cJSON *obj, const char *key)
{
	const cJSON *it = NULL;
	int rc = lookup(&it, obj, key);

	if (rc)
		return rc;
	if (!cJSON_IsArray(it))
		return tfj_err_set(TFJ_ETYPE, "key '%s': expected an array", key);
	*out = it;
	return 0;
}

int tfj_json_as_string(const char **out, const cJSON *item, const char *what)
{
	if (!cJSON_IsString(item) || !item->valuestring)
		return tfj_err_set(TFJ_ETYPE, "%s: expected a string", what);
	*out = item->valuestring;
	return 0;
}

int tfj_json_get_string(const char **out, const cJSON *obj, const char *key)
{
	const cJSON *it = NULL;
	int rc = lookup(&it, obj, key);

	if (rc)
		return rc;
	if (!cJSON_IsString(it) || !it->valuestring)
		return tfj_err_set(TFJ_ETYPE, "key '%s': expected a string", key);
	*out = it->valuestring;
	return 0;
}

int tfj_json_get_bool(int *out, const cJSON *obj, const char *key)
{
	const cJSON *it = NULL;
	int rc = lookup(&it, obj, key);

	if (rc)
		return rc;
	if (!cJSON_IsBool(it))
		return tfj_err_set(TFJ_ETYPE, "key '%s': expected true or false", key);
	*out = cJSON_IsTrue(it) ? 1 : 0;
	return 0;
}

int tfj_json_get_number(double *out, const cJSON *obj, const char *key)
{
	const cJSON *it = NULL;
	int rc = lookup(&it, obj, key);

	if (rc)
		return rc;
	if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
		return tfj_err_set(TFJ_ETYPE, "key '%s': expected a number", key);
	*out = it->valuedouble;
	return 0;
}

int tfj_json_as_int64(int64_t *out, const cJSON *item, const char *what, int64_t min, int64_t max)
{
	double d;

	if (!cJSON_IsNumber(item))
		return tfj_err_set(TFJ_ETYPE, "%s: expected an integer", what);
	d = item->valuedouble;
	if (!isfinite(d) || d != floor(d))
		return tfj_err_set(TFJ_ETYPE, "%s: expected an integer", what);
	/* Beyond 2^53 a double no longer names one integer. */
	if (d > (double)TFJ_JSON_INT_MAX || d < -(double)TFJ_JSON_INT_MAX ||
	    d < (double)min || d > (double)max)
		return tfj_err_set(TFJ_ERANGE, "%s: %.17g is outside [%lld, %lld]", what, d,
				   (long long)min, (long long)max);
	*out = (int64_t)d;
	return 0;
}

int tfj_json_get_int64(int64_t *out, const cJSON *obj, const char *key, int64_t min, int64_t max)
{
	const cJSON *it = NULL;
	int rc = lookup(&it, obj, key);

	return rc ? rc : tfj_json_as_int64(out, it, key, min, max);
}

int tfj_json_get_int(int *out, const cJSON *obj, const char *key, int min, int max)
{
	int64_t v;
	int rc = tfj_json_get_int64(&v, obj, key, min, max);

	if (!rc)
		*out = (int)v;
	return rc;
}

/* A key that is absent or null counts as not given. */
static int absent(const cJSON *obj, const char *key)
{
	const cJSON *it = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;

	return !it || cJSON_IsNull(it);
}

int tfj_json_opt_string(const char **out, const cJSON *obj, const char *key, const char *def)
{
	if (!cJSON_IsObject(obj))
		return tfj_err_set(TFJ_ETYPE, "looking up '%s' in a value that is not an object", key);
	if (absent(obj, key)) {
		*out = def;
		return 0;
	}
	return tfj_json_get_string(out, obj, key);
}

int tfj_json_opt_bool(int *out, const cJSON *obj, const char *key, int def)
{
	if (!cJSON_IsObject(obj))
		return tfj_err_set(TFJ_ETYPE, "looking up '%s' in a value that is not an object", key);
	if (absent(obj, key)) {
		*out = def;
		return 0;
	}
	return tfj_json_get_bool(out, obj, key);
}

int tfj_json_opt_int64(int64_t *out, const cJSON *obj, const char *key, int64_t min, int64_t max,
		       int64_t def)
{
	if (!cJSON_IsObject(obj))
		return tfj_err_set(TFJ_ETYPE, "looking up '%s' in a value that is not an object", key);
	if (absent(obj, key)) {
		*out = def;
		return 0;
	}
	return tfj_json_get_int64(out, obj, key, min, max);
}

int tfj_json_opt_int(int *out, const cJSON *obj, const char *key, int min, int max, int def)
{
	int64_t v;
	int rc = tfj_json_opt_int64(&v, obj, key, min, max, def);

	if (!rc)
		*out = (int)v;
	return rc;
}

int tfj_json_print(char **out, const cJSON *item)
{
	*out = cJSON_PrintUnformatted(item);
	if (!*out)
		return tfj_err_set(TFJ_ENOMEM, "serialising JSON");
	return 0;
}

int tfj_json_set_string(cJSON *obj, const char *key, const char *val)
{
	cJSON *s = cJSON_CreateString(val);

	if (!s)
		return TFJ_ENOMEM;
	if (cJSON_GetObjectItemCaseSensitive(obj, key))
		cJSON_ReplaceItemInObjectCaseSensitive(obj, key, s);
	else
		cJSON_AddItemToObject(obj, key, s);
	return 0;
}

cJSON *tfj_json_ensure_object(cJSON *obj, const char *key)
{
	cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (cJSON_IsObject(it))
		return it;
	if (it)
		cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
	return cJSON_AddObjectToObject(obj, key);
}
