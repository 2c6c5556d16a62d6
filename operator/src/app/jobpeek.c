/*
 * jobpeek.c - a cached TFJob's uid, status and replica types from its text
 * (see jobpeek.h).
 */
#include "app/jobpeek.h"

#include <stdlib.h>
#include <string.h>

#include <tfj/buf.h>
#include <tfj/err.h>
#include <tfj/json.h>

#include "kube/jscan.h"

static struct tfj_jscan_span whole(const char *text, size_t len)
{
	struct tfj_jscan_span v = { text, len };
	return v;
}

int tfj_jobpeek_uid(char *out, size_t outlen, const char *text, size_t len)
{
	static const char *const path[] = { "metadata", "uid", NULL };

	return tfj_jscan_path_string(out, outlen, whole(text, len), path);
}

int tfj_jobpeek_status(struct tfj_job_status *out, const char *text, size_t len)
{
	struct tfj_jscan_span v;
	cJSON *st = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = tfj_jscan_member(&v, whole(text, len), "status");
	if (rc == TFJ_ENOTFOUND)
		return tfj_jobstatus_decode(out, NULL);
	if (rc)
		return rc;
	if ((rc = tfj_json_parse(&st, v.p, v.n, TFJ_TFJOB_MAX_BYTES)))
		return rc;
	rc = tfj_jobstatus_decode(out, st);
	cJSON_Delete(st);
	return rc;
}

/* ---- the brief copy ---- */

/*
 * Values are copied by their byte ranges (jscan.h). A value whose type
 * alone decides what the decoder does (it wants an object or an array and
 * gets something else) is written as 0: the decoder fails on it as it does
 * on the original. Object members are looked up by their first occurrence,
 * as cJSON_GetObjectItemCaseSensitive does.
 */

static int is_object(struct tfj_jscan_span v)
{
	return v.n && v.p[0] == '{';
}

static int is_array(struct tfj_jscan_span v)
{
	return v.n && v.p[0] == '[';
}

/* Writes the separator and `"key":` of the next member of an object being written. */
static int put_key(struct tfj_buf *b, int *n, const char *key)
{
	int rc;

	if (*n && (rc = tfj_buf_putc(b, ',')))
		return rc;
	(*n)++;
	return tfj_buf_printf(b, "\"%s\":", key);
}

static int put_span(struct tfj_buf *b, struct tfj_jscan_span v)
{
	return tfj_buf_append(b, v.p, v.n);
}

/* Member `key` of obj into *v: 1 when there, 0 when absent, or an error. */
static int member(struct tfj_jscan_span *v, struct tfj_jscan_span obj, const char *key)
{
	int rc = tfj_jscan_member(v, obj, key);

	if (rc == TFJ_ENOTFOUND)
		return 0;
	return rc ? rc : 1;
}

/* Copies member `key` of obj as it is, when there. */
static int copy_member(struct tfj_buf *b, int *n, struct tfj_jscan_span obj, const char *key)
{
	struct tfj_jscan_span v;
	int rc;

	if ((rc = member(&v, obj, key)) <= 0)
		return rc;
	if ((rc = put_key(b, n, key)))
		return rc;
	return put_span(b, v);
}

/* Elements of array arr, each one through fn (0 for a non-object). */
static int put_objects(struct tfj_buf *b, struct tfj_jscan_span arr,
		       int (*fn)(struct tfj_buf *, struct tfj_jscan_span))
{
	struct tfj_jscan_iter it;
	struct tfj_jscan_span el;
	int rc, first = 1;

	if ((rc = tfj_jscan_iter_init(&it, arr)) || (rc = tfj_buf_putc(b, '[')))
		return rc;
	while ((rc = tfj_jscan_iter_next(&el, &it)) == 1) {
		if (!first && (rc = tfj_buf_putc(b, ',')))
			return rc;
		first = 0;
		if ((rc = is_object(el) ? fn(b, el) : tfj_buf_putc(b, '0')))
			return rc;
	}
	return rc ? rc : tfj_buf_putc(b, ']');
}

/*
 * Member `key` of obj, when there: an object through fn, anything else as
 * 0 (with want_array, an array through fn instead).
 */
static int put_nested(struct tfj_buf *b, int *n, struct tfj_jscan_span obj, const char *key,
		      int want_array, int (*fn)(struct tfj_buf *, struct tfj_jscan_span))
{
	struct tfj_jscan_span v;
	int rc;

	if ((rc = member(&v, obj, key)) <= 0)
		return rc;
	if ((rc = put_key(b, n, key)))
		return rc;
	if (want_array ? is_array(v) : is_object(v))
		return fn(b, v);
	return tfj_buf_putc(b, '0');
}

/* A template container: what decode_template (tfjob.c) reads of it. */
static int put_container(struct tfj_buf *b, struct tfj_jscan_span c)
{
	struct tfj_jscan_iter it;
	struct tfj_jscan_span v, el;
	int rc, n = 0;

	if ((rc = tfj_buf_putc(b, '{')) || (rc = copy_member(b, &n, c, "name")) ||
	    (rc = copy_member(b, &n, c, "image")) || (rc = copy_member(b, &n, c, "ports")))
		return rc;
	/* Only whether it is a non-empty list counts (has_command). */
	if ((rc = member(&v, c, "command")) < 0)
		return rc;
	if (rc == 1) {
		if ((rc = put_key(b, &n, "command")))
			return rc;
		if (is_array(v) && tfj_jscan_iter_init(&it, v) == 0 &&
		    (rc = tfj_jscan_iter_next(&el, &it)) != 0) {
			if (rc < 0)
				return rc;
			rc = tfj_buf_puts(b, "[0]");
		} else {
			rc = tfj_buf_puts(b, is_array(v) ? "[]" : "0");
		}
		if (rc)
			return rc;
	}
	return tfj_buf_putc(b, '}');
}

