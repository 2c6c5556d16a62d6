/*
 * objindex.c - sets of cached entries by index key (objindex.h).
 */
#include "kube/objindex.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

struct set {
	size_t n, cap;
	void *p[];
};

static void set_free(void *s)
{
	free(s);
}

int tfj_objindex_add(const char **kept, struct tfj_objindex *x, const char *key, void *p,
		     const void *old)
{
	struct set *s = tfj_strmap_get(&x->sets, key), *ns;
	size_t cap, i;

	*kept = NULL;
	for (i = 0; s && old && i < s->n; i++) {
		if (s->p[i] == old) {
			s->p[i] = p;
			*kept = tfj_strmap_key(&x->sets, key);
			return 0;
		}
	}
	if (s && s->n < s->cap) {
		s->p[s->n++] = p;
		*kept = tfj_strmap_key(&x->sets, key);
		return 0;
	}
	/*
	 * A new array, grown by half plus two (2, 5, 9, ...: a job's five
	 * children fill the second size exactly), swapped in only once the map
	 * holds it, so a failure leaves the old set as it was.
	 */
	cap = s ? s->cap + s->cap / 2 + 2 : 2;
	if (cap > (SIZE_MAX - sizeof(*ns)) / sizeof(ns->p[0]) ||
	    !(ns = malloc(sizeof(*ns) + cap * sizeof(ns->p[0]))))
		return tfj_err_set(TFJ_ENOMEM, "object index");
	ns->n = s ? s->n : 0;
	ns->cap = cap;
	if (s)
		memcpy(ns->p, s->p, s->n * sizeof(s->p[0]));
	ns->p[ns->n++] = p;
	if (tfj_strmap_put(&x->sets, key, ns, NULL)) {
		free(ns);
		return tfj_err_set(TFJ_ENOMEM, "object index");
	}
	free(s);
	*kept = tfj_strmap_key(&x->sets, key);
	return 0;
}

void tfj_objindex_del(struct tfj_objindex *x, const char *key, const void *p)
{
	struct set *s = tfj_strmap_get(&x->sets, key);

	for (size_t i = 0; s && i < s->n; i++) {
		if (s->p[i] != p)
			continue;
		s->p[i] = s->p[--s->n];
		if (s->n == 0)
			set_free(tfj_strmap_del(&x->sets, key));
		return;
	}
}

size_t tfj_objindex_get(void *const **out, const struct tfj_objindex *x, const char *key)
{
	const struct set *s = tfj_strmap_get(&x->sets, key);

	*out = s ? s->p : NULL;
	return s ? s->n : 0;
}

void tfj_objindex_free(struct tfj_objindex *x)
{
	if (x)
		tfj_strmap_free(&x->sets, set_free);
}
