/*
 * informer.c - the LIST+WATCH loop, one thread per collection. The cache it
 * fills is objstore.c; this file only decides what goes into it and which
 * events to report.
 */
#include "kube/informer.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tfj/clock.h>
#include <tfj/err.h>
#include <tfj/heap.h>
#include <tfj/json.h>
#include <tfj/log.h>

#include "kube/jscan.h"
#include "kube/objdecode.h"
#include "kube/objmeta.h"
#include "kube/objstore.h"
#include "kube/ratelimit.h"
#include "kube/strmap.h"
#include "kube/watch.h"

#define KEY_MAX TFJ_OBJSTORE_KEY_MAX
#define RV_MAX 128
#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 30000

struct tfj_informer {
	struct tfj_kube *k;
	char *name, *path, *selector;
	tfj_informer_fn fn;
	tfj_informer_transform_fn transform;
	void *ud;
	long watch_timeout_s;
	size_t max_line;
	int page_size;
	tfj_informer_reject_fn reject;
	int absent_ok;
	long absent_relist_ms;
	_Atomic int absent;            /* the last LIST found no such collection */

	/* Written only by the thread, read by any (it locks itself). */
	struct tfj_objstore *store;

	pthread_mutex_t mu;            /* guards synced, stop, stats; cond for waits */
	pthread_cond_t cond;
	int synced;
	_Atomic int stop;       /* read by the thread and curl's progress callback */
	int started;
	pthread_t thread;
	struct tfj_informer_stats st;
	/* Monotonic ms of the last working LIST/WATCH; also set by curl's progress
	 * callback while a watch is open, hence atomic rather than under mu. */
	_Atomic uint64_t last_ok_ms;

	/* Thread-only state. */
	struct tfj_strmap rejected;  /* keys rejected and already reported */
	struct tfj_strmap *list_rejected; /* during a LIST: the keys it rejected */
	char rv[RV_MAX];
	struct tfj_watch_framer framer;
	int need_relist;
	uint64_t rand_state;
};

static uint64_t rnd(struct tfj_informer *inf)
{
	/* xorshift64: jitter only, no security use. */
	uint64_t x = inf->rand_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	inf->rand_state = x;
	return x;
}

int tfj_informer_key(char *out, size_t outlen, const cJSON *obj)
{
	return tfj_objstore_key(out, outlen, obj);
}

static void notify(struct tfj_informer *inf, enum tfj_informer_event ev, const cJSON *obj,
		   const cJSON *old)
{
	if (inf->fn)
		inf->fn(inf->ud, ev, obj, old);
}

static int same_rv(const struct tfj_objstore_entry *old, const cJSON *obj)
{
	const char *rv = tfj_objmeta_str(obj, "resourceVersion");
	const char *was = tfj_objstore_entry_rv(old);

	return rv && *was && strcmp(was, rv) == 0;
}

/* Fires ev for a cached entry (parsed for the call; skipped without a callback). */
static void notify_entry(struct tfj_informer *inf, enum tfj_informer_event ev,
			 const cJSON *obj, const struct tfj_objstore_entry *e)
{
	cJSON *parsed = NULL;

	if (!inf->fn)
		return;
	if (tfj_objstore_entry_parse(&parsed, e))
		parsed = NULL;
	if (ev == TFJ_INF_DELETE) {
		if (parsed)
			notify(inf, ev, parsed, NULL);
	} else {
		notify(inf, ev, obj, parsed);
	}
	cJSON_Delete(parsed);
}

/* Applies an upsert of obj (owned) and fires ADD or UPDATE. */
static int apply_upsert(struct tfj_informer *inf, cJSON *obj)
{
	char key[KEY_MAX];
	struct tfj_objstore_entry *old = NULL;
	int rc = 0;

	if (tfj_informer_key(key, sizeof(key), obj))
		goto out; /* cannot be named: dropped (the watch decoder already checks) */
	if ((rc = tfj_objstore_put(&old, inf->store, key, obj))) {
		rc = tfj_err_set(rc, "informer %s: caching an object", inf->name);
		goto out;
	}
	/* A relist hands back unchanged objects: same resourceVersion, no event. */
	if (!old)
		notify(inf, TFJ_INF_ADD, obj, NULL);
	else if (!same_rv(old, obj))
		notify_entry(inf, TFJ_INF_UPDATE, obj, old);
out:
	tfj_objstore_entry_free(old);
	cJSON_Delete(obj);
	return rc;
}

