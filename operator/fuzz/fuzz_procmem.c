/*
 * fuzz_procmem.c - the /proc/<pid>/status reader on arbitrary text.
 *
 * Properties: no crash and no read past the given length (the input is not
 * NUL-terminated); a successful parse gives whole KiB, and a failed one
 * leaves zeros.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "app/procmem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfj_procmem m;
	char *copy = malloc(size ? size : 1);

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (tfj_procmem_parse(&m, copy, size) == 0) {
		if (m.rss_bytes % 1024 || m.peak_bytes % 1024)
			abort();
	} else if (m.rss_bytes || m.peak_bytes) {
		abort();
	}
	free(copy);
	return 0;
}
