/*
 * retryafter.c - Retry-After parsing and the client's retry policy.
 */
#include "kube/retryafter.h"

#include <string.h>
#include <curl/curl.h>

#include <tfj/err.h>

#define ONE_DAY_S 86400L

static int blank(char c)
{
	return c == ' ' || c == '\t';
}

int tfj_retryafter_parse(long *out_s, const char *value, time_t now)
{
	char buf[TFJ_RETRYAFTER_MAX_LEN + 1];
	size_t len, i;
	long v = 0;

	*out_s = 0;
	if (!value)
		return tfj_err_set(TFJ_EINVAL, "Retry-After: missing");
	while (blank(*value))
		value++;
	len = strnlen(value, TFJ_RETRYAFTER_MAX_LEN + 1);
	if (len > TFJ_RETRYAFTER_MAX_LEN)
		return tfj_err_set(TFJ_EINVAL, "Retry-After: longer than %d characters",
				   TFJ_RETRYAFTER_MAX_LEN);
	while (len > 0 && blank(value[len - 1]))
		len--;
	if (len == 0)
		return tfj_err_set(TFJ_EINVAL, "Retry-After: empty");
	memcpy(buf, value, len);
	buf[len] = '\0';
	if (buf[0] >= '0' && buf[0] <= '9') {
		/* delay-seconds: digits only; saturate instead of overflowing. */
		for (i = 0; i < len; i++) {
			if (buf[i] < '0' || buf[i] > '9')
				return tfj_err_set(TFJ_EINVAL, "Retry-After: '%s' is not a number",
						   buf);
			if (v <= ONE_DAY_S)
				v = v * 10 + (buf[i] - '0');
		}
		*out_s = v > ONE_DAY_S ? ONE_DAY_S : v;
		return 0;
	}
	/* HTTP-date. curl_getdate is thread-safe and knows the three RFC forms;
	 * it is only trusted for values that look like a date (a weekday). */
	if (!((buf[0] >= 'A' && buf[0] <= 'Z') || (buf[0] >= 'a' && buf[0] <= 'z')) ||
	    !strchr(buf, ' ')) {
		return tfj_err_set(TFJ_EINVAL, "Retry-After: '%s' is neither seconds nor a date",
				   buf);
	}
	{
		time_t t = curl_getdate(buf, NULL);
		if (t == (time_t)-1)
			return tfj_err_set(TFJ_EINVAL, "Retry-After: bad date '%s'", buf);
		if (t <= now)
			*out_s = 0;
		else
			*out_s = t - now > ONE_DAY_S ? ONE_DAY_S : (long)(t - now);
	}
	return 0;
}

long tfj_retryafter_wait_ms(long status, const char *header, int retries, time_t now)
{
	long s;
	int ok;

	if (status != 429 && status != 503)
		return -1;
	if (retries < 0 || retries >= TFJ_RETRYAFTER_MAX_RETRIES)
		return -1;
	ok = header && tfj_retryafter_parse(&s, header, now) == 0;
	if (!ok) {
		if (status == 503)
			return -1; /* a plain 503 is an error for the caller's backoff */
		s = TFJ_RETRYAFTER_DEFAULT_S;
	}
	if (s > TFJ_RETRYAFTER_CAP_S)
		s = TFJ_RETRYAFTER_CAP_S;
	/* "Retry-After: 0" still gets a short pause: never a tight loop. */
	return s > 0 ? s * 1000 : TFJ_RETRYAFTER_MIN_MS;
}