/* The object as the cache keeps it: transformed, or a whole copy. */
static cJSON *cache_copy(struct tfj_informer *inf, const cJSON *obj)
{
	return inf->transform ? inf->transform(obj) : cJSON_Duplicate(obj, 1);
}

/* ---- objects that cannot be decoded ---- */

static void mark_alive(struct tfj_informer *inf)
{
	atomic_store(&inf->last_ok_ms, tfj_clock_mono_ns() / 1000000 + 1);
}

/* A key decoded fine again (or deleted): a later rejection is news again. */
static void forget_rejected(struct tfj_informer *inf, const char *key)
{
	tfj_strmap_del(&inf->rejected, key);
}

/* Drops key from the cache, reporting the cached version deleted. */
static void drop_cached(struct tfj_informer *inf, const char *key)
{
	struct tfj_objstore_entry *old = NULL;

	tfj_objstore_delete(&old, inf->store, key);
	if (old)
		notify_entry(inf, TFJ_INF_DELETE, NULL, old);
	tfj_objstore_entry_free(old);
}

static void count_reject(struct tfj_informer *inf, enum tfj_objdecode_reason why)
{
	pthread_mutex_lock(&inf->mu);
	inf->st.rejected[why < TFJ_OBJDECODE_NREASONS ? why : TFJ_OBJDECODE_TYPE]++;
	pthread_mutex_unlock(&inf->mu);
}

/*
 * Counts an object that cannot be decoded; the first time for its key it is
 * logged and handed to the reject callback. A cached older version is dropped
 * and reported deleted: the cache holds only what decodes. The key (or "" when
 * unreadable) goes to key_out, so a relist counts it as seen.
 */
static int reject_object(struct tfj_informer *inf, enum tfj_objdecode_reason why,
			 struct tfj_jscan_span raw, char *key_out, size_t keylen)
{
	struct tfj_informer_reject r;
	char detail[TFJ_ERR_DETAIL_MAX];
	int have_key, rc = 0;

	snprintf(detail, sizeof(detail), "%s", tfj_err_detail());
	have_key = tfj_objdecode_key(key_out, keylen, raw) == 0;
	if (!have_key)
		key_out[0] = '\0';
	count_reject(inf, why);
	if (have_key) {
		if (inf->list_rejected &&
		    (rc = tfj_strmap_put(inf->list_rejected, key_out, NULL, NULL)))
			return rc;
		drop_cached(inf, key_out);
		if (tfj_strmap_has(&inf->rejected, key_out))
			return 0; /* reported already */
		if ((rc = tfj_strmap_put(&inf->rejected, key_out, NULL, NULL)))
			return rc;
	}
	tfj_log_warn("object cannot be decoded; skipped", "informer", inf->name, "key",
		     have_key ? key_out : "(unreadable)", "reason", tfj_objdecode_reason_name(why),
		     "error", detail);
	if (inf->reject) {
		r.key = have_key ? key_out : NULL;
		r.reason = tfj_objdecode_reason_name(why);
		r.detail = detail;
		r.text = raw.p;
		r.len = raw.n;
		inf->reject(inf->ud, &r);
	}
	return 0;
}

/* ---- LIST ---- */

/* Relist diff: an object that vanished while we were not watching. */
static void on_gone(void *ud, const char *key, const struct tfj_objstore_entry *e)
{
	(void)key;
	notify_entry(ud, TFJ_INF_DELETE, NULL, e);
}

