/*
 * json.h - type-checked access to JSON documents (over cJSON).
 *
 * All JSON in the project is parsed with tfj_json_parse() and read through
 * these getters. A getter never crashes on a missing key, a wrong type or an
 * out-of-range number: it returns TFJ_ENOTFOUND, TFJ_ETYPE or TFJ_ERANGE and
 * records a detail naming the key (see err.h).
 *
 * Strings returned through `const char **` point into the cJSON tree and
 * live as long as the tree; the caller frees the tree with cJSON_Delete().
 */
#ifndef TFJ_JSON_H
#define TFJ_JSON_H

#include <stdint.h>
#include <stddef.h>
#include <cjson/cJSON.h>

/* Nesting deeper than this is rejected (cJSON itself stops at 1000). */
#define TFJ_JSON_MAX_DEPTH 64
/* Integers must be exactly representable in a double. */
#define TFJ_JSON_INT_MAX ((int64_t)9007199254740991LL)

/*
 * Parses exactly `len` bytes (no NUL needed). Fails with TFJ_ETOOBIG when
 * len > max_len, TFJ_EPARSE on a syntax error or trailing garbage, and
 * TFJ_ERANGE when nesting exceeds TFJ_JSON_MAX_DEPTH. *out is the new tree.
 */
int tfj_json_parse(cJSON **out, const char *text, size_t len, size_t max_len);

/* Depth of a tree (a scalar is 1). */
size_t tfj_json_depth(const cJSON *item);

/*
 * Bytes of item's compact serialisation (what tfj_json_print writes), counted
 * without printing or allocating, and at most up to cap: a tree larger than
 * cap returns cap + 1 as soon as that is known, so the cost is bounded by
 * cap, not by the tree. 0 for NULL.
 */
size_t tfj_json_text_size(const cJSON *item, size_t cap);

/* Object members. Missing key: TFJ_ENOTFOUND; wrong type: TFJ_ETYPE. */
int tfj_json_get_object(const cJSON **out, const cJSON *obj, const char *key);
int tfj_json_get_array(const cJSON **out, const cJSON *obj, const char *key);
int tfj_json_get_string(const char **out, const cJSON *obj, const char *key);
int tfj_json_get_bool(int *out, const cJSON *obj, const char *key);
int tfj_json_get_number(double *out, const cJSON *obj, const char *key);
/* An integral number within [min, max]; fractions and NaN are TFJ_ETYPE. */
int tfj_json_get_int64(int64_t *out, const cJSON *obj, const char *key,
		       int64_t min, int64_t max);
int tfj_json_get_int(int *out, const cJSON *obj, const char *key, int min, int max);

/*
 * Optional members: a missing key (or JSON null) stores `def` and returns 0;
 * a present key of the wrong type is still an error.
 */
int tfj_json_opt_string(const char **out, const cJSON *obj, const char *key, const char *def);
int tfj_json_opt_bool(int *out, const cJSON *obj, const char *key, int def);
int tfj_json_opt_int64(int64_t *out, const cJSON *obj, const char *key,
		       int64_t min, int64_t max, int64_t def);
int tfj_json_opt_int(int *out, const cJSON *obj, const char *key, int min, int max, int def);

/* The same checks on an item itself (array elements); `what` names it in errors. */
int tfj_json_as_string(const char **out, const cJSON *item, const char *what);
int tfj_json_as_int64(int64_t *out, const cJSON *item, const char *what,
		      int64_t min, int64_t max);

/* Compact serialisation; *out is malloc'd, caller frees. */
int tfj_json_print(char **out, const cJSON *item);

/* Builders for objects the caller owns. */
/* obj[key] = a copy of val, replacing what was there: 0 or TFJ_ENOMEM. */
int tfj_json_set_string(cJSON *obj, const char *key, const char *val);
/* obj[key] as an object, replacing whatever non-object was there; NULL: out of memory. */
cJSON *tfj_json_ensure_object(cJSON *obj, const char *key);

#endif
