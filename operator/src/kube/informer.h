/*
 * informer.h - a LIST+WATCH cache of one resource collection.
 *
 * One thread per informer: LIST (paged) to fill the cache, then WATCH from
 * the list's resourceVersion with allowWatchBookmarks. The watch is resumed
 * from the last seen resourceVersion when it ends normally; a 410 Gone, an
 * ERROR event, an oversized or undecodable line forces a relist (the cache
 * is then diffed against the new list, so consumers see the ADDs, UPDATEs
 * and DELETEs they missed). Network failures back off with jitter (1s
 * doubling to 30s) so a down API server sees no retry storm.
 *
 * Callbacks run on the informer thread after the cache was updated; `obj`
 * and `old` are valid only during the call (the transformed copies, except
 * for a watch DELETE, which reports the final state the server sent).
 *
 * Objects are decoded one by one (objdecode.h): a LIST page is split into
 * its items by a bounded scanner and each item parsed alone, and so is the
 * object of each watch event. An object that cannot be decoded (too deep,
 * too large, wrong types) is rejected alone: counted by reason, logged once
 * per key, kept out of the cache (a cached older version is dropped as if
 * deleted), and handed to the reject callback; every other object of the
 * page or stream is used as usual. LIST pages hold at most
 * TFJ_OBJDECODE_PAGE_SIZE objects so a page of the largest objects the API
 * server accepts fits the response cap.
 *
 * The cache is a tfj_objstore (objstore.h): each object kept as compact
 * JSON text (a parsed tree is five to six times larger), written only by
 * the informer thread; readers on other threads get freshly parsed copies
 * (tfj_informer_get/select), so they never race the thread.
 *
 * Ownership: the informer owns its cache; copies handed out are the
 * caller's (cJSON_Delete, and tfj_informer_free_list for select results).
 */
#ifndef TFJ_INFORMER_H
#define TFJ_INFORMER_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include <tfj/buf.h>

#include "kube/kube.h"
#include "kube/objdecode.h"

enum tfj_informer_event { TFJ_INF_ADD = 0, TFJ_INF_UPDATE, TFJ_INF_DELETE };

typedef void (*tfj_informer_fn)(void *ud, enum tfj_informer_event ev, const cJSON *obj,
				const cJSON *old);

/*
 * Builds the copy of an API object that the cache keeps (like client-go's
 * TransformFunc): applied to every LIST item and every ADDED/MODIFIED
 * event before it is cached, so callbacks and readers see only what it
 * kept. Must not modify obj; returns a new tree (the informer owns it) or
 * NULL when out of memory. See slim.h for the controller's transforms.
 */
typedef cJSON *(*tfj_informer_transform_fn)(const cJSON *obj);

/* An object the informer could not decode. */
struct tfj_informer_reject {
	const char *key;              /* "ns/name" when the scanner could read it, else NULL */
	const char *reason;           /* tfj_objdecode_reason_name: "depth", "size", ... */
	const char *detail;           /* the decoder's message */
	const char *text;             /* the object's bytes (not NUL-terminated) */
	size_t len;
};

/*
 * Called on the informer thread once per rejected key (again only after
 * the key was deleted, decoded fine or vanished from a relist), and for
 * every rejected object without a readable key. Must not block for long.
 */
typedef void (*tfj_informer_reject_fn)(void *ud, const struct tfj_informer_reject *r);

struct tfj_informer_opts {
	const char *name;            /* for logs and metrics: "tfjobs", "pods" */
	const char *path;            /* collection path, e.g. /api/v1/namespaces/ns/pods */
	const char *label_selector;  /* raw selector or NULL, e.g. "training.kubeflow.org/job-name" */
	const char *index_label;     /* label to index by (per namespace), or NULL */
	tfj_informer_fn fn;          /* may be NULL */
	tfj_informer_transform_fn transform; /* NULL: objects are cached whole */
	void *ud;
	long watch_timeout_s;        /* server-side timeoutSeconds (default 300, jittered) */
	size_t max_line;             /* watch line cap (default TFJ_WATCH_LINE_MAX_DEFAULT) */
	int page_size;               /* LIST limit (default and most TFJ_OBJDECODE_PAGE_SIZE) */
	tfj_informer_reject_fn reject; /* may be NULL */
	/*
	 * A LIST answered 404 (the collection is not served: its CRD is not
	 * installed) is an empty, synced collection rather than an error: the
	 * cache empties, tfj_informer_absent says 1, and the LIST is tried
	 * again every absent_relist_ms (0 = TFJ_INFORMER_ABSENT_RELIST_MS,
	 * jittered) until it is served.
	 */
	int absent_ok;
	long absent_relist_ms;
};

