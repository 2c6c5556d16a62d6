/*
 * quantity.h - Kubernetes resource quantities ("500m", "2Gi", "1.5", "1e3")
 * as exact integers of milli-units, for adding up the requests of a gang's
 * pods (podgroup.h).
 *
 * A quantity is parsed into thousandths of its unit, rounded up (as the API
 * server rounds a quantity to milli precision), so "1" is 1000, "100m" is
 * 100, "1Ki" is 1024000 and "1n" is 1. Values beyond int64 milli-units
 * (about 9.2e15 units, 8 EiB of memory) are TFJ_ERANGE, negative values and
 * anything that is not the Kubernetes quantity grammar TFJ_EINVAL.
 *
 * Formatting gives the shortest exact form of the serialized grammar: an
 * integer when the value is whole ("3", "3221225472"), else milli-units
 * ("1500m"). The API server accepts both; binary suffixes are not chosen,
 * the sum is what matters to a scheduler.
 */
#ifndef TFJ_QUANTITY_H
#define TFJ_QUANTITY_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

/* Longest quantity string accepted (the API server's own limit is far less). */
#define TFJ_QUANTITY_MAX_LEN 64
/* Room for any formatted quantity: 19 digits, "m", NUL. */
#define TFJ_QUANTITY_FMT_LEN 24

/* Parses a quantity string into milli-units. */
int tfj_quantity_parse(int64_t *milli, const char *s);

/* The same from a JSON value: a string, or a number (int-or-string fields). */
int tfj_quantity_from_json(int64_t *milli, const cJSON *v);

/* *acc += add, TFJ_ERANGE on overflow (acc unchanged). */
int tfj_quantity_add(int64_t *acc, int64_t add);

/* Writes the quantity into out (at least TFJ_QUANTITY_FMT_LEN bytes). */
int tfj_quantity_format(char *out, size_t outlen, int64_t milli);

#endif
