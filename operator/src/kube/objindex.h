/*
 * objindex.h - an informer cache's label index: for each index key
 * ("namespace/<label value>"), the set of cached entries carrying it.
 *
 * The sets hold pointers, not keys: the cache (objstore.c) keeps its
 * entries, and a reader of one job's children walks the set straight to
 * them. A set of key copies in a hash map cost about 90 bytes per cached
 * object (the copy, the map's node and slot; tfj-bench-cachemem), a third
 * of what the pod cache spent beyond the objects' own text; an array costs
 * a pointer. Sets are unordered arrays, so a removal scans one: they hold
 * one job's children, a few, a few thousand at most.
 *
 * Not thread-safe: the owner locks around it (objstore.c's lock).
 * Ownership: the index copies its keys and owns its arrays; the pointers
 * are the caller's, who keeps each alive while it is in the index.
 */
#ifndef TFJ_OBJINDEX_H
#define TFJ_OBJINDEX_H

#include <stddef.h>

#include "kube/strmap.h"

struct tfj_objindex {
	struct tfj_strmap sets;     /* index key -> its set (objindex.c) */
};

#define TFJ_OBJINDEX_INIT { TFJ_STRMAP_INIT }

/*
 * Puts p in key's set: in old's place when old is there (which cannot
 * fail), else added. *kept gets the index's own copy of key, valid while
 * p is in the set, so a caller need not keep one per pointer. 0 or
 * TFJ_ENOMEM; on failure the index is unchanged and *kept NULL. The caller
 * takes old out of another key's set itself (tfj_objindex_del).
 */
int tfj_objindex_add(const char **kept, struct tfj_objindex *x, const char *key, void *p,
		     const void *old);
/*
 * Takes p out of key's set, if there; an emptied set goes, and with it the
 * copy tfj_objindex_add handed out (key may be that copy). Cannot fail.
 */
void tfj_objindex_del(struct tfj_objindex *x, const char *key, const void *p);
/*
 * key's set: *out points at its n pointers (valid until the index next
 * changes), NULL and 0 when none.
 */
size_t tfj_objindex_get(void *const **out, const struct tfj_objindex *x, const char *key);
/* Frees the sets (not what they point at), not x itself. Accepts NULL. */
void tfj_objindex_free(struct tfj_objindex *x);

#endif
