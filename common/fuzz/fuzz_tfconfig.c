/*
 * fuzz_tfconfig.c - the TF_CONFIG decoder on arbitrary bytes. Whatever
 * decodes must re-encode, and the re-encoding must decode to the same config.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tfj/tfconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfj_tfconfig a, b;
	char *s = NULL;

	if (tfj_tfconfig_decode(&a, (const char *)data, size) != 0)
		return 0;
	if (tfj_tfconfig_encode(&s, &a) != 0)
		abort();
	if (tfj_tfconfig_decode(&b, s, strlen(s)) != 0)
		abort();
	if (!tfj_tfconfig_equal(&a, &b))
		abort();
	free(s);
	tfj_tfconfig_free(&a);
	tfj_tfconfig_free(&b);
	return 0;
}
