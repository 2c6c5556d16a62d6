/*
 * watch.h - the watch stream: framing and event decoding.
 *
 * A watch response is a stream of JSON objects, one per line:
 *   {"type":"ADDED","object":{...}}\n
 * Chunks from the network split lines anywhere. The framer collects bytes
 * until a newline and hands complete lines to a callback. A line longer
 * than the framer's cap is an error (TFJ_ETOOBIG): the stream can no longer
 * be trusted and the informer must relist, never crash or grow without
 * bound. After an error the framer stays failed until reset.
 *
 * Ownership: the framer owns its buffer (tfj_watch_framer_free). A decoded
 * event owns its cJSON tree; `object` and `rv` point into it.
 */
#ifndef TFJ_WATCH_H
#define TFJ_WATCH_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include <tfj/buf.h>

#include "kube/objdecode.h"

#define TFJ_WATCH_LINE_MAX_DEFAULT (8u << 20)

struct tfj_watch_framer {
	struct tfj_buf line;  /* the incomplete line so far */
	int failed;           /* a line overflowed or the callback failed */
};

/* Called with one complete line (no newline, not NUL-terminated in general). */
typedef int (*tfj_watch_line_fn)(void *ud, const char *line, size_t len);

void tfj_watch_framer_init(struct tfj_watch_framer *f, size_t max_line);
/* Forgets any partial line and clears the failed state. */
void tfj_watch_framer_reset(struct tfj_watch_framer *f);
void tfj_watch_framer_free(struct tfj_watch_framer *f);

/*
 * Feeds a chunk. Every complete line is passed to fn (empty lines are
 * skipped). Returns 0, TFJ_ETOOBIG when a line exceeds the cap, the first
 * nonzero value fn returned, or TFJ_ESTATE when the framer already failed.
 */
int tfj_watch_framer_feed(struct tfj_watch_framer *f, const char *data, size_t len,
			  tfj_watch_line_fn fn, void *ud);

/* Bytes held in the partial line. */
size_t tfj_watch_framer_pending(const struct tfj_watch_framer *f);

enum tfj_watch_type {
	TFJ_WATCH_ADDED = 0,
	TFJ_WATCH_MODIFIED,
	TFJ_WATCH_DELETED,
	TFJ_WATCH_BOOKMARK,
	TFJ_WATCH_ERROR
};

struct tfj_watch_event {
	enum tfj_watch_type type;
	cJSON *root;            /* the decoded object, owned; NULL when rejected */
	const cJSON *object;    /* = root */
	const char *rv;         /* object.metadata.resourceVersion, or NULL */
	int code;               /* for ERROR: the Status code (e.g. 410), else 0 */
	/* ADDED/MODIFIED/DELETED: raw is the object's bytes inside the line.
	 * reject is set when the line was read but its object could not be
	 * decoded: object is NULL and rv (when readable) points to rvbuf. */
	enum tfj_objdecode_reason reject;
	struct tfj_jscan_span raw;
	char rvbuf[128];
};

/*
 * Decodes one line. The line is split with the scanner (jscan.h) and only
 * the event's object is parsed, on its own (objdecode.h), so an object too
 * deep or too large for the decoder fails alone: the call still returns 0
 * with ev->reject saying why, the type known and the object's bytes in
 * ev->raw, and the stream goes on. Requirements for the line itself: a
 * JSON object with a known "type" and an object "object"; a BOOKMARK needs
 * metadata.resourceVersion. Errors (the line is unusable): TFJ_EPARSE (bad
 * JSON or shape), TFJ_ETOOBIG (line over max_len), TFJ_EUNSUPP (unknown
 * type).
 */
int tfj_watch_decode(struct tfj_watch_event *ev, const char *line, size_t len,
		     size_t max_len);
void tfj_watch_event_free(struct tfj_watch_event *ev);

const char *tfj_watch_type_name(enum tfj_watch_type t);

#endif
