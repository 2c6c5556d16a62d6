/*
 * watch.c - watch stream framing and event decoding.
 */
#include "kube/watch.h"

#include <string.h>

#include <tfj/err.h>
#include <tfj/json.h>

#include "kube/jscan.h"

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

/* The line's type and object spans, checked for shape. */
static int split_line(struct tfj_watch_event *ev, struct tfj_jscan_span *obj, const char *line,
		      size_t len)
{
	struct tfj_jscan_span root, type;
	char tname[16];
	size_t pos = 0;
	int t;

	if (tfj_jscan_value(&root, line, len, &pos))
		return tfj_err_set(TFJ_EPARSE, "watch event: %s", tfj_err_detail());
	for (; pos < len; pos++)
		if (line[pos] != ' ' && line[pos] != '\t' && line[pos] != '\r' && line[pos] != '\n')
			return tfj_err_set(TFJ_EPARSE, "watch event: trailing data");
	if (tfj_jscan_member(&type, root, "type") || tfj_jscan_string(tname, sizeof(tname), type))
		return tfj_err_set(TFJ_EPARSE, "watch event: no type: %s", tfj_err_detail());
	if (tfj_jscan_member(obj, root, "object") || obj->n == 0 || obj->p[0] != '{')
		return tfj_err_set(TFJ_EPARSE, "watch event: no object");
	for (t = 0; t <= TFJ_WATCH_ERROR; t++)
		if (strcmp(tname, names[t]) == 0)
			break;
	if (t > TFJ_WATCH_ERROR)
		return tfj_err_set(TFJ_EUNSUPP, "watch event: unknown type %.15s", tname);
	ev->type = (enum tfj_watch_type)t;
	return 0;
}

/* An ADDED/MODIFIED/DELETED object that cannot be decoded: keep what the scanner reads. */
static void reject(struct tfj_watch_event *ev, struct tfj_jscan_span obj)
{
	static const char *const rv_path[] = { "metadata", "resourceVersion", NULL };

	if (tfj_jscan_path_string(ev->rvbuf, sizeof(ev->rvbuf), obj, rv_path) == 0 && *ev->rvbuf)
		ev->rv = ev->rvbuf;
}

int tfj_watch_decode(struct tfj_watch_event *ev, const char *line, size_t len, size_t max_len)
{
	struct tfj_jscan_span span;
	const cJSON *meta = NULL;
	const char *type;
	int rc;

	memset(ev, 0, sizeof(*ev));
	if (len > max_len)
		return tfj_err_set(TFJ_ETOOBIG, "watch event of %zu bytes exceeds %zu", len, max_len);
	if ((rc = split_line(ev, &span, line, len)))
		return rc;
	type = names[ev->type];
	if (ev->type <= TFJ_WATCH_DELETED) {
		ev->raw = span;
		if (tfj_objdecode_object(&ev->root, &ev->reject, span.p, span.n, TFJ_OBJDECODE_MAX)) {
			reject(ev, span);
			return 0;
		}
		ev->object = ev->root;
		if (tfj_json_get_object(&meta, ev->root, "metadata") ||
		    tfj_json_opt_string(&ev->rv, meta, "resourceVersion", NULL))
			ev->rv = NULL; /* objdecode checked both: not reached */
		return 0;
	}
	/* BOOKMARK and ERROR objects are small and ours to trust less: a bad one spoils the line. */
	if ((rc = tfj_json_parse(&ev->root, span.p, span.n, max_len)))
		return tfj_err_set(rc, "watch %s event: %s", type, tfj_err_detail());
	ev->object = ev->root;
	if (ev->type == TFJ_WATCH_ERROR) {
		/* A Status object; 410 Gone means our resourceVersion expired. */
		if (tfj_json_opt_int(&ev->code, ev->root, "code", 0, 999, 0) != 0)
			ev->code = 0;
		return 0;
	}
	if (tfj_json_get_object(&meta, ev->root, "metadata") != 0 ||
	    tfj_json_opt_string(&ev->rv, meta, "resourceVersion", NULL) != 0 || !ev->rv ||
	    !*ev->rv) {
		rc = tfj_err_set(TFJ_EPARSE, "watch BOOKMARK without resourceVersion");
		goto out;
	}
	return 0;
out:
	tfj_watch_event_free(ev);
	return rc;
}
