/*
 * test_objmeta.c - reading an API object's metadata.
 */
#include <cjson/cJSON.h>

#include "kube/objmeta.h"
#include "tfj_test.h"

static void test_meta_str(void)
{
	cJSON *o = cJSON_Parse("{\"metadata\":{\"name\":\"p1\",\"uid\":\"u-1\",\"generation\":3}}");
	cJSON *none = cJSON_Parse("{\"metadata\":\"x\"}");
	cJSON *empty = cJSON_Parse("{}");

	TFJ_CHECK(o && none && empty);
	TFJ_CHECK_STR(tfj_objmeta_str(o, "name"), "p1");
	TFJ_CHECK_STR(tfj_objmeta_str(o, "uid"), "u-1");
	/* Missing, or not a string: NULL. */
	TFJ_CHECK(tfj_objmeta_str(o, "namespace") == NULL);
	TFJ_CHECK(tfj_objmeta_str(o, "generation") == NULL);
	TFJ_CHECK(tfj_objmeta_str(none, "name") == NULL);
	TFJ_CHECK(tfj_objmeta_str(empty, "name") == NULL);
	cJSON_Delete(o);
	cJSON_Delete(none);
	cJSON_Delete(empty);
}

int main(void)
{
	TFJ_RUN(test_meta_str);
	return tfj_test_finish();
}
