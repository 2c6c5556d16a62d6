/*
 * objstore.h - the object cache behind an informer.
 *
 * Keeps API objects keyed by "namespace/name" ("name" when cluster-scoped),
 * each as compact JSON text: a parsed cJSON tree is five to six times
 * larger, and readers get copies anyway. An optional label index maps
 * "namespace/<label value>" to the entries carrying that label (objindex.h),
 * so a reconcile finds a job's children without scanning the whole cache.
 *
 * Threads: one writer (the informer thread) calls put, delete and prune;
 * any thread may call get, select, list and size at the same time. A
 * read-write lock guards the map and the index; it is never held while a
 * caller's code runs (prune calls its callback with the lock released), so
 * a callback may read the store.
 *
 * Ownership:
 * - The store owns what it caches; put copies the object it is given.
 * - get, select and list return freshly parsed trees that are the caller's
 *   (cJSON_Delete; tfj_objstore_free_list for the arrays), so readers never
 *   share memory with the writer.
 * - An entry that put replaced or delete removed is handed to the writer,
 *   who owns it (tfj_objstore_entry_free) and may read its
 *   resourceVersion or parse it first, e.g. to report the old object.
 */
#ifndef TFJ_OBJSTORE_H
#define TFJ_OBJSTORE_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "kube/strmap.h"

/* Longest key (and index key) plus its NUL. */
#define TFJ_OBJSTORE_KEY_MAX 512

struct tfj_objstore;
/* One cached object taken out of the store (replaced or deleted). */
struct tfj_objstore_entry;

/*
 * A new empty store. index_label (copied; NULL for none) is the label whose
 * value, per namespace, tfj_objstore_select looks objects up by.
 */
int tfj_objstore_new(struct tfj_objstore **out, const char *index_label);
/* Frees the store and everything cached. Accepts NULL. */
void tfj_objstore_free(struct tfj_objstore *s);

/*
 * Cache key of an object: "ns/name" (or "name" when cluster-scoped) into
 * out. TFJ_EINVAL when metadata.name is missing, empty or too long. Pure.
 */
int tfj_objstore_key(char *out, size_t outlen, const cJSON *obj);

/*
 * Writer. Stores a copy of obj (the caller keeps obj) under key, indexing it
 * when it carries the index label. *prev gets the entry it replaced (the
 * caller's, free with tfj_objstore_entry_free) or NULL. On failure
 * (TFJ_ENOMEM) the store is unchanged and *prev is NULL. An object that
 * cannot be indexed for want of memory is still cached.
 */
int tfj_objstore_put(struct tfj_objstore_entry **prev, struct tfj_objstore *s,
		     const char *key, const cJSON *obj);
/*
 * Writer. Removes key; *prev gets the removed entry (the caller's) or NULL
 * when key was not cached. Cannot fail; returns 0.
 */
int tfj_objstore_delete(struct tfj_objstore_entry **prev, struct tfj_objstore *s,
			const char *key);

/*
 * Called by prune for each removed entry, with the store unlocked; `e` is
 * valid only during the call (prune frees it afterwards).
 */
typedef void (*tfj_objstore_gone_fn)(void *ud, const char *key,
				     const struct tfj_objstore_entry *e);
/*
 * Writer, for relists. Removes every cached key that is not in `keep` (a
 * set of keys; its values are ignored) and calls fn (may be NULL) for each.
 * Returns 0 or TFJ_ENOMEM; on failure nothing has been removed.
 */
int tfj_objstore_prune(struct tfj_objstore *s, const struct tfj_strmap *keep,
		       tfj_objstore_gone_fn fn, void *ud);

/*
 * Reader. *out gets a copy of the object ns/name (ns "" or NULL for
 * cluster-scoped), the caller's. TFJ_ENOTFOUND when not cached (no error
 * detail is recorded: a miss is routine), TFJ_EINVAL when the key is too
 * long, TFJ_ENOMEM.
 */
int tfj_objstore_get(cJSON **out, struct tfj_objstore *s, const char *ns, const char *name);
/*
 * Reader. The same object as its cached compact JSON text: *out (the
 * caller's, free()) holds *len bytes and a NUL. For readers that need a few
 * fields of a large object (jscan.h) or decode it their own way, so no tree
 * of the whole object is built. Errors as tfj_objstore_get.
 */
int tfj_objstore_get_text(char **out, size_t *len, struct tfj_objstore *s, const char *ns,
			  const char *name);
/*
 * Reader. Copies of the objects in namespace ns whose index label equals
 * value: *out is a malloc'd array of *n trees, free with
 * tfj_objstore_free_list (NULL and 0 when none). TFJ_ESTATE when the store
 * has no index label, TFJ_EINVAL when the index key is too long, TFJ_ENOMEM.
 */
int tfj_objstore_select(cJSON ***out, size_t *n, struct tfj_objstore *s, const char *ns,
			const char *value);
/* Reader. Copies of every cached object, as for select. */
int tfj_objstore_list(cJSON ***out, size_t *n, struct tfj_objstore *s);
/* Frees an array from select or list. Accepts NULL. */
void tfj_objstore_free_list(cJSON **list, size_t n);
/* Reader. Number of cached objects. */
size_t tfj_objstore_size(struct tfj_objstore *s);
/*
 * Reader. Bytes the cached objects hold: their text, resourceVersions and
 * entry structs (not the hash map's slots and keys, nor the index).
 */
size_t tfj_objstore_bytes(struct tfj_objstore *s);

/* The entry's metadata.resourceVersion, "" when it had none. */
const char *tfj_objstore_entry_rv(const struct tfj_objstore_entry *e);
/*
 * *out gets a new tree parsed from the entry (the caller's). 0 or a negative
 * code; only TFJ_ENOMEM in practice, as the text was printed from a tree.
 */
int tfj_objstore_entry_parse(cJSON **out, const struct tfj_objstore_entry *e);
/* Accepts NULL. */
void tfj_objstore_entry_free(struct tfj_objstore_entry *e);

#endif
