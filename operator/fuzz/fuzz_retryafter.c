/*
 * fuzz_retryafter.c - the Retry-After parser and retry policy on arbitrary
 * header values (as a server could send them).
 *
 * Properties: no crash; a parsed delay is within 0..one day; the policy's
 * wait is -1 or within TFJ_RETRYAFTER_MIN_MS..TFJ_RETRYAFTER_CAP_S seconds,
 * and never allows more than TFJ_RETRYAFTER_MAX_RETRIES retries.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/retryafter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char v[256];
	long s = -1, w;
	size_t n = size < sizeof(v) - 1 ? size : sizeof(v) - 1;

	memcpy(v, data, n);
	v[n] = '\0';
	if (tfj_retryafter_parse(&s, v, 1700000000) == 0 && (s < 0 || s > 86400))
		abort();
	for (int r = 0; r <= TFJ_RETRYAFTER_MAX_RETRIES; r++) {
		w = tfj_retryafter_wait_ms(r & 1 ? 503 : 429, v, r, 1700000000);
		if (w != -1 && (w < TFJ_RETRYAFTER_MIN_MS || w > TFJ_RETRYAFTER_CAP_S * 1000L))
			abort();
		if (r == TFJ_RETRYAFTER_MAX_RETRIES && w != -1)
			abort();
	}
	return 0;
}
