/*
 * test_jscan.c - the bounded scanner and the per-object decoding built on
 * it (objdecode): ranges of members and elements, depth that costs
 * nothing, a LIST page whose bad items fail alone, and the key of an
 * object that cannot be decoded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/json.h>

#include "kube/jscan.h"
#include "kube/objdecode.h"
#include "tfj_test.h"

static struct tfj_jscan_span S(const char *s)
{
	struct tfj_jscan_span v = { s, strlen(s) };
	return v;
}

static int span_is(struct tfj_jscan_span v, const char *want)
{
	return v.n == strlen(want) && memcmp(v.p, want, v.n) == 0;
}

static void test_members(void)
{
	struct tfj_jscan_span v;
	const char *o = " { \"a\" : 1 , \"b\\\"}\":\"x}]\\\"\", \"c\":[{\"d\":[]},null] ,\"e\":true} ";

	TFJ_CHECK_OK(tfj_jscan_member(&v, S(o), "a"));
	TFJ_CHECK(span_is(v, "1"));
	TFJ_CHECK_OK(tfj_jscan_member(&v, S(o), "c"));
	TFJ_CHECK(span_is(v, "[{\"d\":[]},null]"));
	TFJ_CHECK_OK(tfj_jscan_member(&v, S(o), "e"));
	TFJ_CHECK(span_is(v, "true"));
	TFJ_CHECK_INT(tfj_jscan_member(&v, S(o), "z"), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(tfj_jscan_member(&v, S("[1]"), "a"), TFJ_ETYPE);
	TFJ_CHECK_INT(tfj_jscan_member(&v, S("{}"), "a"), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(tfj_jscan_member(&v, S("{\"a\" 1}"), "a"), TFJ_EPARSE);
	TFJ_CHECK_INT(tfj_jscan_member(&v, S("{\"x\":1 \"a\":2}"), "a"), TFJ_EPARSE);
	TFJ_CHECK_INT(tfj_jscan_member(&v, S("{\"x\":\"unterminated}"), "a"), TFJ_EPARSE);
	TFJ_CHECK_INT(tfj_jscan_member(&v, S("{\"x\":{\"y\":1}"), "a"), TFJ_EPARSE);
}

static void test_iter(void)
{
	struct tfj_jscan_iter it;
	struct tfj_jscan_span v;
	const char *want[] = { "{\"a\":[1,2]}", "\"s,]\"", "3", "[]" };
	int n = 0, rc;

	TFJ_CHECK_OK(tfj_jscan_iter_init(&it, S("[ {\"a\":[1,2]} ,\"s,]\", 3,[] ]")));
	while ((rc = tfj_jscan_iter_next(&v, &it)) == 1) {
		TFJ_CHECK(n < 4 && span_is(v, want[n]));
		n++;
	}
	TFJ_CHECK_INT(rc, 0);
	TFJ_CHECK_INT(n, 4);
	TFJ_CHECK_OK(tfj_jscan_iter_init(&it, S("[]")));
	TFJ_CHECK_INT(tfj_jscan_iter_next(&v, &it), 0);
	TFJ_CHECK_OK(tfj_jscan_iter_init(&it, S("[1 2]")));
	TFJ_CHECK_INT(tfj_jscan_iter_next(&v, &it), 1);
	TFJ_CHECK_INT(tfj_jscan_iter_next(&v, &it), TFJ_EPARSE);
	TFJ_CHECK_INT(tfj_jscan_iter_init(&it, S("{}")), TFJ_ETYPE);
}

static void test_strings(void)
{
	static const char *const path[] = { "metadata", "name", NULL };
	char out[16];

	TFJ_CHECK_OK(tfj_jscan_string(out, sizeof(out), S("\"a\\u0041\\n\"")));
	TFJ_CHECK_STR(out, "aA\n");
	TFJ_CHECK_INT(tfj_jscan_string(out, sizeof(out), S("12")), TFJ_ETYPE);
	TFJ_CHECK_INT(tfj_jscan_string(out, 4, S("\"toolong\"")), TFJ_ETOOBIG);
	TFJ_CHECK_OK(tfj_jscan_path_string(out, sizeof(out),
					   S("{\"metadata\":{\"name\":\"j\"}}"), path));
	TFJ_CHECK_STR(out, "j");
	TFJ_CHECK_INT(tfj_jscan_path_string(out, sizeof(out), S("{\"metadata\":{}}"), path),
		      TFJ_ENOTFOUND);
}

/* An item nested far deeper than any parser allows, built in memory. */
static char *deep_item(const char *name, int depth)
{
	size_t cap = (size_t)depth * 8 + 256, o = 0;
	char *b = malloc(cap);

	if (!b)
		return NULL;
	o += (size_t)snprintf(b, cap, "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"t\"},"
			      "\"spec\":", name);
	for (int i = 0; i < depth; i++)
		o += (size_t)snprintf(b + o, cap - o, "{\"a\":");
	o += (size_t)snprintf(b + o, cap - o, "1");
	for (int i = 0; i < depth; i++)
		b[o++] = '}';
	b[o++] = '}';
	b[o] = '\0';
	return b;
}

