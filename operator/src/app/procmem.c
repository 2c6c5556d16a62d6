/*
 * procmem.c - the operator's resident memory and its peak from /proc.
 */
#include "app/procmem.h"

#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/file.h>
#include <tfj/parse.h>

/* /proc/self/status is about 1.5 KB; anything near this is not it. */
#define STATUS_MAX (64u << 10)

/* The value in kB of the line "<key>:<spaces><digits> kB" of text, in bytes. */
static int field_kb(uint64_t *out, const char *text, size_t len, const char *key)
{
	size_t klen = strlen(key);
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;

		if ((size_t)(eol - p) > klen && !memcmp(p, key, klen) && p[klen] == ':') {
			const char *v = p + klen + 1;
			char digits[24];
			size_t n = 0;
			uint64_t kb;

			while (v < eol && (*v == ' ' || *v == '\t'))
				v++;
			while (v < eol && *v >= '0' && *v <= '9' && n < sizeof(digits) - 1)
				digits[n++] = *v++;
			digits[n] = '\0';
			if (!n || eol - v < 3 || memcmp(v, " kB", 3) ||
			    tfj_parse_u64(&kb, digits, 0, UINT64_MAX / 1024, key))
				return tfj_err_set(TFJ_EPARSE, "status line %s is malformed", key);
			*out = kb * 1024;
			return 0;
		}
		p = eol + 1;
	}
	return tfj_err_set(TFJ_EPARSE, "status has no %s line", key);
}

int tfj_procmem_parse(struct tfj_procmem *out, const char *text, size_t len)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = field_kb(&out->rss_bytes, text, len, "VmRSS")) ||
	    (rc = field_kb(&out->peak_bytes, text, len, "VmHWM"))) {
		memset(out, 0, sizeof(*out));
		return rc;
	}
	/* Optional: older kernels do not show it, and no reader needs it. */
	if (field_kb(&out->anon_bytes, text, len, "RssAnon"))
		out->anon_bytes = 0;
	return 0;
}

int tfj_procmem_read(struct tfj_procmem *out)
{
	char *text = NULL;
	size_t len = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = tfj_file_read(&text, &len, "/proc/self/status", STATUS_MAX, 0)))
		return rc;
	rc = tfj_procmem_parse(out, text, len);
	free(text);
	return rc;
}

int tfj_procmem_metrics(struct tfj_buf *out)
{
	struct tfj_procmem m;

	if (tfj_procmem_read(&m))
		return 0;
	return tfj_buf_printf(out,
		"# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
		"# TYPE process_resident_memory_bytes gauge\n"
		"process_resident_memory_bytes %llu\n"
		"# HELP tfjob_operator_process_peak_resident_memory_bytes Highest resident "
		"memory size since the process started (VmHWM), in bytes.\n"
		"# TYPE tfjob_operator_process_peak_resident_memory_bytes gauge\n"
		"tfjob_operator_process_peak_resident_memory_bytes %llu\n",
		(unsigned long long)m.rss_bytes, (unsigned long long)m.peak_bytes)
		       ? TFJ_ETOOBIG : 0;
}
