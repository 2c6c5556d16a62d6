/*
 * fuzz_checkpoint.c - libFuzzer target for the checkpoint reader. Any input
 * must be either rejected cleanly or parse into a checkpoint whose every
 * field honours the documented invariants; it must never crash or leak.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "data/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_one(const uint8_t *data, size_t size)
{
	struct tfj_ckpt ck;
	size_t i, j;

	if (tfj_ckpt_parse(&ck, data, size) != 0) {
		/* A failed parse leaves nothing to free. */
		if (ck.vars || ck.n_vars)
			abort();
		return;
	}
	if (ck.global_step < 0 || ck.n_vars > TFJ_CKPT_MAX_VARS)
		abort();
	for (i = 0; i < ck.n_vars; i++) {
		const struct tfj_ckpt_var *v = &ck.vars[i];
		size_t count = 1;

		if (v->rank > TFJ_CKPT_MAX_RANK || strlen(v->name) == 0 ||
		    strlen(v->name) >= TFJ_CKPT_NAME_MAX)
			abort();
		for (j = 0; j < v->rank; j++)
			count *= (size_t)v->shape[j];
		if (count != v->count || !v->value || (v->state_count && !v->state))
			abort();
		/* Touch every element so ASan checks the allocation sizes. */
		for (j = 0; j < v->count; j++)
			if (!isfinite(v->value[j]))
				abort();
		for (j = 0; j < v->state_count; j++)
			if (!isfinite(v->state[j]))
				abort();
	}
	tfj_ckpt_free(&ck);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *fixed;
	uint32_t crc;

	check_one(data, size);
	/*
	 * Random bytes almost never carry a valid CRC, which would confine the
	 * fuzzer to the checksum test. A second pass with the trailer rewritten
	 * to the right CRC lets it explore the body parser.
	 */
	if (size < 4 || size > (1u << 20))
		return 0;
	fixed = malloc(size);
	if (!fixed)
		return 0;
	memcpy(fixed, data, size);
	crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), fixed, (uInt)(size - 4));
	fixed[size - 4] = (uint8_t)crc;
	fixed[size - 3] = (uint8_t)(crc >> 8);
	fixed[size - 2] = (uint8_t)(crc >> 16);
	fixed[size - 1] = (uint8_t)(crc >> 24);
	check_one(fixed, size);
	free(fixed);
	return 0;
}
