#include <stdlib.h>
#include <string.h>

#include "tfj/err.h"
#include <stdint.h>

#include "tfj/json.h"
#include "tfj_test.h"

static cJSON *parse(const char *s)
{
	cJSON *root = NULL;

	TFJ_CHECK_INT(tfj_json_parse(&root, s, strlen(s), 1 << 20), 0);
	return root;
}

static void test_parse_limits(void)
{
	cJSON *root = NULL;
	char deep[400];
	int i;

	TFJ_CHECK_INT(tfj_json_parse(&root, "{\"a\":1}", 7, 6), TFJ_ETOOBIG);
	TFJ_CHECK(root == NULL);
	TFJ_CHECK_INT(tfj_json_parse(&root, "{\"a\":", 5, 100), TFJ_EPARSE);
	TFJ_CHECK_INT(tfj_json_parse(&root, "{} x", 4, 100), TFJ_EPARSE);
	TFJ_CHECK_INT(tfj_json_parse(&root, "", 0, 100), TFJ_EPARSE);
	/* Length-delimited: bytes after len are not read. */
	TFJ_CHECK_INT(tfj_json_parse(&root, "[1]garbage", 3, 100), 0);
	cJSON_Delete(root);
	TFJ_CHECK_INT(tfj_json_parse(&root, "{}  \n", 5, 100), 0);
	cJSON_Delete(root);
	for (i = 0; i < 100; i++)
		deep[i] = '[';
	for (i = 0; i < 100; i++)
		deep[100 + i] = ']';
	TFJ_CHECK_INT(tfj_json_parse(&root, deep, 200, 1000), TFJ_ERANGE);
	TFJ_CHECK(strstr(tfj_err_detail(), "nested") != NULL);
	TFJ_CHECK_INT(tfj_json_parse(&root, deep + 100 - TFJ_JSON_MAX_DEPTH,
				     2 * TFJ_JSON_MAX_DEPTH, 1000), 0);
	cJSON_Delete(root);
}

