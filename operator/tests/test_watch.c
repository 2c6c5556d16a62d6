/*
 * test_watch.c - the watch line framer and event decoder.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

#include "tfj_test.h"
#include "kube/watch.h"

struct lines {
	char got[16][256];
	int n;
	int fail_at;   /* return an error on this line number (1-based), 0 = never */
};

static int collect(void *ud, const char *line, size_t len)
{
	struct lines *l = ud;
	if (l->n >= 16 || len >= 256)
		return TFJ_ERANGE;
	memcpy(l->got[l->n], line, len);
	l->got[l->n][len] = '\0';
	l->n++;
	return l->fail_at && l->n == l->fail_at ? TFJ_EPARSE : 0;
}

static void test_split_everywhere(void)
{
	const char *stream = "{\"a\":1}\n{\"b\":22}\r\n\n{\"c\":333}\n";
	size_t len = strlen(stream);

	/* Every split point (and every pair of split points) gives the same lines. */
	for (size_t i = 0; i <= len; i++)
		for (size_t j = i; j <= len; j++) {
			struct tfj_watch_framer f;
			struct lines l = { .n = 0 };
			tfj_watch_framer_init(&f, 64);
			TFJ_CHECK_INT(tfj_watch_framer_feed(&f, stream, i, collect, &l), 0);
			TFJ_CHECK_INT(tfj_watch_framer_feed(&f, stream + i, j - i, collect, &l), 0);
			TFJ_CHECK_INT(tfj_watch_framer_feed(&f, stream + j, len - j, collect, &l), 0);
			TFJ_CHECK_INT(l.n, 3);
			if (l.n == 3) {
				TFJ_CHECK_STR(l.got[0], "{\"a\":1}");
				TFJ_CHECK_STR(l.got[1], "{\"b\":22}");
				TFJ_CHECK_STR(l.got[2], "{\"c\":333}");
			}
			TFJ_CHECK_INT(tfj_watch_framer_pending(&f), 0);
			tfj_watch_framer_free(&f);
		}
}

static void test_byte_at_a_time(void)
{
	const char *stream = "line one\nline two\npartial";
	struct tfj_watch_framer f;
	struct lines l = { .n = 0 };

	tfj_watch_framer_init(&f, 64);
	for (size_t i = 0; stream[i]; i++)
		TFJ_CHECK_INT(tfj_watch_framer_feed(&f, stream + i, 1, collect, &l), 0);
	TFJ_CHECK_INT(l.n, 2);
	TFJ_CHECK_STR(l.got[1], "line two");
	TFJ_CHECK_INT(tfj_watch_framer_pending(&f), 7);
	tfj_watch_framer_free(&f);
}

static void test_huge_line(void)
{
	struct tfj_watch_framer f;
	struct lines l = { .n = 0 };
	char *big = malloc(1000);

	TFJ_CHECK(big != NULL);
	if (!big)
		return;
	memset(big, 'x', 1000);
	tfj_watch_framer_init(&f, 100);
	/* Within one chunk, with its newline. */
	big[999] = '\n';
	TFJ_CHECK_INT(tfj_watch_framer_feed(&f, big, 1000, collect, &l), TFJ_ETOOBIG);
	/* Once failed, the framer refuses more input until reset. */
	TFJ_CHECK_INT(tfj_watch_framer_feed(&f, "ok\n", 3, collect, &l), TFJ_ESTATE);
	tfj_watch_framer_reset(&f);
	TFJ_CHECK_INT(tfj_watch_framer_feed(&f, "ok\n", 3, collect, &l), 0);
	TFJ_CHECK_INT(l.n, 1);
	/* Across chunks without a newline: fails as soon as the cap is passed. */
	tfj_watch_framer_reset(&f);
	big[999] = 'x';
	TFJ_CHECK_INT(tfj_watch_framer_feed(&f, big, 60, collect, &l), 0);
	TFJ_CHECK_INT(tfj_watch_framer_feed(&f, big, 60, collect, &l), TFJ_ETOOBIG);
	TFJ_CHECK_LE(tfj_watch_framer_pending(&f), 100);
	/* Exactly at the cap is fine. */
	tfj_watch_framer_reset(&f);
	big[100] = '\n';
	TFJ_CHECK_INT(tfj_watch_framer_feed(&f, big, 101, collect, &l), 0);
	TFJ_CHECK_INT(l.n, 2);
	tfj_watch_framer_free(&f);
	free(big);
}

static void test_callback_error_stops(void)
{
	struct tfj_watch_framer f;
	struct lines l = { .n = 0, .fail_at = 2 };

	tfj_watch_framer_init(&f, 64);
	TFJ_CHECK_INT(tfj_watch_framer_feed(&f, "a\nb\nc\n", 6, collect, &l), TFJ_EPARSE);
	TFJ_CHECK_INT(l.n, 2);
	tfj_watch_framer_free(&f);
}

static int decode(struct tfj_watch_event *ev, const char *s)
{
	return tfj_watch_decode(ev, s, strlen(s), 1 << 20);
}

