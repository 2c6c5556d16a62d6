/*
 * test_procmem.c - reading resident memory and its peak from a
 * /proc/<pid>/status text, and from this process's own.
 */
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

#include "app/procmem.h"
#include "tfj_test.h"

static const char STATUS[] =
	"Name:\ttfjob-operator\nUmask:\t0022\nState:\tS (sleeping)\n"
	"VmPeak:\t  120000 kB\nVmSize:\t  110000 kB\nVmLck:\t       0 kB\n"
	"VmHWM:\t   41234 kB\nVmRSS:\t   20480 kB\nRssAnon:\t   10000 kB\n"
	"Threads:\t12\n";

static void test_parse(void)
{
	struct tfj_procmem m;

	TFJ_CHECK_INT(tfj_procmem_parse(&m, STATUS, strlen(STATUS)), 0);
	TFJ_CHECK_EQ(m.rss_bytes, 20480ull * 1024);
	TFJ_CHECK_EQ(m.peak_bytes, 41234ull * 1024);
	TFJ_CHECK_EQ(m.anon_bytes, 10000ull * 1024);
	/* RssAnon is optional: without it the other two are still read. */
	TFJ_CHECK_INT(tfj_procmem_parse(&m, "VmHWM:\t 12 kB\nVmRSS:\t 34 kB\n", 28), 0);
	TFJ_CHECK_EQ(m.rss_bytes, 34ull * 1024);
	TFJ_CHECK_EQ(m.anon_bytes, 0);
}

static void test_parse_refuses(void)
{
	static const char *bad[] = {
		"VmRSS:\t 1 kB\n",                         /* no VmHWM */
		"VmHWM:\t 1 kB\nVmRSS:\t kB\n",            /* no digits */
		"VmHWM:\t 1 MB\nVmRSS:\t 1 kB\n",          /* not kB */
		"VmHWM:\t 99999999999999999999 kB\nVmRSS:\t 1 kB\n", /* too large */
		"VmHWMx:\t 1 kB\nVmRSS:\t 1 kB\n",         /* another key */
		"",
	};
	struct tfj_procmem m;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		TFJ_CHECK_INT(tfj_procmem_parse(&m, bad[i], strlen(bad[i])), TFJ_EPARSE);
		TFJ_CHECK_EQ(m.peak_bytes, 0);
	}
	/* A text cut before the line ends is not read past its length. */
	TFJ_CHECK_INT(tfj_procmem_parse(&m, "VmHWM:\t 12 kB\nVmRSS:\t 34 kB", 14 + 9), TFJ_EPARSE);
}

/* This process: a peak at least the current size, and it follows growth. */
static void test_self(void)
{
	struct tfj_procmem before, after;
	size_t n = 32u << 20;
	char *p;

	TFJ_CHECK_INT(tfj_procmem_read(&before), 0);
	TFJ_CHECK(before.rss_bytes > 0 && before.peak_bytes >= before.rss_bytes);
	p = malloc(n);
	TFJ_CHECK(p != NULL);
	/* Every page touched through a volatile pointer: the compiler may not
	 * drop stores to a buffer nobody reads. */
	for (size_t i = 0; p && i < n; i += 4096)
		((volatile char *)p)[i] = 1;
	TFJ_CHECK_INT(tfj_procmem_read(&after), 0);
	TFJ_CHECK(after.peak_bytes >= before.rss_bytes + n - (1u << 20));
	free(p);
}

int main(void)
{
	TFJ_RUN(test_parse);
	TFJ_RUN(test_parse_refuses);
	TFJ_RUN(test_self);
	return tfj_test_finish();
}
