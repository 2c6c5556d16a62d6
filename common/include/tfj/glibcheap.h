/*
 * glibcheap.h - whether malloc is glibc's, so that its own calls
 * (malloc_trim, mallinfo2) may be made.
 *
 * TFJ_GLIBC_HEAP is 1 on glibc unless AddressSanitizer replaces malloc:
 * then glibc's arenas are never set up, and malloc_trim walks them
 * uninitialised (a SEGV in mtrim, seen in the sanitized unit tests).
 * Header only.
 */
#ifndef TFJ_GLIBCHEAP_H
#define TFJ_GLIBCHEAP_H

/* Any libc header defines __GLIBC__ on glibc. */
#include <limits.h>

#define TFJ_GLIBC_HEAP 0
#if defined(__GLIBC__)
#undef TFJ_GLIBC_HEAP
#define TFJ_GLIBC_HEAP 1
#endif
#if defined(__SANITIZE_ADDRESS__)
#undef TFJ_GLIBC_HEAP
#define TFJ_GLIBC_HEAP 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#undef TFJ_GLIBC_HEAP
#define TFJ_GLIBC_HEAP 0
#endif
#endif

#endif
