/*
 * fuzz_watch.c - the watch line framer and event decoder on arbitrary bytes.
 *
 * The first input byte picks a chunk size so every split of the stream into
 * network chunks is explored; the rest is the stream. Every complete line
 * is decoded, objects one by one. Properties: no crash, the partial line
 * never exceeds the cap, a decoded event has an object (and a
 * resourceVersion for a BOOKMARK) unless its object alone was rejected, in
 * which case the object's bytes lie inside the line and its key, when
 * readable, is a bounded string.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

#include "kube/objstore.h"
#include "kube/watch.h"

#define LINE_CAP 4096

static int on_line(void *ud, const char *line, size_t len)
{
	struct tfj_watch_event ev;
	(void)ud;
	if (tfj_watch_decode(&ev, line, len, LINE_CAP) == 0) {
		if (ev.reject != TFJ_OBJDECODE_OK) {
			char key[TFJ_OBJSTORE_KEY_MAX];
			if (ev.object || ev.type > TFJ_WATCH_DELETED || !ev.raw.n ||
			    ev.raw.p < line || ev.raw.p + ev.raw.n > line + len)
				abort();
			if (tfj_objdecode_key(key, sizeof(key), ev.raw) == 0 &&
			    strlen(key) >= sizeof(key))
				abort();
			tfj_watch_event_free(&ev);
			return 0;
		}
		if (!ev.object)
			abort();
		if (ev.type == TFJ_WATCH_BOOKMARK && (!ev.rv || !*ev.rv))
			abort();
		if ((unsigned)ev.type > TFJ_WATCH_ERROR)
			abort();
		tfj_watch_event_free(&ev);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfj_watch_framer f;
	size_t chunk, off = 1;

	if (size < 1)
		return 0;
	chunk = (size_t)data[0] % 64 + 1;
	tfj_watch_framer_init(&f, LINE_CAP);
	while (off < size) {
		size_t n = size - off < chunk ? size - off : chunk;
		int rc = tfj_watch_framer_feed(&f, (const char *)data + off, n, on_line, NULL);
		if (tfj_watch_framer_pending(&f) > LINE_CAP)
			abort();
		if (rc) {
			/* What the informer does: relist, i.e. start a fresh stream. */
			tfj_watch_framer_reset(&f);
		}
		off += n;
	}
	tfj_watch_framer_free(&f);
	return 0;
}