static int build_path(struct tfj_informer *inf, char *out, size_t outlen, int watch,
		      const char *cont)
{
	char sel[1024] = "", c[2048] = "";
	int n;

	if (inf->selector && tfj_kube_escape(sel, sizeof(sel), inf->selector))
		return TFJ_ETOOBIG;
	if (cont && tfj_kube_escape(c, sizeof(c), cont))
		return TFJ_ETOOBIG;
	if (watch) {
		/* Spread watch rollovers so informers do not reconnect in step. */
		long t = inf->watch_timeout_s + (long)(rnd(inf) % (uint64_t)(inf->watch_timeout_s / 4 + 1));
		n = snprintf(out, outlen,
			     "%s?watch=1&allowWatchBookmarks=true&timeoutSeconds=%ld"
			     "&resourceVersion=%s%s%s",
			     inf->path, t, inf->rv, *sel ? "&labelSelector=" : "", sel);
	} else {
		n = snprintf(out, outlen, "%s?limit=%d%s%s%s%s", inf->path, inf->page_size,
			     *sel ? "&labelSelector=" : "", sel, *c ? "&continue=" : "", c);
	}
	if (n < 0 || (size_t)n >= outlen)
		return tfj_err_set(TFJ_ETOOBIG, "informer %s: request path too long", inf->name);
	return 0;
}

/* One LIST item: decoded and cached, or rejected alone. */
static int list_item(struct tfj_informer *inf, struct tfj_strmap *seen, struct tfj_jscan_span it)
{
	enum tfj_objdecode_reason why;
	char key[KEY_MAX];
	cJSON *obj = NULL, *copy;
	int rc;

	if (tfj_objdecode_object(&obj, &why, it.p, it.n, TFJ_OBJDECODE_MAX) ||
	    tfj_informer_key(key, sizeof(key), obj)) {
		if (obj) {
			why = TFJ_OBJDECODE_TYPE; /* a name the cache cannot key */
			cJSON_Delete(obj);
		}
		return reject_object(inf, why, it, key, sizeof(key));
	}
	copy = cache_copy(inf, obj);
	cJSON_Delete(obj);
	if (!copy)
		return tfj_err_set(TFJ_ENOMEM, "informer copy");
	forget_rejected(inf, key);
	if ((rc = tfj_strmap_put(seen, key, NULL, NULL))) {
		cJSON_Delete(copy);
		return rc;
	}
	return apply_upsert(inf, copy);
}

/*
 * One LIST page. The body is split with the scanner and each item decoded
 * alone (objdecode.h): nothing one item contains can fail the page.
 */
static int list_page(struct tfj_informer *inf, struct tfj_strmap *seen, char *cont,
		     size_t contlen, const char *path)
{
	struct tfj_objdecode_page pg;
	struct tfj_jscan_span it;
	struct tfj_buf body;
	int rc, more;

	tfj_buf_init(&body, TFJ_KUBE_MAX_BODY_DEFAULT);
	if ((rc = tfj_kube_do(inf->k, TFJ_KUBE_LIST, path, NULL, NULL, 0, &body, NULL)))
		goto out;
	if ((rc = tfj_objdecode_page(&pg, body.ptr ? body.ptr : "", body.len))) {
		rc = tfj_err_set(rc, "informer %s: %s", inf->name, tfj_err_detail());
		goto out;
	}
	while ((more = tfj_jscan_iter_next(&it, &pg.items)) == 1)
		if ((rc = list_item(inf, seen, it)))
			goto out;
	if (more < 0) {
		rc = tfj_err_set(TFJ_EPARSE, "informer %s: list items: %s", inf->name,
				 tfj_err_detail());
		goto out;
	}
	if (strlen(pg.cont) >= contlen) {
		rc = tfj_err_set(TFJ_ETOOBIG, "informer %s: continue token too long", inf->name);
		goto out;
	}
	snprintf(cont, contlen, "%s", pg.cont);
	snprintf(inf->rv, sizeof(inf->rv), "%s", pg.rv);
out:
	tfj_buf_free(&body);
	return rc;
}

