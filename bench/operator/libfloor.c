/*
 * libfloor.c - the resident memory that the operator's shared libraries cost
 * before any of the operator's own code runs.
 *
 * bench/run links it (with --no-as-needed) against the libraries the
 * tfjob-operator binary names as DT_NEEDED, in the same order, so the dynamic
 * loader maps, relocates and initialises exactly the same set (libcurl,
 * OpenSSL, gRPC core with its Abseil libraries, libmicrohttpd with GnuTLS,
 * ...). main() then only reads /proc/self/status. Its VmRSS is therefore
 * the floor no change to the operator's code can go below; the operator's
 * own cost is what its RSS adds on top (docs/benchmarks.md, operator figures).
 * Output: one JSON object.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kB value of FIELD in /proc/self/status, or -1. */
static long status_kb(const char *field)
{
	char line[256];
	size_t len = strlen(field);
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, field, len) == 0 && line[len] == ':') {
			char *end;

			kb = strtol(line + len + 1, &end, 10);
			if (end == line + len + 1)
				kb = -1;
			break;
		}
	}
	fclose(f);
	return kb;
}

int main(void)
{
	long rss = status_kb("VmRSS"), anon = status_kb("RssAnon"), file = status_kb("RssFile");

	if (rss < 0 || anon < 0 || file < 0) {
		fprintf(stderr, "libfloor: cannot read /proc/self/status\n");
		return 1;
	}
	printf("{\"rss_mib\": %.1f, \"rss_anon_mib\": %.1f, \"rss_file_mib\": %.1f}\n",
	       (double)rss / 1024.0, (double)anon / 1024.0, (double)file / 1024.0);
	return 0;
}