static void test_getters(void)
{
	cJSON *root = parse("{\"s\":\"x\",\"n\":3,\"f\":1.5,\"b\":true,\"o\":{},\"a\":[1],"
			    "\"big\":1e300,\"neg\":-4,\"z\":null}");
	const char *s;
	const cJSON *it;
	int64_t v;
	int iv, b;
	double d;

	TFJ_CHECK_INT(tfj_json_get_string(&s, root, "s"), 0);
	TFJ_CHECK_STR(s, "x");
	TFJ_CHECK_INT(tfj_json_get_string(&s, root, "n"), TFJ_ETYPE);
	TFJ_CHECK(strstr(tfj_err_detail(), "'n'") != NULL);
	TFJ_CHECK_INT(tfj_json_get_string(&s, root, "missing"), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(tfj_json_get_int64(&v, root, "n", 0, 10), 0);
	TFJ_CHECK_INT(v, 3);
	TFJ_CHECK_INT(tfj_json_get_int64(&v, root, "n", 4, 10), TFJ_ERANGE);
	TFJ_CHECK_INT(tfj_json_get_int64(&v, root, "f", 0, 10), TFJ_ETYPE);
	TFJ_CHECK_INT(tfj_json_get_int64(&v, root, "big", INT64_MIN, INT64_MAX), TFJ_ERANGE);
	TFJ_CHECK_INT(tfj_json_get_int(&iv, root, "neg", -10, 10), 0);
	TFJ_CHECK_INT(iv, -4);
	TFJ_CHECK_INT(tfj_json_get_number(&d, root, "f"), 0);
	TFJ_CHECK(d == 1.5);
	TFJ_CHECK_INT(tfj_json_get_bool(&b, root, "b"), 0);
	TFJ_CHECK_INT(b, 1);
	TFJ_CHECK_INT(tfj_json_get_bool(&b, root, "n"), TFJ_ETYPE);
	TFJ_CHECK_INT(tfj_json_get_object(&it, root, "o"), 0);
	TFJ_CHECK_INT(tfj_json_get_object(&it, root, "a"), TFJ_ETYPE);
	TFJ_CHECK_INT(tfj_json_get_array(&it, root, "a"), 0);
	TFJ_CHECK_INT(tfj_json_get_array(&it, root, "o"), TFJ_ETYPE);
	/* Getters on a non-object do not crash. */
	TFJ_CHECK_INT(tfj_json_get_string(&s, it, "x"), TFJ_ETYPE);
	TFJ_CHECK_INT(tfj_json_get_string(&s, NULL, "x"), TFJ_ETYPE);
	/* Optional values: absent or null gives the default, wrong type errs. */
	TFJ_CHECK_INT(tfj_json_opt_string(&s, root, "missing", "def"), 0);
	TFJ_CHECK_STR(s, "def");
	TFJ_CHECK_INT(tfj_json_opt_string(&s, root, "z", "dz"), 0);
	TFJ_CHECK_STR(s, "dz");
	TFJ_CHECK_INT(tfj_json_opt_string(&s, root, "n", "d"), TFJ_ETYPE);
	TFJ_CHECK_INT(tfj_json_opt_int(&iv, root, "missing", 0, 5, 2), 0);
	TFJ_CHECK_INT(iv, 2);
	TFJ_CHECK_INT(tfj_json_opt_int(&iv, root, "n", 0, 2, 0), TFJ_ERANGE);
	TFJ_CHECK_INT(tfj_json_opt_bool(&b, root, "missing", 0), 0);
	TFJ_CHECK_INT(b, 0);
	cJSON_Delete(root);
}

static void test_int_precision_boundary(void)
{
	cJSON *root = parse("{\"ok\":9007199254740991,\"bad\":9007199254740993}");
	int64_t v;

	TFJ_CHECK_INT(tfj_json_get_int64(&v, root, "ok", INT64_MIN, INT64_MAX), 0);
	TFJ_CHECK(v == TFJ_JSON_INT_MAX);
	TFJ_CHECK_INT(tfj_json_get_int64(&v, root, "bad", INT64_MIN, INT64_MAX), TFJ_ERANGE);
	cJSON_Delete(root);
}

static void test_print(void)
{
	cJSON *root = parse("{ \"a\" : [ 1, \"q\\\"\" ] }");
	char *s = NULL;

	TFJ_CHECK_INT(tfj_json_print(&s, root), 0);
	TFJ_CHECK_STR(s, "{\"a\":[1,\"q\\\"\"]}");
	free(s);
	cJSON_Delete(root);
}

/* The counted size is the printed size, for every kind of value and escape. */
static void test_text_size(void)
{
	static const char *docs[] = {
		"{}", "[]", "null", "true", "false", "0", "-12", "3.5", "1e300", "0.1",
		"\"\"", "\"a\\\"b\\\\c\\n\\t\\u0001\\u001f\\u00e9\"",
		"{\"a\":1,\"b\":[1,2,{\"c\":null}],\"d\\\"e\":\"x\"}",
		"[[[[]]],{},\"\",-0.000123456789012345678]",
	};
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		cJSON *root = NULL;
		char *out = NULL;

		TFJ_CHECK_INT(tfj_json_parse(&root, docs[i], strlen(docs[i]), 1 << 20), 0);
		TFJ_CHECK_INT(tfj_json_print(&out, root), 0);
		if (out) {
			TFJ_CHECK_INT(tfj_json_text_size(root, 1 << 20), strlen(out));
			/* At the exact size it fits; one byte less and it says cap + 1. */
			TFJ_CHECK_INT(tfj_json_text_size(root, strlen(out)), strlen(out));
			TFJ_CHECK_INT(tfj_json_text_size(root, strlen(out) - 1), strlen(out));
		}
		free(out);
		cJSON_Delete(root);
	}
	TFJ_CHECK_INT(tfj_json_text_size(NULL, 10), 0);
}

/* A large tree stops counting at the cap. */
static void test_text_size_cap(void)
{
	cJSON *arr = cJSON_CreateArray();

	for (int i = 0; i < 10000; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString("0123456789"));
	TFJ_CHECK_INT(tfj_json_text_size(arr, 1 << 20), 2 + 10000 * 12 + 9999);
	TFJ_CHECK_INT(tfj_json_text_size(arr, 100), 101);
	TFJ_CHECK_INT(tfj_json_text_size(arr, SIZE_MAX), 2 + 10000 * 12 + 9999);
	cJSON_Delete(arr);
}

int main(void)
{
	TFJ_RUN(test_parse_limits);
	TFJ_RUN(test_getters);
	TFJ_RUN(test_int_precision_boundary);
	TFJ_RUN(test_print);
	TFJ_RUN(test_text_size);
	TFJ_RUN(test_text_size_cap);
	return tfj_test_finish();
}
