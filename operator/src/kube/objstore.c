/*
 * objstore.c - an informer's cache: objects as compact JSON text, keyed by
 * namespace/name, with an optional per-namespace label index.
 */
#include "kube/objstore.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/json.h>

#include "kube/objindex.h"

/*
 * A cached object is kept as compact JSON text, not as a cJSON tree: a tree
 * costs a node (64 bytes) plus separately allocated key and value strings
 * per field, five to six times the text, and readers get copies anyway.
 * The entry, its text and resourceVersion are one allocation: small ones
 * more cost about 50 bytes of chunk headers and rounding per object
 * (tfj-bench-cachemem), 5 % of a cached pod. The index key is the index's
 * own copy (objindex.h), one per job instead of one per object.
 */
struct tfj_objstore_entry {
	size_t len;        /* of the text */
	const char *rv;    /* its metadata.resourceVersion, "" when absent (in data) */
	const char *idx;   /* "ns/labelvalue" it is indexed under (the index's copy), or NULL */
	char data[];       /* the object as compact JSON, NUL, rv, NUL */
};

struct tfj_objstore {
	char *index_label;          /* NULL: no index */
	pthread_rwlock_t lock;      /* guards cache and index */
	struct tfj_strmap cache;    /* key -> struct tfj_objstore_entry* */
	struct tfj_objindex index;  /* idx -> the entries cached now (objindex.h) */
	size_t bytes;               /* what the cached entries hold (entry_bytes) */
};

int tfj_objstore_key(char *out, size_t outlen, const cJSON *obj)
{
	const cJSON *meta;
	const char *ns, *name;
	int n;

	if (tfj_json_get_object(&meta, obj, "metadata") ||
	    tfj_json_get_string(&name, meta, "name") ||
	    tfj_json_opt_string(&ns, meta, "namespace", ""))
		return tfj_err_set(TFJ_EINVAL, "object without metadata.name");
	n = *ns ? snprintf(out, outlen, "%s/%s", ns, name) : snprintf(out, outlen, "%s", name);
	if (n < 0 || (size_t)n >= outlen || !*name)
		return tfj_err_set(TFJ_EINVAL, "object key too long or empty");
	return 0;
}

/* The index key "ns/<label value>" of obj into out; 0 if indexed, 1 if not. */
static int index_key(const struct tfj_objstore *s, char *out, size_t outlen, const cJSON *obj)
{
	const cJSON *meta, *labels;
	const char *ns, *v;
	int n;

	if (!s->index_label || tfj_json_get_object(&meta, obj, "metadata") ||
	    tfj_json_opt_string(&ns, meta, "namespace", "") ||
	    tfj_json_get_object(&labels, meta, "labels") ||
	    tfj_json_get_string(&v, labels, s->index_label))
		return 1;
	n = snprintf(out, outlen, "%s/%s", ns, v);
	return n < 0 || (size_t)n >= outlen ? 1 : 0;
}

/* Under the write lock: e out of the index (its idx goes with it). */
static void index_del(struct tfj_objstore *s, struct tfj_objstore_entry *e)
{
	if (e->idx)
		tfj_objindex_del(&s->index, e->idx, e);
	e->idx = NULL;
}

/*
 * Under the write lock: e, which replaces old (NULL when new), in the
 * index under idx (NULL: not indexed), and old out of it. When memory runs
 * out e is still cached, only missing from the index (e->idx NULL).
 */
static void index_put(struct tfj_objstore *s, struct tfj_objstore_entry *e,
		      struct tfj_objstore_entry *old, const char *idx)
{
	int same = old && old->idx && idx && !strcmp(old->idx, idx);

	if (old && !same)
		index_del(s, old);
	/* In the same set e takes old's place, which cannot fail; should it
	 * fail all the same, old must still leave the set. */
	if (idx && tfj_objindex_add(&e->idx, &s->index, idx, e, same ? old : NULL) && same)
		index_del(s, old);
	if (old)
		old->idx = NULL;
}

