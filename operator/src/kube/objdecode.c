/*
 * objdecode.c - per-object decoding of LIST pages and watch objects.
 */
#include "kube/objdecode.h"

#include <stdio.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/json.h>

#include "kube/kube.h"

/* A page of the largest objects fits the response cap (see objdecode.h);
 * 1 MiB is left for the list envelope and JSON separators. */
_Static_assert((unsigned long long)TFJ_OBJDECODE_PAGE_SIZE * TFJ_OBJDECODE_MAX + (1u << 20) <=
		       TFJ_KUBE_MAX_BODY_DEFAULT,
	       "LIST page of maximal objects must fit the response cap");

static const char *reason_names[TFJ_OBJDECODE_NREASONS] = {
	"ok", "depth", "size", "syntax", "type",
};

const char *tfj_objdecode_reason_name(enum tfj_objdecode_reason r)
{
	return (unsigned)r < TFJ_OBJDECODE_NREASONS ? reason_names[r] : "type";
}

static enum tfj_objdecode_reason reason_of(int rc)
{
	switch (rc) {
	case TFJ_ERANGE:
		return TFJ_OBJDECODE_DEPTH;
	case TFJ_ETOOBIG:
		return TFJ_OBJDECODE_SIZE;
	case TFJ_EPARSE:
		return TFJ_OBJDECODE_SYNTAX;
	default:
		return TFJ_OBJDECODE_TYPE;
	}
}

/* Metadata fields the informer and its consumers rely on. */
static int check_meta(const cJSON *obj)
{
	const cJSON *meta;
	const char *name, *s;

	if (!cJSON_IsObject(obj))
		return tfj_err_set(TFJ_ETYPE, "object: not a JSON object");
	if (tfj_json_get_object(&meta, obj, "metadata") ||
	    tfj_json_get_string(&name, meta, "name") ||
	    tfj_json_opt_string(&s, meta, "namespace", "") ||
	    tfj_json_opt_string(&s, meta, "resourceVersion", ""))
		return tfj_err_set(TFJ_ETYPE, "object metadata: %s", tfj_err_detail());
	if (!*name)
		return tfj_err_set(TFJ_ETYPE, "object metadata: empty name");
	return 0;
}

int tfj_objdecode_object(cJSON **out, enum tfj_objdecode_reason *why, const char *text,
			 size_t len, size_t max)
{
	int rc;

	*out = NULL;
	*why = TFJ_OBJDECODE_OK;
	if ((rc = tfj_json_parse(out, text, len, max))) {
		*why = reason_of(rc);
		return rc;
	}
	if ((rc = check_meta(*out))) {
		cJSON_Delete(*out);
		*out = NULL;
		*why = TFJ_OBJDECODE_TYPE;
	}
	return rc;
}

int tfj_objdecode_key(char *out, size_t outlen, struct tfj_jscan_span obj)
{
	static const char *const name_path[] = { "metadata", "name", NULL };
	static const char *const ns_path[] = { "metadata", "namespace", NULL };
	char name[256], ns[256];
	int rc, n;

	if ((rc = tfj_jscan_path_string(name, sizeof(name), obj, name_path)))
		return rc;
	if (!*name)
		return tfj_err_set(TFJ_ENOTFOUND, "object without a name");
	rc = tfj_jscan_path_string(ns, sizeof(ns), obj, ns_path);
	if (rc == TFJ_ENOTFOUND)
		ns[0] = '\0';
	else if (rc)
		return rc;
	n = *ns ? snprintf(out, outlen, "%s/%s", ns, name) : snprintf(out, outlen, "%s", name);
	if (n < 0 || (size_t)n >= outlen)
		return tfj_err_set(TFJ_ETOOBIG, "object key too long");
	return 0;
}

/* A small string member of the list metadata into out ("" when absent). */
static int meta_string(char *out, size_t outlen, struct tfj_jscan_span meta, const char *key,
		       int required)
{
	struct tfj_jscan_span v;
	int rc = tfj_jscan_member(&v, meta, key);

	out[0] = '\0';
	if (rc == TFJ_ENOTFOUND && !required)
		return 0;
	if (rc)
		return tfj_err_set(TFJ_EPARSE, "list metadata: %s", tfj_err_detail());
	if (tfj_jscan_is_null(v) && !required)
		return 0;
	if ((rc = tfj_jscan_string(out, outlen, v)))
		return tfj_err_set(rc == TFJ_ETOOBIG ? rc : TFJ_EPARSE, "list metadata '%s': %s",
				   key, tfj_err_detail());
	return 0;
}

int tfj_objdecode_page(struct tfj_objdecode_page *pg, const char *body, size_t len)
{
	struct tfj_jscan_span page, meta, items;
	size_t pos = 0;
	int rc;

	memset(pg, 0, sizeof(*pg));
	if (tfj_jscan_value(&page, body, len, &pos))
		return tfj_err_set(TFJ_EPARSE, "list: %s", tfj_err_detail());
	if (tfj_jscan_member(&meta, page, "metadata"))
		return tfj_err_set(TFJ_EPARSE, "list without metadata");
	if ((rc = meta_string(pg->rv, sizeof(pg->rv), meta, "resourceVersion", 1)) ||
	    (rc = meta_string(pg->cont, sizeof(pg->cont), meta, "continue", 0)))
		return rc;
	rc = tfj_jscan_member(&items, page, "items");
	if (rc == TFJ_ENOTFOUND || (rc == 0 && tfj_jscan_is_null(items))) {
		/* "items": null (or none) for an empty list: iterate "[]". */
		items.p = "[]";
		items.n = 2;
	} else if (rc) {
		return tfj_err_set(TFJ_EPARSE, "list: %s", tfj_err_detail());
	}
	if (tfj_jscan_iter_init(&pg->items, items))
		return tfj_err_set(TFJ_EPARSE, "list: items is not an array");
	return 0;
}