static int do_list(struct tfj_informer *inf)
{
	struct tfj_strmap seen = TFJ_STRMAP_INIT, rejected = TFJ_STRMAP_INIT;
	char path[TFJ_KUBE_MAX_PATH], cont[1024] = "";
	int rc = 0;

	inf->list_rejected = &rejected;
	do {
		if ((rc = build_path(inf, path, sizeof(path), 0, *cont ? cont : NULL)))
			goto out;
		rc = list_page(inf, &seen, cont, sizeof(cont), path);
		/* Not served (absent_ok): an empty list, so the cache empties. */
		if (rc == TFJ_ENOTFOUND && inf->absent_ok && !*cont) {
			if (!atomic_exchange(&inf->absent, 1))
				tfj_log_info("collection not served; listed again later", "informer",
					     inf->name);
			rc = 0;
			break;
		}
		if (rc)
			goto out;
		if (!*cont && atomic_exchange(&inf->absent, 0))
			tfj_log_info("collection served", "informer", inf->name);
	} while (*cont);

	/* Objects cached but absent from the list were deleted while we were not watching. */
	if ((rc = tfj_objstore_prune(inf->store, &seen, on_gone, inf)))
		goto out;
	/* Rejected keys that are gone or fixed may be reported again later. */
	tfj_strmap_free(&inf->rejected, NULL);
	inf->rejected = rejected;
	rejected = (struct tfj_strmap)TFJ_STRMAP_INIT;
	mark_alive(inf);
	pthread_mutex_lock(&inf->mu);
	inf->st.lists++;
	inf->synced = 1;
	pthread_cond_broadcast(&inf->cond);
	pthread_mutex_unlock(&inf->mu);
out:
	inf->list_rejected = NULL;
	tfj_strmap_free(&rejected, NULL);
	tfj_strmap_free(&seen, NULL);
	return rc;
}

/* ---- WATCH ---- */

static int on_line(void *ud, const char *line, size_t len)
{
	struct tfj_informer *inf = ud;
	struct tfj_watch_event ev;
	char key[KEY_MAX];
	int rc;

	rc = tfj_watch_decode(&ev, line, len, inf->max_line);
	if (rc) {
		tfj_log_warn("bad watch event; relisting", "informer", inf->name,
			     "error", tfj_err_detail());
		inf->need_relist = 1;
		return rc;
	}
	mark_alive(inf);
	pthread_mutex_lock(&inf->mu);
	inf->st.events++;
	pthread_mutex_unlock(&inf->mu);
	if (ev.reject != TFJ_OBJDECODE_OK) {
		/* The line was fine, its object is not: skip it alone. A deleted
		 * one leaves the cache and the set of reported keys. */
		if (ev.type != TFJ_WATCH_DELETED) {
			rc = reject_object(inf, ev.reject, ev.raw, key, sizeof(key));
		} else {
			count_reject(inf, ev.reject);
			if (tfj_objdecode_key(key, sizeof(key), ev.raw) == 0) {
				drop_cached(inf, key);
				forget_rejected(inf, key);
			}
		}
		if (ev.rv && strlen(ev.rv) < RV_MAX)
			snprintf(inf->rv, sizeof(inf->rv), "%s", ev.rv);
		tfj_watch_event_free(&ev);
		return rc;
	}
	switch (ev.type) {
	case TFJ_WATCH_ERROR:
		tfj_log_info("watch ERROR event; relisting", "informer", inf->name,
			     "code", ev.code == 410 ? "410" : "other");
		inf->need_relist = 1;
		rc = tfj_err_set(ev.code == 410 ? TFJ_EGONE : TFJ_EIO, "watch error event");
		break;
	case TFJ_WATCH_BOOKMARK:
		break;
	case TFJ_WATCH_ADDED:
	case TFJ_WATCH_MODIFIED: {
		cJSON *obj;
		if (tfj_informer_key(key, sizeof(key), ev.object)) {
			/* Decoded, yet no key the cache can hold (too long). */
			rc = reject_object(inf, TFJ_OBJDECODE_TYPE, ev.raw, key, sizeof(key));
			break;
		}
		forget_rejected(inf, key);
		obj = inf->transform ? inf->transform(ev.object) : ev.root;
		if (ev.rv && strlen(ev.rv) < RV_MAX)
			snprintf(inf->rv, sizeof(inf->rv), "%s", ev.rv);
		if (obj == ev.root)
			ev.root = NULL; /* moved to the cache */
		ev.object = NULL;
		ev.rv = NULL;
		/* The whole event is not needed past this point: free it before
		 * the callbacks run, so only the cached copy stays alive. */
		tfj_watch_event_free(&ev);
		return obj ? apply_upsert(inf, obj) : tfj_err_set(TFJ_ENOMEM, "informer copy");
	}
	case TFJ_WATCH_DELETED:
		if (tfj_informer_key(key, sizeof(key), ev.object) == 0) {
			struct tfj_objstore_entry *old;

			forget_rejected(inf, key);
			tfj_objstore_delete(&old, inf->store, key);
			/* Report the final state the server sent, not the cached one. */
			notify(inf, TFJ_INF_DELETE, ev.object, NULL);
			tfj_objstore_entry_free(old);
		}
		break;
	}
	if (ev.rv && strlen(ev.rv) < RV_MAX && ev.type != TFJ_WATCH_ERROR)
		snprintf(inf->rv, sizeof(inf->rv), "%s", ev.rv);
	tfj_watch_event_free(&ev);
	return rc;
}

