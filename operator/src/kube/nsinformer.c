/*
 * nsinformer.c - informers over watched namespaces (see nsinformer.h).
 */
#include "kube/nsinformer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/names.h>

#include "kube/apipath.h"

#define PATH_CAP 1024

struct tfj_nsinformer {
	size_t n;                         /* informers; 1 when every namespace */
	int all;                          /* one cluster-wide informer */
	char ns[TFJ_NSINFORMER_MAX][64];  /* their namespaces, sorted */
	struct tfj_informer *inf[TFJ_NSINFORMER_MAX];
	char *name;
};

/* Namespaces in the order of their keys: "a-b/x" sorts before "a/x". */
static int key_order(const void *a, const void *b)
{
	char ka[66], kb[66];

	snprintf(ka, sizeof(ka), "%s/", (const char *)a);
	snprintf(kb, sizeof(kb), "%s/", (const char *)b);
	return strcmp(ka, kb);
}

int tfj_nsinformer_parse(char names[][64], size_t *n, const char *list)
{
	const char *p = list ? list : "";
	size_t i, k = 0;

	*n = 0;
	while (*p) {
		const char *end = strchr(p, ','), *a = p, *b;

		if (!end)
			end = p + strlen(p);
		b = end;
		while (a < b && *a == ' ')
			a++;
		while (b > a && b[-1] == ' ')
			b--;
		if (!tfj_names_is_dns1123_label(a, (size_t)(b - a)))
			return tfj_err_set(TFJ_EINVAL, "namespace '%.*s' is not a DNS label",
					   (int)(end - p), p);
		for (i = 0; i < k; i++)
			if (strlen(names[i]) == (size_t)(b - a) && !strncmp(names[i], a, (size_t)(b - a)))
				break;
		if (i == k) {
			if (k == TFJ_NSINFORMER_MAX)
				return tfj_err_set(TFJ_EINVAL, "more than %d namespaces",
						   TFJ_NSINFORMER_MAX);
			memcpy(names[k], a, (size_t)(b - a));
			names[k][b - a] = '\0';
			k++;
		}
		p = *end ? end + 1 : end;
	}
	qsort(names, k, sizeof(names[0]), key_order);
	*n = k;
	return 0;
}

int tfj_nsinformer_new(struct tfj_nsinformer **out, struct tfj_kube *k,
		       const struct tfj_informer_opts *io, const char *group, const char *res,
		       const char *namespaces)
{
	struct tfj_informer_opts o = *io;
	struct tfj_nsinformer *s;
	char path[PATH_CAP];
	size_t i;
	int rc;

	*out = NULL;
	if (!(s = calloc(1, sizeof(*s))) || !(s->name = strdup(res))) {
		free(s);
		return tfj_err_set(TFJ_ENOMEM, "nsinformer");
	}
	if ((rc = tfj_nsinformer_parse(s->ns, &s->n, namespaces)))
		goto out;
	if (s->n == 0) {
		s->all = 1;
		s->n = 1;
	}
	o.name = res;
	for (i = 0; i < s->n; i++) {
		if ((rc = tfj_apipath_coll(path, sizeof(path), group, s->all ? NULL : s->ns[i], res)))
			goto out;
		o.path = path; /* copied by the informer */
		if ((rc = tfj_informer_new(&s->inf[i], k, &o)))
			goto out;
	}
out:
	if (rc) {
		tfj_nsinformer_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

int tfj_nsinformer_start(struct tfj_nsinformer *s)
{
	size_t i;
	int rc;

	for (i = 0; i < s->n; i++)
		if ((rc = tfj_informer_start(s->inf[i])))
			return rc;
	return 0;
}

void tfj_nsinformer_stop(struct tfj_nsinformer *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->n; i++)
		tfj_informer_stop(s->inf[i]);
}

void tfj_nsinformer_free(struct tfj_nsinformer *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < TFJ_NSINFORMER_MAX; i++)
		tfj_informer_free(s->inf[i]);
	free(s->name);
	free(s);
}

int tfj_nsinformer_synced(struct tfj_nsinformer *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (!tfj_informer_synced(s->inf[i]))
			return 0;
	return 1;
}

int tfj_nsinformer_wait_synced(struct tfj_nsinformer *s, long timeout_ms)
{
	size_t i;
	int rc;

	/* The caller retries on TFJ_ETIMEOUT; each wait is bounded on its own. */
	for (i = 0; i < s->n; i++)
		if ((rc = tfj_informer_wait_synced(s->inf[i], timeout_ms)))
			return rc;
	return 0;
}

/* The informer holding namespace ns, or NULL when ns is not watched. */
static struct tfj_informer *route(struct tfj_nsinformer *s, const char *ns)
{
	size_t i;

	if (s->all)
		return s->inf[0];
	for (i = 0; i < s->n; i++)
		if (ns && !strcmp(s->ns[i], ns))
			return s->inf[i];
	return NULL;
}

cJSON *tfj_nsinformer_get(struct tfj_nsinformer *s, const char *ns, const char *name)
{
	struct tfj_informer *inf = route(s, ns);

	return inf ? tfj_informer_get(inf, ns, name) : NULL;
}

int tfj_nsinformer_get_text(char **out, size_t *len, struct tfj_nsinformer *s, const char *ns,
			    const char *name)
{
	struct tfj_informer *inf = route(s, ns);

	if (!inf) {
		*out = NULL;
		*len = 0;
		return TFJ_ENOTFOUND;
	}
	return tfj_informer_get_text(out, len, inf, ns, name);
}

int tfj_nsinformer_select(struct tfj_nsinformer *s, cJSON ***out, size_t *n, const char *ns,
			  const char *value)
{
	struct tfj_informer *inf = route(s, ns);

	if (!inf) {
		*out = NULL;
		*n = 0;
		return 0;
	}
	return tfj_informer_select(inf, out, n, ns, value);
}

void tfj_nsinformer_stats(struct tfj_nsinformer *s, struct tfj_informer_stats *out)
{
	size_t i;
	int r;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < s->n; i++) {
		struct tfj_informer_stats one;

		tfj_informer_stats(s->inf[i], &one);
		out->lists += one.lists;
		out->relists += one.relists;
		out->events += one.events;
		out->errors += one.errors;
		out->size += one.size;
		out->bytes += one.bytes;
		for (r = 0; r < TFJ_OBJDECODE_NREASONS; r++)
			out->rejected[r] += one.rejected[r];
		/* The stalest namespace speaks for the set. */
		if (i == 0 || one.last_ok_ms < out->last_ok_ms)
			out->last_ok_ms = one.last_ok_ms;
	}
}

const char *tfj_nsinformer_name(const struct tfj_nsinformer *s)
{
	return s->name;
}

int64_t tfj_nsinformer_idle_ms(struct tfj_nsinformer *s)
{
	int64_t worst = 0, idle;
	size_t i;

	for (i = 0; i < s->n; i++) {
		idle = tfj_informer_idle_ms(s->inf[i]);
		if (idle < 0)
			return -1;
		if (idle > worst)
			worst = idle;
	}
	return worst;
}

int tfj_nsinformer_dump(struct tfj_nsinformer *s, struct tfj_buf *out)
{
	size_t i;
	int rc;

	/* Namespaces are in key order, each dump sorted: the whole is sorted. */
	for (i = 0; i < s->n; i++)
		if ((rc = tfj_informer_dump(s->inf[i], out)))
			return rc;
	return 0;
}

int tfj_nsinformer_absent(struct tfj_nsinformer *s, const char *ns)
{
	struct tfj_informer *inf = route(s, ns);

	return inf ? tfj_informer_absent(inf) : 0;
}
