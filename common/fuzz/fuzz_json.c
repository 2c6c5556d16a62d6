/*
 * fuzz_json.c - the JSON parser and every getter on arbitrary bytes.
 */
#include <stdint.h>
#include <stdlib.h>

#include "tfj/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const keys[] = { "a", "b", "cluster", "task", "index", "" };
	cJSON *root = NULL;
	const cJSON *it;
	const char *s;
	int64_t v;
	double d;
	int b;
	size_t i;

	if (tfj_json_parse(&root, (const char *)data, size, 1 << 20) != 0)
		return 0;
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		(void)tfj_json_get_string(&s, root, keys[i]);
		(void)tfj_json_get_int64(&v, root, keys[i], INT64_MIN, INT64_MAX);
		(void)tfj_json_get_number(&d, root, keys[i]);
		(void)tfj_json_get_bool(&b, root, keys[i]);
		(void)tfj_json_get_object(&it, root, keys[i]);
		(void)tfj_json_opt_int(&b, root, keys[i], -5, 5, 0);
	}
	cJSON_ArrayForEach(it, root) {
		(void)tfj_json_as_string(&s, it, "item");
		(void)tfj_json_as_int64(&v, it, "item", -100, 100);
	}
	{
		char *out = NULL;
		if (tfj_json_print(&out, root) == 0)
			free(out);
	}
	cJSON_Delete(root);
	return 0;
}