void tfj_objstore_entry_free(struct tfj_objstore_entry *e)
{
	if (!e)
		return;
	free(e);
}

/*
 * What one entry costs the process, for /metrics: its text, resourceVersion
 * and the struct. The map's own slot and key are left out (a few
 * dozen bytes, the same for every object), so the figure tracks what the
 * objects' authors control.
 */
static size_t entry_bytes(const struct tfj_objstore_entry *e)
{
	return sizeof(*e) + e->len + 1 + strlen(e->rv) + 1;
}

static void entry_destroy(void *p)
{
	tfj_objstore_entry_free(p);
}

const char *tfj_objstore_entry_rv(const struct tfj_objstore_entry *e)
{
	return e->rv;
}

int tfj_objstore_entry_parse(cJSON **out, const struct tfj_objstore_entry *e)
{
	/* The text was printed from a checked tree; only memory can fail here. */
	return tfj_json_parse(out, e->data, e->len, e->len);
}

static const char *meta_rv(const cJSON *obj)
{
	const cJSON *meta;
	const char *v;

	if (tfj_json_get_object(&meta, obj, "metadata") ||
	    tfj_json_get_string(&v, meta, "resourceVersion"))
		return NULL;
	return v;
}

/* A new entry holding obj as text, not indexed, or NULL when out of memory. */
static struct tfj_objstore_entry *entry_new(const cJSON *obj)
{
	struct tfj_objstore_entry *e = NULL;
	const char *rv = meta_rv(obj);
	char *text = NULL, *p;
	size_t len, rvlen;

	if (tfj_json_print(&text, obj))
		return NULL;
	len = strlen(text);
	rv = rv ? rv : "";
	rvlen = strlen(rv);
	/* The text is bounded by the decoder's cap, the rest by fixed buffers,
	 * but the sum is still checked rather than trusted. */
	if (len > SIZE_MAX - sizeof(*e) - 2 - rvlen)
		goto out;
	e = malloc(sizeof(*e) + len + 1 + rvlen + 1);
	if (!e)
		goto out;
	e->len = len;
	memcpy(e->data, text, len + 1);
	p = e->data + len + 1;
	memcpy(p, rv, rvlen + 1);
	e->rv = p;
	e->idx = NULL;
out:
	free(text);
	return e;
}

int tfj_objstore_new(struct tfj_objstore **out, const char *index_label)
{
	struct tfj_objstore *s;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return tfj_err_set(TFJ_ENOMEM, "object store");
	if (index_label && !(s->index_label = strdup(index_label))) {
		free(s);
		return tfj_err_set(TFJ_ENOMEM, "object store");
	}
	pthread_rwlock_init(&s->lock, NULL);
	*out = s;
	return 0;
}

void tfj_objstore_free(struct tfj_objstore *s)
{
	if (!s)
		return;
	tfj_strmap_free(&s->cache, entry_destroy);
	tfj_objindex_free(&s->index);
	pthread_rwlock_destroy(&s->lock);
	free(s->index_label);
	free(s);
}

int tfj_objstore_put(struct tfj_objstore_entry **prev, struct tfj_objstore *s,
		     const char *key, const cJSON *obj)
{
	/* Print outside the lock: readers wait only for the map update. */
	struct tfj_objstore_entry *e = entry_new(obj), *old = NULL;
	char idx[TFJ_OBJSTORE_KEY_MAX];
	int indexed = index_key(s, idx, sizeof(idx), obj) == 0, rc = 0;

	*prev = NULL;
	if (!e)
		return tfj_err_set(TFJ_ENOMEM, "object store: caching %s", key);
	pthread_rwlock_wrlock(&s->lock);
	if ((rc = tfj_strmap_put(&s->cache, key, e, (void **)&old))) {
		tfj_objstore_entry_free(e);
		goto out;
	}
	if (old)
		s->bytes -= entry_bytes(old);
	index_put(s, e, old, indexed ? idx : NULL);
	s->bytes += entry_bytes(e);
	*prev = old;
out:
	pthread_rwlock_unlock(&s->lock);
	return rc;
}