static int on_chunk(void *ud, const char *data, size_t len)
{
	struct tfj_informer *inf = ud;
	int rc;

	if (len == 0) {
		/* The client's heartbeat: the watch is established and open. */
		mark_alive(inf);
		return 0;
	}
	rc = tfj_watch_framer_feed(&inf->framer, data, len, on_line, inf);
	if (rc == TFJ_ETOOBIG) {
		tfj_log_warn("watch line over the cap; relisting", "informer", inf->name);
		inf->need_relist = 1;
	}
	return rc;
}

static int do_watch(struct tfj_informer *inf)
{
	char path[TFJ_KUBE_MAX_PATH];
	int rc;

	if ((rc = build_path(inf, path, sizeof(path), 1, NULL)))
		return rc;
	tfj_watch_framer_reset(&inf->framer);
	rc = tfj_kube_stream(inf->k, path, on_chunk, inf, &inf->stop,
			     inf->watch_timeout_s * 2 + 30);
	/* One large event would otherwise keep its line buffer for good. */
	tfj_watch_framer_free(&inf->framer);
	tfj_watch_framer_init(&inf->framer, inf->max_line);
	if (rc == TFJ_EGONE)
		inf->need_relist = 1;
	return rc;
}

/* Sleeps up to ms, waking early on stop. */
static void nap(struct tfj_informer *inf, long ms)
{
	struct timespec ts;
	tfj_clock_deadline(&ts, ms > 0 ? (uint64_t)ms : 0);
	pthread_mutex_lock(&inf->mu);
	while (!inf->stop && pthread_cond_timedwait(&inf->cond, &inf->mu, &ts) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&inf->mu);
}

static long jitter(struct tfj_informer *inf, long base)
{
	/* base/2 .. base*3/2 */
	return base / 2 + (long)(rnd(inf) % (uint64_t)(base + 1));
}

static void count_error(struct tfj_informer *inf)
{
	pthread_mutex_lock(&inf->mu);
	inf->st.errors++;
	pthread_mutex_unlock(&inf->mu);
}

/*
 * A LIST parses page_size full objects, one at a time, and frees them
 * again; the allocator keeps such freed memory. Hand it back to the kernel
 * once the cache holds only its trimmed copies.
 */
static void release_free_memory(void)
{
	tfj_heap_release();
}

static void *run(void *arg)
{
	struct tfj_informer *inf = arg;
	long backoff = BACKOFF_MIN_MS;
	int rc;

	while (!inf->stop) {
		rc = do_list(inf);
		if (rc) {
			count_error(inf);
			tfj_log_warn("list failed", "informer", inf->name, "error", tfj_err_detail());
			nap(inf, jitter(inf, backoff));
			backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
			continue;
		}
		inf->need_relist = 0;
		release_free_memory();
		if (atomic_load(&inf->absent)) {
			/* Nothing to watch: look again later (absent_ok). */
			nap(inf, jitter(inf, inf->absent_relist_ms));
			continue;
		}
		while (!inf->stop && !inf->need_relist) {
			uint64_t t0 = tfj_clock_mono_ns();
			rc = do_watch(inf);
			if (inf->stop)
				break;
			if (rc == 0 || tfj_clock_mono_ns() - t0 > 10000000000ull)
				backoff = BACKOFF_MIN_MS; /* a healthy watch resets the backoff */
			if (rc == 0)
				continue;
			if (inf->need_relist) {
				pthread_mutex_lock(&inf->mu);
				inf->st.relists++;
				pthread_mutex_unlock(&inf->mu);
			} else {
				count_error(inf);
				tfj_log_warn("watch failed; reconnecting", "informer", inf->name,
					     "error", tfj_err_detail());
			}
			nap(inf, jitter(inf, backoff));
			backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
		}
	}
	return NULL;
}