static void test_decode(void)
{
	struct tfj_watch_event ev;

	TFJ_CHECK_INT(decode(&ev, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"p\","
				  "\"namespace\":\"n\",\"resourceVersion\":\"12\"}}}"), 0);
	TFJ_CHECK_INT(ev.type, TFJ_WATCH_ADDED);
	TFJ_CHECK_STR(ev.rv, "12");
	tfj_watch_event_free(&ev);

	TFJ_CHECK_INT(decode(&ev, "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"p\"}}}"),
		      0);
	TFJ_CHECK_INT(ev.type, TFJ_WATCH_DELETED);
	TFJ_CHECK(ev.rv == NULL);
	tfj_watch_event_free(&ev);

	TFJ_CHECK_INT(decode(&ev, "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":"
				  "{\"resourceVersion\":\"99\"}}}"), 0);
	TFJ_CHECK_INT(ev.type, TFJ_WATCH_BOOKMARK);
	TFJ_CHECK_STR(ev.rv, "99");
	tfj_watch_event_free(&ev);

	TFJ_CHECK_INT(decode(&ev, "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,"
				  "\"reason\":\"Expired\"}}"), 0);
	TFJ_CHECK_INT(ev.type, TFJ_WATCH_ERROR);
	TFJ_CHECK_INT(ev.code, 410);
	tfj_watch_event_free(&ev);
}

static void test_decode_bad(void)
{
	struct tfj_watch_event ev;

	TFJ_CHECK_INT(decode(&ev, "{\"type\":\"ADDED\""), TFJ_EPARSE);
	TFJ_CHECK(ev.root == NULL);
	TFJ_CHECK_INT(decode(&ev, "[1,2]"), TFJ_EPARSE);
	TFJ_CHECK_INT(decode(&ev, "{\"type\":7,\"object\":{}}"), TFJ_EPARSE);
	TFJ_CHECK_INT(decode(&ev, "{\"type\":\"ADDED\",\"object\":[]}"), TFJ_EPARSE);
	TFJ_CHECK_INT(decode(&ev, "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{}}}"),
		      TFJ_EPARSE);
	TFJ_CHECK_INT(decode(&ev, "{\"type\":\"RENAMED\",\"object\":{\"metadata\":{\"name\":\"x\"}}}"),
		      TFJ_EUNSUPP);
	TFJ_CHECK_INT(tfj_watch_decode(&ev, "{\"type\":\"ADDED\"}", 16, 10), TFJ_ETOOBIG);
	TFJ_CHECK_STR(tfj_watch_type_name(TFJ_WATCH_MODIFIED), "MODIFIED");
	TFJ_CHECK_STR(tfj_watch_type_name((enum tfj_watch_type)42), "UNKNOWN");
}

/* A line that reads fine with an object that does not: rejected alone. */
static void check_rejected(const char *line, enum tfj_objdecode_reason why)
{
	struct tfj_watch_event ev;

	TFJ_CHECK_INT(decode(&ev, line), 0);
	TFJ_CHECK_INT(ev.reject, why);
	TFJ_CHECK_NULL(ev.object);
	TFJ_CHECK_GT(ev.raw.n, 0);
	tfj_watch_event_free(&ev);
}

static void test_decode_rejected(void)
{
	check_rejected("{\"type\":\"ADDED\",\"object\":{}}", TFJ_OBJDECODE_TYPE);
	check_rejected("{\"type\":\"ADDED\",\"object\":{\"metadata\":{}}}", TFJ_OBJDECODE_TYPE);
	check_rejected("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"\"}}}",
		       TFJ_OBJDECODE_TYPE);
	check_rejected("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"x\","
		       "\"resourceVersion\":5}}}", TFJ_OBJDECODE_TYPE);
	check_rejected("{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"x\"},"
		       "\"spec\":[1,}}}", TFJ_OBJDECODE_SYNTAX);
}

static void test_deep_nesting(void)
{
	struct tfj_watch_event ev;
	char buf[4096];
	size_t o = 0;
	o += (size_t)snprintf(buf, sizeof(buf), "{\"type\":\"ADDED\",\"object\":{\"metadata\":"
				   "{\"name\":\"x\",\"namespace\":\"n\",\"resourceVersion\":\"5\"},"
				   "\"spec\":");
	for (int i = 0; i < 200; i++)
		buf[o++] = '[';
	for (int i = 0; i < 200; i++)
		buf[o++] = ']';
	buf[o++] = '}';
	buf[o++] = '}';
	buf[o] = '\0';
	/* The line is read with the scanner; only its object is refused, and
	 * what the informer needs of it can still be read. */
	TFJ_CHECK_INT(decode(&ev, buf), 0);
	TFJ_CHECK_NULL(ev.root);
	TFJ_CHECK_INT(ev.type, TFJ_WATCH_ADDED);
	TFJ_CHECK_INT(ev.reject, TFJ_OBJDECODE_DEPTH);
	TFJ_CHECK_STR(ev.rv, "5");
	{
		char key[64];
		TFJ_CHECK_OK(tfj_objdecode_key(key, sizeof(key), ev.raw));
		TFJ_CHECK_STR(key, "n/x");
	}
	tfj_watch_event_free(&ev);
}

int main(void)
{
	TFJ_RUN(test_split_everywhere);
	TFJ_RUN(test_byte_at_a_time);
	TFJ_RUN(test_huge_line);
	TFJ_RUN(test_callback_error_stops);
	TFJ_RUN(test_decode);
	TFJ_RUN(test_decode_bad);
	TFJ_RUN(test_decode_rejected);
	TFJ_RUN(test_deep_nesting);
	return tfj_test_finish();
}