int tfj_objstore_delete(struct tfj_objstore_entry **prev, struct tfj_objstore *s,
			const char *key)
{
	struct tfj_objstore_entry *old;

	pthread_rwlock_wrlock(&s->lock);
	old = tfj_strmap_del(&s->cache, key);
	if (old) {
		index_del(s, old);
		s->bytes -= entry_bytes(old);
	}
	pthread_rwlock_unlock(&s->lock);
	*prev = old;
	return 0;
}

/* ---- relist diff ---- */

struct gone_ctx {
	const struct tfj_strmap *keep;
	char **keys;
	size_t n, cap;
	int err;
};

static int collect_gone(void *ud, const char *key, void *val)
{
	struct gone_ctx *g = ud;

	(void)val;
	if (tfj_strmap_has(g->keep, key))
		return 0;
	if (g->n == g->cap) {
		size_t nc = g->cap ? g->cap * 2 : 16;
		char **nk = nc > SIZE_MAX / sizeof(*nk) ? NULL : realloc(g->keys, nc * sizeof(*nk));
		if (!nk) {
			g->err = TFJ_ENOMEM;
			return 1;
		}
		g->keys = nk;
		g->cap = nc;
	}
	g->keys[g->n] = strdup(key);
	if (!g->keys[g->n]) {
		g->err = TFJ_ENOMEM;
		return 1;
	}
	g->n++;
	return 0;
}

int tfj_objstore_prune(struct tfj_objstore *s, const struct tfj_strmap *keep,
		       tfj_objstore_gone_fn fn, void *ud)
{
	struct gone_ctx g = { keep, NULL, 0, 0, 0 };
	int rc = 0;

	/*
	 * Collect first, then remove one key at a time: fn runs with the lock
	 * released (it may read the store), and readers are held up only for
	 * single removals.
	 */
	pthread_rwlock_rdlock(&s->lock);
	tfj_strmap_each(&s->cache, collect_gone, &g);
	pthread_rwlock_unlock(&s->lock);
	if (g.err) {
		rc = tfj_err_set(g.err, "object store: listing removed objects");
		goto out;
	}
	for (size_t i = 0; i < g.n; i++) {
		struct tfj_objstore_entry *old;

		tfj_objstore_delete(&old, s, g.keys[i]);
		if (old && fn)
			fn(ud, g.keys[i], old);
		tfj_objstore_entry_free(old);
	}
out:
	for (size_t i = 0; i < g.n; i++)
		free(g.keys[i]);
	free(g.keys);
	return rc;
}

/* ---- readers ---- */

static int read_key(char *key, size_t keylen, const char *ns, const char *name)
{
	int n = ns && *ns ? snprintf(key, keylen, "%s/%s", ns, name)
			  : snprintf(key, keylen, "%s", name);

	if (n < 0 || (size_t)n >= keylen)
		return tfj_err_set(TFJ_EINVAL, "object store: key too long");
	return 0;
}

int tfj_objstore_get_text(char **out, size_t *len, struct tfj_objstore *s, const char *ns,
			  const char *name)
{
	char key[TFJ_OBJSTORE_KEY_MAX];
	struct tfj_objstore_entry *e;
	int rc = 0;

	*out = NULL;
	*len = 0;
	if ((rc = read_key(key, sizeof(key), ns, name)))
		return rc;
	pthread_rwlock_rdlock(&s->lock);
	e = tfj_strmap_get(&s->cache, key);
	if (!e) {
		rc = TFJ_ENOTFOUND;
	} else if (!(*out = malloc(e->len + 1))) {
		rc = tfj_err_set(TFJ_ENOMEM, "object store: copy of %s", key);
	} else {
		memcpy(*out, e->data, e->len + 1);
		*len = e->len;
	}
	pthread_rwlock_unlock(&s->lock);
	return rc;
}

