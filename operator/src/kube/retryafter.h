/*
 * retryafter.h - when the API client tries a throttled request again.
 *
 * kube-apiserver answers 429 Too Many Requests (API Priority and Fairness,
 * max-in-flight) with a Retry-After header, and some 503s (a server going
 * away) carry one too. Such a request was not processed, so trying it again
 * is safe for every verb, but only after the wait the server asked for:
 * retrying at once is exactly the storm the server is shedding.
 *
 * Policy (tfj_retryafter_wait_ms):
 *   429  retried after Retry-After, or after 1 s when the header is missing
 *        or unreadable;
 *   503  retried only when it carries a readable Retry-After;
 *   each wait is at least TFJ_RETRYAFTER_MIN_MS and at most
 *   TFJ_RETRYAFTER_CAP_S, and a request is retried at most
 *   TFJ_RETRYAFTER_MAX_RETRIES times; after that the error goes to the
 *   caller, whose own backoff (work queue, informer) takes over. Anything
 *   else is not retried here.
 *
 * Both functions are pure (no clock of their own: `now` is passed in).
 */
#ifndef TFJ_RETRYAFTER_H
#define TFJ_RETRYAFTER_H

#include <time.h>

#define TFJ_RETRYAFTER_CAP_S 30
#define TFJ_RETRYAFTER_MAX_RETRIES 3
#define TFJ_RETRYAFTER_DEFAULT_S 1
/* The shortest wait, even for "Retry-After: 0". */
#define TFJ_RETRYAFTER_MIN_MS 100
/* Longest header value looked at (an HTTP-date is 29 characters). */
#define TFJ_RETRYAFTER_MAX_LEN 64

/*
 * Parses a Retry-After value (RFC 9110 10.2.3): delay-seconds ("120") or an
 * HTTP-date ("Wed, 21 Oct 2015 07:28:00 GMT"), with surrounding blanks
 * allowed. *out_s gets the delay in seconds: for a date, the time from `now`
 * (0 when the date has passed); very large delays are clamped to one day.
 * TFJ_EINVAL for NULL, empty, over-long, negative or malformed values.
 */
int tfj_retryafter_parse(long *out_s, const char *value, time_t now);

/*
 * Milliseconds to wait before retry number `retries` + 1 of a request that
 * got HTTP `status` with Retry-After `header` (NULL when absent), or -1 when
 * it must not be retried.
 */
long tfj_retryafter_wait_ms(long status, const char *header, int retries, time_t now);

#endif