static void test_scan_deep_costs_nothing(void)
{
	/* 100000 levels: a recursive parser would overflow the stack. */
	char *item = deep_item("deep", 100000);
	struct tfj_jscan_span v;
	char key[64];

	TFJ_CHECK_NOT_NULL(item);
	if (!item)
		return;
	TFJ_CHECK_OK(tfj_jscan_member(&v, S(item), "spec"));
	TFJ_CHECK_EQ(v.n, strlen(item) - (size_t)(v.p - item) - 1);
	TFJ_CHECK_OK(tfj_objdecode_key(key, sizeof(key), S(item)));
	TFJ_CHECK_STR(key, "t/deep");
	free(item);
}

static void test_decode_object(void)
{
	enum tfj_objdecode_reason why;
	cJSON *o = NULL;
	char *deep = deep_item("d", 100);
	const char *ok = "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"3\"}}";

	TFJ_CHECK_OK(tfj_objdecode_object(&o, &why, ok, strlen(ok), 1024));
	TFJ_CHECK_INT(why, TFJ_OBJDECODE_OK);
	TFJ_CHECK_NOT_NULL(o);
	cJSON_Delete(o);
	TFJ_CHECK_LT(tfj_objdecode_object(&o, &why, deep, strlen(deep), 1u << 20), 0);
	TFJ_CHECK_INT(why, TFJ_OBJDECODE_DEPTH);
	TFJ_CHECK_NULL(o);
	TFJ_CHECK_LT(tfj_objdecode_object(&o, &why, ok, strlen(ok), 10), 0);
	TFJ_CHECK_INT(why, TFJ_OBJDECODE_SIZE);
	TFJ_CHECK_LT(tfj_objdecode_object(&o, &why, "{\"metadata\":", 12, 100), 0);
	TFJ_CHECK_INT(why, TFJ_OBJDECODE_SYNTAX);
	TFJ_CHECK_LT(tfj_objdecode_object(&o, &why, "{\"metadata\":{\"name\":1}}", 23, 100), 0);
	TFJ_CHECK_INT(why, TFJ_OBJDECODE_TYPE);
	TFJ_CHECK_LT(tfj_objdecode_object(&o, &why, "[]", 2, 100), 0);
	TFJ_CHECK_INT(why, TFJ_OBJDECODE_TYPE);
	TFJ_CHECK_STR(tfj_objdecode_reason_name(TFJ_OBJDECODE_DEPTH), "depth");
	free(deep);
}

/* A page with a poison item between two good ones: the good ones decode. */
static void test_page(void)
{
	char *deep = deep_item("bad", 200), *page;
	struct tfj_objdecode_page pg;
	struct tfj_jscan_span it;
	size_t cap;
	int good = 0, bad = 0, rc;

	TFJ_CHECK_NOT_NULL(deep);
	if (!deep)
		return;
	cap = strlen(deep) + 512;
	page = malloc(cap);
	snprintf(page, cap, "{\"kind\":\"TFJobList\",\"metadata\":{\"resourceVersion\":\"77\","
		 "\"continue\":\"tok\"},\"items\":[{\"metadata\":{\"name\":\"a\"}},%s,"
		 "{\"metadata\":{\"name\":\"b\"}}]}", deep);
	/* The whole page is too deep for the parser... */
	{
		cJSON *whole = NULL;
		TFJ_CHECK_INT(tfj_json_parse(&whole, page, strlen(page), strlen(page)), TFJ_ERANGE);
	}
	/* ...its items one by one are not, except the poison one. */
	TFJ_CHECK_OK(tfj_objdecode_page(&pg, page, strlen(page)));
	TFJ_CHECK_STR(pg.rv, "77");
	TFJ_CHECK_STR(pg.cont, "tok");
	while ((rc = tfj_jscan_iter_next(&it, &pg.items)) == 1) {
		enum tfj_objdecode_reason why;
		cJSON *o = NULL;
		if (tfj_objdecode_object(&o, &why, it.p, it.n, TFJ_OBJDECODE_MAX) == 0)
			good++;
		else
			bad += why == TFJ_OBJDECODE_DEPTH;
		cJSON_Delete(o);
	}
	TFJ_CHECK_INT(rc, 0);
	TFJ_CHECK_INT(good, 2);
	TFJ_CHECK_INT(bad, 1);

	TFJ_CHECK_OK(tfj_objdecode_page(&pg, "{\"metadata\":{\"resourceVersion\":\"1\"},"
					"\"items\":null}", 49));
	TFJ_CHECK_INT(tfj_jscan_iter_next(&it, &pg.items), 0);
	TFJ_CHECK_STR(pg.cont, "");
	TFJ_CHECK_INT(tfj_objdecode_page(&pg, "{\"items\":[]}", 12), TFJ_EPARSE);
	TFJ_CHECK_INT(tfj_objdecode_page(&pg, "{\"metadata\":{\"resourceVersion\":\"1\"},"
					 "\"items\":{}}", 47), TFJ_EPARSE);
	free(page);
	free(deep);
}

int main(void)
{
	TFJ_RUN(test_members);
	TFJ_RUN(test_iter);
	TFJ_RUN(test_strings);
	TFJ_RUN(test_scan_deep_costs_nothing);
	TFJ_RUN(test_decode_object);
	TFJ_RUN(test_page);
	return tfj_test_finish();
}
