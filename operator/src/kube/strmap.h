/*
 * strmap.h - a string-keyed hash map (separate chaining), used by the
 * informer caches, the work queue's sets and the expectations table.
 *
 * Not thread-safe: the owner locks around it. Keys are copied; values are
 * the caller's (the map never frees them, tfj_strmap_free takes an optional
 * destructor).
 */
#ifndef TFJ_STRMAP_H
#define TFJ_STRMAP_H

#include <stddef.h>

struct tfj_strmap_ent {
	struct tfj_strmap_ent *next;
	void *val;
	size_t hash;
	char key[];
};

struct tfj_strmap {
	struct tfj_strmap_ent **b;
	size_t nb;     /* buckets, a power of two (0 before the first put) */
	size_t n;      /* entries */
};

#define TFJ_STRMAP_INIT { NULL, 0, 0 }

/* The value under key, or NULL. */
void *tfj_strmap_get(const struct tfj_strmap *m, const char *key);
/*
 * The map's own copy of key, or NULL when absent: valid until key is
 * deleted or the map freed (growing the table does not move it).
 */
const char *tfj_strmap_key(const struct tfj_strmap *m, const char *key);
/* 1 if key is present (even with a NULL value). */
int tfj_strmap_has(const struct tfj_strmap *m, const char *key);
/*
 * Inserts or replaces. *old (may be NULL) gets the replaced value, or NULL.
 * Returns 0 or TFJ_ENOMEM.
 */
int tfj_strmap_put(struct tfj_strmap *m, const char *key, void *val, void **old);
/* Removes key; returns its value (NULL if absent). */
void *tfj_strmap_del(struct tfj_strmap *m, const char *key);
/*
 * Calls fn for every entry; fn returns nonzero to stop. fn must not change
 * the map.
 */
int tfj_strmap_each(const struct tfj_strmap *m,
		    int (*fn)(void *ud, const char *key, void *val), void *ud);
/* Frees the table, calling destroy(value) for each entry when non-NULL. */
void tfj_strmap_free(struct tfj_strmap *m, void (*destroy)(void *val));

#endif
