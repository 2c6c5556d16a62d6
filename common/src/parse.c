/*
 * parse.c - numbers, durations, booleans and host:port (see parse.h).
 */
#include <tfj/parse.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

#include <arpa/inet.h>
#include <netinet/in.h>

/* Values are quoted in details, cut so that a hostile one cannot fill the log. */
#define QUOTE_MAX 80

/*
 * After strto*(): the value must have used the whole, non-empty string and
 * not overflowed (errno). kind names what was expected ("an integer").
 */
static int whole(const char *s, const char *end, const char *what, const char *kind)
{
	if (errno || end == s || *end != '\0')
		return tfj_err_set(TFJ_EINVAL, "%s: \"%.*s\" is not %s", what, QUOTE_MAX, s, kind);
	return 0;
}

int tfj_parse_i64(int64_t *out, const char *s, int64_t min, int64_t max, const char *what)
{
	char *end = NULL;
	long long v;

	if (!s || !*s)
		return tfj_err_set(TFJ_EINVAL, "%s: empty value", what);
	errno = 0;
	v = strtoll(s, &end, 10);
	if (whole(s, end, what, "an integer"))
		return TFJ_EINVAL;
	if (v < min || v > max)
		return tfj_err_set(TFJ_EINVAL, "%s: %lld is not an integer in [%lld, %lld]", what, v,
				   (long long)min, (long long)max);
	*out = v;
	return 0;
}

int tfj_parse_u64(uint64_t *out, const char *s, uint64_t min, uint64_t max, const char *what)
{
	const char *p = s;
	char *end = NULL;
	unsigned long long v;

	/* strtoull() would turn "-1" into the largest value; refuse the sign. */
	while (p && isspace((unsigned char)*p))
		p++;
	if (p && *p == '-')
		return tfj_err_set(TFJ_EINVAL, "%s: \"%.*s\" is negative", what, QUOTE_MAX, s);
	if (!s || !*s)
		return tfj_err_set(TFJ_EINVAL, "%s: empty value", what);
	errno = 0;
	v = strtoull(s, &end, 10);
	if (whole(s, end, what, "an integer"))
		return TFJ_EINVAL;
	if (v < min || v > max)
		return tfj_err_set(TFJ_EINVAL, "%s: %llu is not an integer in [%llu, %llu]", what, v,
				   (unsigned long long)min, (unsigned long long)max);
	*out = v;
	return 0;
}

int tfj_parse_int(int *out, const char *s, int min, int max, const char *what)
{
	/* Set although parse writes it on success: gcc -O3 cannot see that (bench/run's build). */
	int64_t v = 0;
	int rc = tfj_parse_i64(&v, s, min, max, what);

	if (rc == 0)
		*out = (int)v;
	return rc;
}

int tfj_parse_double(double *out, const char *s, double min, double max, const char *what)
{
	char *end = NULL;
	double v;

	if (!s || !*s)
		return tfj_err_set(TFJ_EINVAL, "%s: empty value", what);
	errno = 0;
	v = strtod(s, &end);
	if (whole(s, end, what, "a number"))
		return TFJ_EINVAL;
	if (!isfinite(v))
		return tfj_err_set(TFJ_EINVAL, "%s: \"%.*s\" is not a finite number", what,
				   QUOTE_MAX, s);
	if (v < min || v > max)
		return tfj_err_set(TFJ_EINVAL, "%s: %g is not in [%g, %g]", what, v, min, max);
	*out = v;
	return 0;
}

int tfj_parse_seconds(double *out, const char *s, double min, double max, const char *what)
{
	int rc = tfj_parse_double(out, s, min, max, what);

	if (rc)
		return tfj_err_set(rc, "%s (expected seconds in [%g, %g])", tfj_err_detail(), min,
				   max);
	return 0;
}

int tfj_parse_bool(int *out, const char *s, const char *what)
{
	if (!s || !strcmp(s, "true") || !strcmp(s, "1") || !strcmp(s, "yes")) {
		*out = 1;
		return 0;
	}
	if (!strcmp(s, "false") || !strcmp(s, "0") || !strcmp(s, "no")) {
		*out = 0;
		return 0;
	}
	return tfj_err_set(TFJ_EINVAL, "%s: \"%.*s\" is not a boolean (true/false, 1/0, yes/no)",
			   what, QUOTE_MAX, s);
}

int tfj_parse_hostport(char *host, size_t hostcap, int *port, const char *s, unsigned flags,
		       const char *what)
{
	const char *h = s, *p, *colon;
	size_t hl;
	int64_t v;
	int rc;

	if (!s || !*s)
		return tfj_err_set(TFJ_EINVAL, "%s: empty address", what);
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');

		if (!rb || rb[1] != ':')
			return tfj_err_set(TFJ_EINVAL, "%s \"%.*s\": expected [v6]:port", what,
					   QUOTE_MAX, s);
		h = s + 1;
		hl = (size_t)(rb - h);
		p = rb + 2;
	} else if ((colon = strrchr(s, ':')) != NULL) {
		hl = (size_t)(colon - s);
		p = colon + 1;
	} else if (flags & TFJ_HOSTPORT_BARE_PORT) {
		hl = 0;
		p = s;
		flags |= TFJ_HOSTPORT_EMPTY_HOST;
	} else {
		return tfj_err_set(TFJ_EINVAL, "%s \"%.*s\": no port", what, QUOTE_MAX, s);
	}
	if (hl == 0 && !(flags & TFJ_HOSTPORT_EMPTY_HOST))
		return tfj_err_set(TFJ_EINVAL, "%s \"%.*s\": empty host", what, QUOTE_MAX, s);
	if (hl >= hostcap)
		return tfj_err_set(TFJ_EINVAL, "%s \"%.*s\": host longer than %zu bytes", what,
				   QUOTE_MAX, s, hostcap ? hostcap - 1 : 0);
	if (!*p)
		return tfj_err_set(TFJ_EINVAL, "%s \"%.*s\": no port", what, QUOTE_MAX, s);
	rc = tfj_parse_i64(&v, p, (flags & TFJ_HOSTPORT_PORT_ZERO) ? 0 : 1, 65535, what);
	if (rc)
		return tfj_err_set(rc, "%s \"%.*s\": port must be %d-65535", what, QUOTE_MAX, s,
				   (flags & TFJ_HOSTPORT_PORT_ZERO) ? 0 : 1);
	if (hl && (flags & TFJ_HOSTPORT_NUMERIC)) {
		char ip[INET6_ADDRSTRLEN];
		unsigned char tmp[sizeof(struct in6_addr)];

		if (hl >= sizeof(ip))
			return tfj_err_set(TFJ_EINVAL, "%s \"%.*s\": host must be a numeric IP",
					   what, QUOTE_MAX, s);
		memcpy(ip, h, hl);
		ip[hl] = '\0';
		if (inet_pton(AF_INET, ip, tmp) != 1 && inet_pton(AF_INET6, ip, tmp) != 1)
			return tfj_err_set(TFJ_EINVAL, "%s \"%.*s\": host must be a numeric IP",
					   what, QUOTE_MAX, s);
	}
	memcpy(host, h, hl);
	host[hl] = '\0';
	*port = (int)v;
	return 0;
}

int tfj_parse_flag_eq(const char *name, size_t n, const char *want)
{
	size_t i;

	for (i = 0; i < n; i++) {
		char a = name[i] == '_' ? '-' : name[i];
		char b = want[i] == '_' ? '-' : want[i];

		/* want's NUL ends the loop here unless name is shorter. */
		if (a != b || b == '\0')
			return 0;
	}
	return want[n] == '\0';
}
