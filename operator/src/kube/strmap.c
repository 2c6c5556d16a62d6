/*
 * strmap.c - string-keyed hash map.
 */
#include "kube/strmap.h"

#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

/* FNV-1a, 64-bit: cheap and good enough for object keys. */
static size_t hash(const char *s)
{
	unsigned long long h = 1469598103934665603ull;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return (size_t)h;
}

static struct tfj_strmap_ent **slot(const struct tfj_strmap *m, const char *key, size_t h)
{
	struct tfj_strmap_ent **p = &m->b[h & (m->nb - 1)];
	while (*p && ((*p)->hash != h || strcmp((*p)->key, key) != 0))
		p = &(*p)->next;
	return p;
}

void *tfj_strmap_get(const struct tfj_strmap *m, const char *key)
{
	struct tfj_strmap_ent **p;
	if (!m->nb)
		return NULL;
	p = slot(m, key, hash(key));
	return *p ? (*p)->val : NULL;
}

const char *tfj_strmap_key(const struct tfj_strmap *m, const char *key)
{
	struct tfj_strmap_ent **p;

	if (!m->nb)
		return NULL;
	p = slot(m, key, hash(key));
	return *p ? (*p)->key : NULL;
}

int tfj_strmap_has(const struct tfj_strmap *m, const char *key)
{
	return m->nb && *slot(m, key, hash(key)) != NULL;
}

static int grow(struct tfj_strmap *m)
{
	size_t nb = m->nb ? m->nb * 2 : 16;
	struct tfj_strmap_ent **b;

	if (nb > ((size_t)-1) / sizeof(*b))
		return tfj_err_set(TFJ_ENOMEM, "strmap: too many entries");
	b = calloc(nb, sizeof(*b));
	if (!b)
		return tfj_err_set(TFJ_ENOMEM, "strmap: growing");
	for (size_t i = 0; i < m->nb; i++) {
		struct tfj_strmap_ent *e = m->b[i], *next;
		for (; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (nb - 1)];
			b[e->hash & (nb - 1)] = e;
		}
	}
	free(m->b);
	m->b = b;
	m->nb = nb;
	return 0;
}

int tfj_strmap_put(struct tfj_strmap *m, const char *key, void *val, void **old)
{
	size_t h = hash(key), klen = strlen(key);
	struct tfj_strmap_ent **p, *e;

	if (old)
		*old = NULL;
	if (m->n >= m->nb && grow(m) != 0)
		return TFJ_ENOMEM;
	p = slot(m, key, h);
	if (*p) {
		if (old)
			*old = (*p)->val;
		(*p)->val = val;
		return 0;
	}
	e = malloc(sizeof(*e) + klen + 1);
	if (!e)
		return tfj_err_set(TFJ_ENOMEM, "strmap: entry");
	e->next = NULL;
	e->val = val;
	e->hash = h;
	memcpy(e->key, key, klen + 1);
	*p = e;
	m->n++;
	return 0;
}

void *tfj_strmap_del(struct tfj_strmap *m, const char *key)
{
	struct tfj_strmap_ent **p, *e;
	void *v;

	if (!m->nb)
		return NULL;
	p = slot(m, key, hash(key));
	if (!*p)
		return NULL;
	e = *p;
	*p = e->next;
	v = e->val;
	free(e);
	m->n--;
	return v;
}

int tfj_strmap_each(const struct tfj_strmap *m,
		    int (*fn)(void *ud, const char *key, void *val), void *ud)
{
	for (size_t i = 0; i < m->nb; i++)
		for (struct tfj_strmap_ent *e = m->b[i]; e; e = e->next) {
			int rc = fn(ud, e->key, e->val);
			if (rc)
				return rc;
		}
	return 0;
}

void tfj_strmap_free(struct tfj_strmap *m, void (*destroy)(void *val))
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nb; i++) {
		struct tfj_strmap_ent *e = m->b[i], *next;
		for (; e; e = next) {
			next = e->next;
			if (destroy)
				destroy(e->val);
			free(e);
		}
	}
	free(m->b);
	m->b = NULL;
	m->nb = m->n = 0;
}