static int dup_opt(char **out, const char *s)
{
	*out = NULL;
	if (!s)
		return 0;
	*out = strdup(s);
	return *out ? 0 : tfj_err_set(TFJ_ENOMEM, "informer");
}

int tfj_informer_new(struct tfj_informer **out, struct tfj_kube *k,
		     const struct tfj_informer_opts *o)
{
	struct tfj_informer *inf;
	int rc;

	*out = NULL;
	if (!o || !o->path || o->path[0] != '/' || !o->name)
		return tfj_err_set(TFJ_EINVAL, "informer: path and name required");
	inf = calloc(1, sizeof(*inf));
	if (!inf)
		return tfj_err_set(TFJ_ENOMEM, "informer");
	pthread_mutex_init(&inf->mu, NULL);
	tfj_clock_cond_init(&inf->cond);
	inf->k = k;
	inf->fn = o->fn;
	inf->transform = o->transform;
	inf->ud = o->ud;
	inf->watch_timeout_s = o->watch_timeout_s > 0 ? o->watch_timeout_s : 300;
	inf->absent_ok = o->absent_ok;
	inf->absent_relist_ms = o->absent_relist_ms > 0 ? o->absent_relist_ms
						       : TFJ_INFORMER_ABSENT_RELIST_MS;
	inf->max_line = o->max_line ? o->max_line : TFJ_WATCH_LINE_MAX_DEFAULT;
	/* Never more than a page of the largest objects that fits the body cap. */
	inf->page_size = o->page_size > 0 && o->page_size < TFJ_OBJDECODE_PAGE_SIZE
				 ? o->page_size : TFJ_OBJDECODE_PAGE_SIZE;
	inf->reject = o->reject;
	inf->rand_state = tfj_clock_mono_ns() | 1;
	tfj_watch_framer_init(&inf->framer, inf->max_line);
	if ((rc = dup_opt(&inf->name, o->name)) || (rc = dup_opt(&inf->path, o->path)) ||
	    (rc = dup_opt(&inf->selector, o->label_selector)) ||
	    (rc = tfj_objstore_new(&inf->store, o->index_label))) {
		tfj_informer_free(inf);
		return rc;
	}
	*out = inf;
	return 0;
}

int tfj_informer_start(struct tfj_informer *inf)
{
	if (inf->started)
		return tfj_err_set(TFJ_ESTATE, "informer %s already started", inf->name);
	inf->stop = 0;
	if (pthread_create(&inf->thread, NULL, run, inf) != 0)
		return tfj_err_set(TFJ_ENOMEM, "informer %s: thread", inf->name);
	inf->started = 1;
	return 0;
}

void tfj_informer_stop(struct tfj_informer *inf)
{
	if (!inf || !inf->started)
		return;
	pthread_mutex_lock(&inf->mu);
	inf->stop = 1;
	pthread_cond_broadcast(&inf->cond);
	pthread_mutex_unlock(&inf->mu);
	pthread_join(inf->thread, NULL);
	inf->started = 0;
}

void tfj_informer_free(struct tfj_informer *inf)
{
	if (!inf)
		return;
	tfj_informer_stop(inf);
	tfj_objstore_free(inf->store);
	tfj_strmap_free(&inf->rejected, NULL);
	tfj_watch_framer_free(&inf->framer);
	pthread_mutex_destroy(&inf->mu);
	pthread_cond_destroy(&inf->cond);
	free(inf->name);
	free(inf->path);
	free(inf->selector);
	free(inf);
}

int tfj_informer_synced(struct tfj_informer *inf)
{
	int s;
	pthread_mutex_lock(&inf->mu);
	s = inf->synced;
	pthread_mutex_unlock(&inf->mu);
	return s;
}

