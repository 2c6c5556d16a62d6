/*
 * heap.c - allocator-specific calls behind one interface (see heap.h).
 */
#include "tfj/heap.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/glibcheap.h>

#if TFJ_GLIBC_HEAP
#include <malloc.h>
#endif

/*
 * jemalloc's control call, bound only when libjemalloc is linked or
 * preloaded (its symbols are not prefixed in Debian's build). A weak
 * reference keeps this library free of a link dependency on it.
 */
extern int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen)
	__attribute__((weak));

/* jemalloc 5's MALLCTL_ARENAS_ALL: "arena.4096.<op>" acts on every arena. */
#define JE_ARENAS_ALL "4096"

enum tfj_heap_kind tfj_heap_kind(void)
{
	if (mallctl)
		return TFJ_HEAP_JEMALLOC;
	return TFJ_GLIBC_HEAP ? TFJ_HEAP_GLIBC : TFJ_HEAP_NONE;
}

const char *tfj_heap_name(void)
{
	switch (tfj_heap_kind()) {
	case TFJ_HEAP_JEMALLOC:
		return "jemalloc";
	case TFJ_HEAP_GLIBC:
		return "glibc";
	default:
		return "none";
	}
}

void tfj_heap_release(void)
{
	switch (tfj_heap_kind()) {
	case TFJ_HEAP_JEMALLOC:
		/* Dirty and muzzy pages of every arena go back at once. */
		(void)mallctl("arena." JE_ARENAS_ALL ".purge", NULL, NULL, NULL, 0);
		break;
	case TFJ_HEAP_GLIBC:
#if TFJ_GLIBC_HEAP
		malloc_trim(0);
#endif
		break;
	default:
		break;
	}
}

/* One size_t statistic of jemalloc's; 0 or TFJ_EUNSUPP. */
static int je_stat(uint64_t *out, const char *name)
{
	size_t v = 0, len = sizeof(v);

	if (mallctl(name, &v, &len, NULL, 0) || len != sizeof(v))
		return TFJ_EUNSUPP;
	*out = v;
	return 0;
}

static int je_stats(struct tfj_heap_stats *out)
{
	uint64_t epoch = 1, allocated, resident, metadata;
	size_t elen = sizeof(epoch);

	/* The statistics are a snapshot taken when the epoch advances. */
	if (mallctl("epoch", &epoch, &elen, &epoch, sizeof(epoch)))
		return TFJ_EUNSUPP;
	if (je_stat(&allocated, "stats.allocated") || je_stat(&resident, "stats.resident") ||
	    je_stat(&metadata, "stats.metadata"))
		return TFJ_EUNSUPP;
	out->in_use = allocated;
	out->free = resident > allocated + metadata ? resident - allocated - metadata : 0;
	return 0;
}

int tfj_heap_stats(struct tfj_heap_stats *out)
{
	int rc = TFJ_EUNSUPP;

	memset(out, 0, sizeof(*out));
	switch (tfj_heap_kind()) {
	case TFJ_HEAP_JEMALLOC:
		/* je_stats writes *out only when every figure was read. */
		rc = je_stats(out);
		break;
	case TFJ_HEAP_GLIBC: {
#if TFJ_GLIBC_HEAP
		struct mallinfo2 mi = mallinfo2();

		out->in_use = mi.uordblks + mi.hblkhd;
		out->free = mi.fordblks;
		rc = 0;
#endif
		break;
	}
	default:
		break;
	}
	return rc;
}

void tfj_heap_limit_arenas(int n)
{
#if TFJ_GLIBC_HEAP
	if (tfj_heap_kind() == TFJ_HEAP_GLIBC && n > 0 && !getenv("MALLOC_ARENA_MAX"))
		mallopt(M_ARENA_MAX, n);
#else
	(void)n;
#endif
}