static int put_containers(struct tfj_buf *b, struct tfj_jscan_span arr)
{
	return put_objects(b, arr, put_container);
}

static int put_pod_spec(struct tfj_buf *b, struct tfj_jscan_span spec)
{
	int rc, n = 0;

	if ((rc = tfj_buf_putc(b, '{')) ||
	    (rc = put_nested(b, &n, spec, "containers", 1, put_containers)))
		return rc;
	return tfj_buf_putc(b, '}');
}

static int put_template(struct tfj_buf *b, struct tfj_jscan_span tmpl)
{
	int rc, n = 0;

	if ((rc = tfj_buf_putc(b, '{')) || (rc = put_nested(b, &n, tmpl, "spec", 0, put_pod_spec)))
		return rc;
	return tfj_buf_putc(b, '}');
}

/* One replica type's spec: what decode_replica (tfjob.c) reads of it. */
static int put_replica(struct tfj_buf *b, struct tfj_jscan_span r)
{
	int rc, n = 0;

	if ((rc = tfj_buf_putc(b, '{')) || (rc = copy_member(b, &n, r, "replicas")) ||
	    (rc = copy_member(b, &n, r, "restartPolicy")) ||
	    (rc = put_nested(b, &n, r, "template", 0, put_template)))
		return rc;
	return tfj_buf_putc(b, '}');
}

/*
 * Every member of tfReplicaSpecs in order, a repeated or unknown type too:
 * the decoder stops at the first bad one, and which types it saw before
 * that is what it keeps.
 */
static int put_replicas(struct tfj_buf *b, struct tfj_jscan_span specs)
{
	struct tfj_jscan_span k, v;
	struct tfj_jscan_iter it;
	int rc, first = 1;

	if ((rc = tfj_jscan_members_init(&it, specs)) || (rc = tfj_buf_putc(b, '{')))
		return rc;
	while ((rc = tfj_jscan_members_next(&k, &v, &it)) == 1) {
		if ((!first && (rc = tfj_buf_putc(b, ','))) || (rc = put_span(b, k)) ||
		    (rc = tfj_buf_putc(b, ':')) ||
		    (rc = is_object(v) ? put_replica(b, v) : tfj_buf_putc(b, '0')))
			return rc;
		first = 0;
	}
	return rc ? rc : tfj_buf_putc(b, '}');
}

static int put_spec(struct tfj_buf *b, struct tfj_jscan_span spec)
{
	int rc, n = 0;

	if ((rc = tfj_buf_putc(b, '{')) ||
	    (rc = put_nested(b, &n, spec, "tfReplicaSpecs", 0, put_replicas)))
		return rc;
	return tfj_buf_putc(b, '}');
}

/* What decode_meta (tfjob.c) reads. */
static int put_meta(struct tfj_buf *b, struct tfj_jscan_span meta)
{
	static const char *const keys[] = { "name", "namespace", "uid", "resourceVersion",
					    "generation", "deletionTimestamp" };
	size_t i;
	int rc, n = 0;

	if ((rc = tfj_buf_putc(b, '{')))
		return rc;
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if ((rc = copy_member(b, &n, meta, keys[i])))
			return rc;
	return tfj_buf_putc(b, '}');
}

/*
 * The spec, or null when it is over the size the operator serves: the
 * decoder fails such a spec (InvalidSpec) before it reads a replica type,
 * and so does it fail null. Its length here is its compact size as the
 * decoder counts it for text cJSON printed, as the cache's is.
 */
static int put_spec_member(struct tfj_buf *b, int *n, struct tfj_jscan_span doc)
{
	struct tfj_jscan_span v;
	int rc;

	if ((rc = member(&v, doc, "spec")) <= 0 || (rc = put_key(b, n, "spec")))
		return rc;
	if (v.n > TFJ_TFJOB_MAX_SPEC_BYTES)
		return tfj_buf_puts(b, "null");
	return is_object(v) ? put_spec(b, v) : tfj_buf_putc(b, '0');
}

int tfj_jobpeek_brief(struct tfj_tfjob *out, const char *text, size_t len)
{
	struct tfj_jscan_span doc = whole(text, len);
	struct tfj_buf b;
	size_t i = 0;
	int rc, n = 0;

	memset(out, 0, sizeof(*out));
	/* The brief is never larger than the text: bounded like a TFJob. */
	tfj_buf_init(&b, TFJ_TFJOB_MAX_BYTES);
	while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
		i++;
	if (len > TFJ_TFJOB_MAX_BYTES) {
		rc = tfj_err_set(TFJ_ETOOBIG, "TFJob of %zu bytes", len);
		goto out;
	}
	if (i == len || text[i] != '{') {
		rc = tfj_err_set(TFJ_ETYPE, "TFJob: expected a JSON object");
		goto out;
	}
	/* The informer's mark of a spec it dropped for its size (tfjob.h) goes along. */
	if ((rc = tfj_buf_putc(&b, '{')) || (rc = copy_member(&b, &n, doc, "kind")) ||
	    (rc = copy_member(&b, &n, doc, TFJ_TFJOB_OVERSIZE_KEY)) ||
	    (rc = put_nested(&b, &n, doc, "metadata", 0, put_meta)) ||
	    (rc = put_spec_member(&b, &n, doc)) ||
	    (rc = copy_member(&b, &n, doc, "status")) || (rc = tfj_buf_putc(&b, '}')))
		goto out;
	rc = tfj_tfjob_decode(out, b.ptr, b.len);
out:
	tfj_buf_free(&b);
	return rc;
}