int tfj_objstore_get(cJSON **out, struct tfj_objstore *s, const char *ns, const char *name)
{
	char key[TFJ_OBJSTORE_KEY_MAX];
	struct tfj_objstore_entry *e;
	int rc = 0;

	*out = NULL;
	if ((rc = read_key(key, sizeof(key), ns, name)))
		return rc;
	pthread_rwlock_rdlock(&s->lock);
	e = tfj_strmap_get(&s->cache, key);
	rc = e ? tfj_objstore_entry_parse(out, e) : TFJ_ENOTFOUND;
	pthread_rwlock_unlock(&s->lock);
	return rc;
}

struct sel_ctx {
	const struct tfj_objstore *s;
	cJSON **out;
	size_t n, cap;
	int err;
};

static int sel_push(struct sel_ctx *c, const struct tfj_objstore_entry *e)
{
	if (c->n == c->cap) {
		size_t nc = c->cap ? c->cap * 2 : 8;
		cJSON **no = nc > SIZE_MAX / sizeof(*no) ? NULL : realloc(c->out, nc * sizeof(*no));
		if (!no) {
			c->err = TFJ_ENOMEM;
			return 1;
		}
		c->out = no;
		c->cap = nc;
	}
	if (tfj_objstore_entry_parse(&c->out[c->n], e)) {
		c->err = TFJ_ENOMEM;
		return 1;
	}
	c->n++;
	return 0;
}

static int sel_all(void *ud, const char *key, void *val)
{
	(void)key;
	return sel_push(ud, val);
}

static int finish_sel(struct sel_ctx *c, cJSON ***out, size_t *n)
{
	if (c->err) {
		tfj_objstore_free_list(c->out, c->n);
		return tfj_err_set(TFJ_ENOMEM, "object store: copying objects");
	}
	*out = c->out;
	*n = c->n;
	return 0;
}

int tfj_objstore_select(cJSON ***out, size_t *n, struct tfj_objstore *s, const char *ns,
			const char *value)
{
	struct sel_ctx c = { s, NULL, 0, 0, 0 };
	void *const *set;
	char idx[TFJ_OBJSTORE_KEY_MAX];
	size_t k;
	int m;

	*out = NULL;
	*n = 0;
	if (!s->index_label)
		return tfj_err_set(TFJ_ESTATE, "object store has no index");
	m = snprintf(idx, sizeof(idx), "%s/%s", ns ? ns : "", value);
	if (m < 0 || (size_t)m >= sizeof(idx))
		return tfj_err_set(TFJ_EINVAL, "object store: index key too long");
	pthread_rwlock_rdlock(&s->lock);
	k = tfj_objindex_get(&set, &s->index, idx);
	for (size_t i = 0; i < k && !sel_push(&c, set[i]); i++)
		;
	pthread_rwlock_unlock(&s->lock);
	return finish_sel(&c, out, n);
}

int tfj_objstore_list(cJSON ***out, size_t *n, struct tfj_objstore *s)
{
	struct sel_ctx c = { s, NULL, 0, 0, 0 };

	*out = NULL;
	*n = 0;
	pthread_rwlock_rdlock(&s->lock);
	tfj_strmap_each(&s->cache, sel_all, &c);
	pthread_rwlock_unlock(&s->lock);
	return finish_sel(&c, out, n);
}

void tfj_objstore_free_list(cJSON **list, size_t n)
{
	for (size_t i = 0; list && i < n; i++)
		cJSON_Delete(list[i]);
	free(list);
}

size_t tfj_objstore_size(struct tfj_objstore *s)
{
	size_t n;

	pthread_rwlock_rdlock(&s->lock);
	n = s->cache.n;
	pthread_rwlock_unlock(&s->lock);
	return n;
}

size_t tfj_objstore_bytes(struct tfj_objstore *s)
{
	size_t n;

	pthread_rwlock_rdlock(&s->lock);
	n = s->bytes;
	pthread_rwlock_unlock(&s->lock);
	return n;
}
