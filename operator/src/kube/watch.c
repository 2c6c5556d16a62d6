/*
 * watch.c - watch stream framing and event decoding.
 */
#include "kube/watch.h"

#include <string.h>

#include <tfj/err.h>
#include <tfj/json.h>

void tfj_watch_framer_init(struct tfj_watch_framer *f, size_t max_line)
{
	tfj_buf_init(&f->line, max_line ? max_line : TFJ_WATCH_LINE_MAX_DEFAULT);
	f->failed = 0;
}

void tfj_watch_framer_reset(struct tfj_watch_framer *f)
{
	tfj_buf_clear(&f->line);
	f->failed = 0;
}

void tfj_watch_framer_free(struct tfj_watch_framer *f)
{
	if (f)
		tfj_buf_free(&f->line);
}

size_t tfj_watch_framer_pending(const struct tfj_watch_framer *f)
{
	return f->line.len;
}

static int emit(const char *line, size_t len, tfj_watch_line_fn fn, void *ud)
{
	/* Tolerate CRLF framing and blank keep-alive lines. */
	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len == 0)
		return 0;
	return fn(ud, line, len);
}

int tfj_watch_framer_feed(struct tfj_watch_framer *f, const char *data, size_t len,
			  tfj_watch_line_fn fn, void *ud)
{
	size_t off = 0;
	int rc;

	if (f->failed)
		return tfj_err_set(TFJ_ESTATE, "watch framer: used after an error; reset it");
	while (off < len) {
		const char *nl = memchr(data + off, '\n', len - off);
		size_t n = nl ? (size_t)(nl - (data + off)) : len - off;

		if (nl && f->line.len == 0) {
			/* The whole line is in this chunk: no copy. */
			if (n > f->line.max) {
				f->failed = 1;
				return tfj_err_set(TFJ_ETOOBIG, "watch: line longer than %zu bytes",
						   f->line.max);
			}
			rc = emit(data + off, n, fn, ud);
		} else {
			if (tfj_buf_append(&f->line, data + off, n) != 0) {
				f->failed = 1;
				tfj_buf_clear(&f->line);
				return tfj_err_set(TFJ_ETOOBIG, "watch: line longer than %zu bytes",
						   f->line.max);
			}
			if (!nl)
				return 0;
			rc = emit(f->line.ptr, f->line.len, fn, ud);
			tfj_buf_clear(&f->line);
		}
		if (rc) {
			f->failed = 1;
			return rc;
		}
		off += n + 1;
	}
	return 0;
}

static const char *names[] = { "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR" };

const char *tfj_watch_type_name(enum tfj_watch_type t)
{
	return (unsigned)t <= TFJ_WATCH_ERROR ? names[t] : "UNKNOWN";
}

void tfj_watch_event_free(struct tfj_watch_event *ev)
{
	if (!ev)
		return;
	cJSON_Delete(ev->root);
	memset(ev, 0, sizeof(*ev));
}

int tfj_watch_decode(struct tfj_watch_event *ev, const char *line, size_t len, size_t max_len)
{
	const cJSON *obj, *meta = NULL;
	const char *type, *name;
	int rc, t;

	memset(ev, 0, sizeof(*ev));
	rc = tfj_json_parse(&ev->root, line, len, max_len);
	if (rc)
		return tfj_err_set(rc, "watch event: %s", tfj_err_detail());
	if (!cJSON_IsObject(ev->root)) {
		rc = tfj_err_set(TFJ_EPARSE, "watch event: not a JSON object");
		goto out;
	}
	if ((rc = tfj_json_get_string(&type, ev->root, "type")) ||
	    (rc = tfj_json_get_object(&obj, ev->root, "object"))) {
		rc = tfj_err_set(TFJ_EPARSE, "watch event: %s", tfj_err_detail());
		goto out;
	}
	for (t = 0; t <= TFJ_WATCH_ERROR; t++)
		if (strcmp(type, names[t]) == 0)
			break;
	if (t > TFJ_WATCH_ERROR) {
		rc = tfj_err_set(TFJ_EUNSUPP, "watch event: unknown type %.40s", type);
		goto out;
	}
	ev->type = (enum tfj_watch_type)t;
	ev->object = obj;
	if (ev->type == TFJ_WATCH_ERROR) {
		/* A Status object; 410 Gone means our resourceVersion expired. */
		if (tfj_json_opt_int(&ev->code, obj, "code", 0, 999, 0) != 0)
			ev->code = 0;
		return 0;
	}
	if (tfj_json_get_object(&meta, obj, "metadata") != 0) {
		rc = tfj_err_set(TFJ_EPARSE, "watch %s event: object without metadata", type);
		goto out;
	}
	if (tfj_json_opt_string(&ev->rv, meta, "resourceVersion", NULL) != 0) {
		rc = tfj_err_set(TFJ_EPARSE, "watch %s event: resourceVersion not a string", type);
		goto out;
	}
	if (ev->type == TFJ_WATCH_BOOKMARK) {
		if (!ev->rv || !*ev->rv) {
			rc = tfj_err_set(TFJ_EPARSE, "watch BOOKMARK without resourceVersion");
			goto out;
		}
		return 0;
	}
	if (tfj_json_get_string(&name, meta, "name") != 0 || !*name) {
		rc = tfj_err_set(TFJ_EPARSE, "watch %s event: object without metadata.name", type);
		goto out;
	}
	return 0;
out:
	tfj_watch_event_free(ev);
	return rc;
}
