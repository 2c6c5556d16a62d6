/*
 * quantity.c - Kubernetes resource quantities as exact milli-units.
 */
#include "tfjob/quantity.h"

#include <stdio.h>
#include <string.h>

#include <tfj/err.h>

/* Digits in the number part; more cannot be exact in 128 bits anyway. */
#define MAX_DIGITS 30

typedef unsigned __int128 u128; /* gcc and clang: exact products of mantissa and suffix */

struct suffix {
	const char *s;
	int binary;   /* power of 1024 */
	int exp;      /* power of 10 or of 1024 */
};

static const struct suffix suffixes[] = {
	{ "Ki", 1, 1 }, { "Mi", 1, 2 }, { "Gi", 1, 3 }, { "Ti", 1, 4 }, { "Pi", 1, 5 }, { "Ei", 1, 6 },
	{ "n", 0, -9 }, { "u", 0, -6 }, { "m", 0, -3 }, { "", 0, 0 },   { "k", 0, 3 },
	{ "M", 0, 6 },  { "G", 0, 9 },  { "T", 0, 12 }, { "P", 0, 15 }, { "E", 0, 18 },
};

/* An exponent suffix: [eE][+-]?digits, at most 3 digits (quantities never need more). */
static int parse_exponent(int *out, const char *s)
{
	int sign = 1, v = 0, n = 0;

	if (*s != 'e' && *s != 'E')
		return -1;
	s++;
	if (*s == '+' || *s == '-')
		sign = *s++ == '-' ? -1 : 1;
	for (; *s >= '0' && *s <= '9'; s++, n++) {
		if (n == 3)
			return -1;
		v = v * 10 + (*s - '0');
	}
	if (!n || *s)
		return -1;
	*out = sign * v;
	return 0;
}

int tfj_quantity_parse(int64_t *milli, const char *s)
{
	const char *p = s;
	u128 m = 0, num;
	int digits = 0, any = 0, frac = 0, seen_dot = 0, exp10 = 0, e;
	int64_t binary = 1;
	size_t i;

	*milli = 0;
	if (!s || !*s || strlen(s) > TFJ_QUANTITY_MAX_LEN)
		return tfj_err_set(TFJ_EINVAL, "quantity: empty or longer than %d characters",
				   TFJ_QUANTITY_MAX_LEN);
	if (*p == '+')
		p++;
	else if (*p == '-')
		return tfj_err_set(TFJ_EINVAL, "quantity '%s': negative", s);
	for (; (*p >= '0' && *p <= '9') || (*p == '.' && !seen_dot); p++) {
		if (*p == '.') {
			seen_dot = 1;
			continue;
		}
		any = 1;
		if (m == 0 && *p == '0' && !seen_dot)
			continue; /* leading zeros carry nothing */
		if (++digits > MAX_DIGITS)
			return tfj_err_set(TFJ_ERANGE, "quantity '%s': too many digits", s);
		m = m * 10 + (u128)(*p - '0');
		frac += seen_dot;
	}
	if (!any)
		return tfj_err_set(TFJ_EINVAL, "quantity '%s': no number", s);
	for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
		if (!strcmp(p, suffixes[i].s))
			break;
	if (i < sizeof(suffixes) / sizeof(suffixes[0])) {
		if (suffixes[i].binary)
			binary = (int64_t)1 << (10 * suffixes[i].exp);
		else
			exp10 = suffixes[i].exp;
	} else if (parse_exponent(&e, p) == 0) {
		exp10 = e;
	} else {
		return tfj_err_set(TFJ_EINVAL, "quantity '%s': unknown suffix '%s'", s, p);
	}
	/* milli = m * binary * 10^(exp10 + 3 - frac), rounded up. */
	if (m > ((u128)-1) / (u128)binary)
		return tfj_err_set(TFJ_ERANGE, "quantity '%s': too large", s);
	num = m * (u128)binary;
	e = exp10 + 3 - frac;
	if (e >= 0) {
		for (; e > 0; e--) {
			if (num > (u128)INT64_MAX)
				break;
			num *= 10;
		}
		if (num > (u128)INT64_MAX)
			return tfj_err_set(TFJ_ERANGE, "quantity '%s': beyond %lld milli-units", s,
					   (long long)INT64_MAX);
	} else {
		u128 div = 1;
		for (; e < 0 && div <= ((u128)-1) / 10 / 10; e++)
			div *= 10;
		if (e < 0) /* a divisor beyond 128 bits: any nonzero value rounds up to 1 */
			num = num ? 1 : 0;
		else
			num = num / div + (num % div != 0);
		if (num > (u128)INT64_MAX)
			return tfj_err_set(TFJ_ERANGE, "quantity '%s': too large", s);
	}
	*milli = (int64_t)num;
	return 0;
}

int tfj_quantity_from_json(int64_t *milli, const cJSON *v)
{
	char buf[TFJ_QUANTITY_FMT_LEN + 8];
	double d;

	*milli = 0;
	if (cJSON_IsString(v) && v->valuestring)
		return tfj_quantity_parse(milli, v->valuestring);
	if (!cJSON_IsNumber(v))
		return tfj_err_set(TFJ_ETYPE, "quantity: expected a string or a number");
	d = v->valuedouble;
	/* An int-or-string quantity given as a number: whole numbers only. */
	if (d < 0 || d > 9.0e15 || d != (double)(int64_t)d)
		return tfj_err_set(TFJ_EINVAL, "quantity %g: not a whole number in range", d);
	snprintf(buf, sizeof(buf), "%lld", (long long)d);
	return tfj_quantity_parse(milli, buf);
}

int tfj_quantity_add(int64_t *acc, int64_t add)
{
	if (add < 0 || *acc > INT64_MAX - add)
		return tfj_err_set(TFJ_ERANGE, "quantity sum beyond %lld milli-units",
				   (long long)INT64_MAX);
	*acc += add;
	return 0;
}

int tfj_quantity_format(char *out, size_t outlen, int64_t milli)
{
	int n;

	if (milli < 0)
		return tfj_err_set(TFJ_EINVAL, "quantity: negative");
	if (milli % 1000 == 0)
		n = snprintf(out, outlen, "%lld", (long long)(milli / 1000));
	else
		n = snprintf(out, outlen, "%lldm", (long long)milli);
	if (n < 0 || (size_t)n >= outlen)
		return tfj_err_set(TFJ_ETOOBIG, "quantity: %zu bytes are too few", outlen);
	return 0;
}
