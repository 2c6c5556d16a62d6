/*
 * fuzz_idx.c - libFuzzer target for the IDX parser. A successful parse
 * must describe exactly the bytes it was given.
 */
#include <stdint.h>
#include <stdlib.h>

#include "data/data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfj_idx idx;
	size_t count = 1, i;
	unsigned sum = 0;

	if (tfj_idx_parse(&idx, data, size) != 0)
		return 0;
	if (idx.ndims < 1 || idx.ndims > 3)
		abort();
	for (i = 0; i < idx.ndims; i++)
		count *= idx.dims[i];
	if (count != idx.count || idx.data + idx.count != data + size)
		abort();
	/* Read every byte the parse claims, so ASan sees any overread. */
	for (i = 0; i < idx.count; i++)
		sum += idx.data[i];
	return sum == 0xFFFFFFFFu; /* keeps the loop from being optimised away */
}