int tfj_informer_wait_synced(struct tfj_informer *inf, long timeout_ms)
{
	struct timespec ts;
	int rc = 0;

	tfj_clock_deadline(&ts, timeout_ms > 0 ? (uint64_t)timeout_ms : 0);
	pthread_mutex_lock(&inf->mu);
	while (!inf->synced && !inf->stop && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&inf->cond, &inf->mu, &ts);
	rc = inf->synced ? 0 : tfj_err_set(TFJ_ETIMEOUT, "informer %s: not synced", inf->name);
	pthread_mutex_unlock(&inf->mu);
	return rc;
}

cJSON *tfj_informer_get(struct tfj_informer *inf, const char *ns, const char *name)
{
	cJSON *copy = NULL;

	/* Not cached, or no memory for the copy: the caller sees "absent". */
	if (tfj_objstore_get(&copy, inf->store, ns, name))
		return NULL;
	return copy;
}

int tfj_informer_get_text(char **out, size_t *len, struct tfj_informer *inf, const char *ns,
			  const char *name)
{
	return tfj_objstore_get_text(out, len, inf->store, ns, name);
}

int tfj_informer_select(struct tfj_informer *inf, cJSON ***out, size_t *n, const char *ns,
			const char *value)
{
	int rc = tfj_objstore_select(out, n, inf->store, ns, value);

	if (rc == TFJ_ESTATE)
		rc = tfj_err_set(TFJ_ESTATE, "informer %s has no index", inf->name);
	return rc;
}

int tfj_informer_list_all(struct tfj_informer *inf, cJSON ***out, size_t *n)
{
	return tfj_objstore_list(out, n, inf->store);
}

void tfj_informer_free_list(cJSON **list, size_t n)
{
	tfj_objstore_free_list(list, n);
}

void tfj_informer_stats(struct tfj_informer *inf, struct tfj_informer_stats *out)
{
	pthread_mutex_lock(&inf->mu);
	*out = inf->st;
	pthread_mutex_unlock(&inf->mu);
	out->size = tfj_objstore_size(inf->store);
	out->bytes = tfj_objstore_bytes(inf->store);
	out->last_ok_ms = atomic_load(&inf->last_ok_ms);
}

int64_t tfj_informer_idle_ms(struct tfj_informer *inf)
{
	uint64_t last = atomic_load(&inf->last_ok_ms), now = tfj_clock_mono_ns() / 1000000 + 1;

	if (!last)
		return -1;
	return now > last ? (int64_t)(now - last) : 0;
}

static int cmp_lines(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int tfj_informer_dump(struct tfj_informer *inf, struct tfj_buf *out)
{
	cJSON **objs = NULL;
	char **lines = NULL;
	size_t n = 0, m = 0;
	int rc;

	if ((rc = tfj_objstore_list(&objs, &n, inf->store)))
		return rc;
	lines = calloc(n ? n : 1, sizeof(*lines));
	if (!lines) {
		rc = tfj_err_set(TFJ_ENOMEM, "informer dump");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		char key[KEY_MAX], line[KEY_MAX + RV_MAX + 2];
		const char *rv = tfj_objmeta_str(objs[i], "resourceVersion");
		if (tfj_informer_key(key, sizeof(key), objs[i]))
			continue;
		snprintf(line, sizeof(line), "%s %s\n", key, rv ? rv : "");
		if (!(lines[m] = strdup(line))) {
			rc = tfj_err_set(TFJ_ENOMEM, "informer dump");
			goto out;
		}
		m++;
	}
	qsort(lines, m, sizeof(*lines), cmp_lines);
	for (size_t i = 0; i < m && rc == 0; i++)
		rc = tfj_buf_puts(out, lines[i]);
out:
	for (size_t i = 0; i < m; i++)
		free(lines[i]);
	free(lines);
	tfj_objstore_free_list(objs, n);
	return rc;
}

const char *tfj_informer_name(const struct tfj_informer *inf)
{
	return inf->name;
}

int tfj_informer_absent(struct tfj_informer *inf)
{
	return atomic_load(&inf->absent);
}
