/*
 * heap.h - the few calls that depend on which allocator serves malloc:
 * handing free memory back to the kernel, the heap's figures, the arena
 * limit.
 *
 * Three allocators can be behind malloc in our processes:
 *
 *   jemalloc  the operator links it (docs/operator.md, "Memory"): its
 *             watch path frees most of what it allocates within one event,
 *             which costs glibc's allocator far more CPU on a large heap;
 *   glibc     everything else (the agent, the runtime, the tests);
 *   none      AddressSanitizer's allocator, under which glibc's arenas are
 *             never set up (malloc_trim would walk them uninitialised).
 *
 * Which one is found at run time: jemalloc by its mallctl() entry point,
 * which the dynamic linker binds when the program links (or preloads)
 * libjemalloc; glibc's otherwise, unless the build is sanitized
 * (tfj/glibcheap.h). So tfj_common needs no allocator of its own, and a
 * program gets jemalloc by linking it, nothing else.
 *
 * Threads: all calls may be made from any thread.
 * Ownership: nothing is allocated.
 */
#ifndef TFJ_HEAP_H
#define TFJ_HEAP_H

#include <stdint.h>

enum tfj_heap_kind {
	TFJ_HEAP_NONE = 0, /* unknown allocator: nothing to trim or show */
	TFJ_HEAP_GLIBC,
	TFJ_HEAP_JEMALLOC,
};

struct tfj_heap_stats {
	uint64_t in_use; /* bytes handed out to the program */
	uint64_t free;   /* bytes the allocator holds free (resident until released or reused) */
};

/* The allocator behind malloc in this process. */
enum tfj_heap_kind tfj_heap_kind(void);

/* "jemalloc", "glibc" or "none". */
const char *tfj_heap_name(void);

/*
 * Hands the allocator's free memory back to the kernel: malloc_trim(0) on
 * glibc, a purge of every arena on jemalloc, nothing otherwise.
 */
void tfj_heap_release(void);

/*
 * The heap's figures into *out. glibc: mallinfo2 (in use: small chunks
 * plus blocks mmap'd on their own; free: free bytes inside the arenas).
 * jemalloc: stats.allocated, and stats.resident less allocated and
 * metadata. TFJ_EUNSUPP (out zeroed) without either allocator or when
 * jemalloc has no statistics.
 */
int tfj_heap_stats(struct tfj_heap_stats *out);

/*
 * At most n malloc arenas, for a process whose threads allocate little
 * each: glibc gives each thread that allocates its own arena (up to 8 per
 * core) and never reuses one arena's free memory in another. Only glibc's
 * limit can be set at run time, and only before the threads start; a
 * MALLOC_ARENA_MAX in the environment is left in charge. jemalloc's is set
 * by the program's malloc_conf (see the operator's main.c).
 */
void tfj_heap_limit_arenas(int n);

#endif