#define TFJ_INFORMER_ABSENT_RELIST_MS 30000

struct tfj_informer_stats {
	uint64_t lists;       /* completed LISTs (the first included) */
	uint64_t relists;     /* relists forced by 410/ERROR/bad lines */
	uint64_t events;      /* watch events applied */
	uint64_t errors;      /* failed LIST/WATCH calls */
	size_t size;          /* objects in the cache */
	size_t bytes;         /* bytes they hold (tfj_objstore_bytes) */
	uint64_t rejected[TFJ_OBJDECODE_NREASONS]; /* objects not decoded, by reason */
	uint64_t last_ok_ms;  /* monotonic ms of the last sign of a working LIST/WATCH, 0 never */
};

struct tfj_informer;

/* The options' strings are copied. */
int tfj_informer_new(struct tfj_informer **out, struct tfj_kube *k,
		     const struct tfj_informer_opts *o);
/* Starts the thread. */
int tfj_informer_start(struct tfj_informer *inf);
/* Asks the thread to stop and joins it (returns within about a second). */
void tfj_informer_stop(struct tfj_informer *inf);
/* Stops if needed and frees. Accepts NULL. */
void tfj_informer_free(struct tfj_informer *inf);

/* 1 once the first LIST has been loaded. */
int tfj_informer_synced(struct tfj_informer *inf);
/* Waits up to timeout_ms for the first LIST; 0 or TFJ_ETIMEOUT. */
int tfj_informer_wait_synced(struct tfj_informer *inf, long timeout_ms);

/* A copy of the cached object ns/name (ns "" for cluster-scoped), or NULL. */
cJSON *tfj_informer_get(struct tfj_informer *inf, const char *ns, const char *name);

/*
 * The cached object ns/name as compact JSON text (objstore.h's
 * tfj_objstore_get_text): *out is the caller's (free()). TFJ_ENOTFOUND when
 * not cached.
 */
int tfj_informer_get_text(char **out, size_t *len, struct tfj_informer *inf, const char *ns,
			  const char *name);
/*
 * Copies of all cached objects in namespace ns whose index label equals
 * `value` (needs opts.index_label). *out is a malloc'd array of *n trees;
 * free with tfj_informer_free_list.
 */
int tfj_informer_select(struct tfj_informer *inf, cJSON ***out, size_t *n, const char *ns,
			const char *value);
/* Copies of every cached object (for resyncs and tests). */
int tfj_informer_list_all(struct tfj_informer *inf, cJSON ***out, size_t *n);
void tfj_informer_free_list(cJSON **list, size_t n);

void tfj_informer_stats(struct tfj_informer *inf, struct tfj_informer_stats *out);
/* 1 while the last LIST found the collection not served (opts.absent_ok). */
int tfj_informer_absent(struct tfj_informer *inf);
const char *tfj_informer_name(const struct tfj_informer *inf);

/*
 * Milliseconds since the informer last had a working LIST or WATCH (a LIST
 * completed, an event arrived, or an open watch stream was seen alive; an
 * established watch counts about once a second). -1 before the first.
 * tfj_controller_ready compares it with the staleness bound.
 */
int64_t tfj_informer_idle_ms(struct tfj_informer *inf);

/*
 * Appends one line per cached object, "key resourceVersion\n", sorted by
 * key, to out: the cache as a LIST would show it, for comparing the two
 * (the controller's /debug/informers endpoint).
 */
int tfj_informer_dump(struct tfj_informer *inf, struct tfj_buf *out);

/*
 * Cache key of an object: "ns/name" (or "name" when cluster-scoped) into
 * out. TFJ_EINVAL when metadata.name is missing. Pure; the same as
 * tfj_objstore_key.
 */
int tfj_informer_key(char *out, size_t outlen, const cJSON *obj);

#endif
