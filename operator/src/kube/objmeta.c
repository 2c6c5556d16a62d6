/*
 * objmeta.c - reading the metadata of a Kubernetes API object.
 */
#include "kube/objmeta.h"

#include <tfj/json.h>

const char *tfj_objmeta_str(const cJSON *obj, const char *key)
{
	const cJSON *meta;
	const char *v;

	if (tfj_json_get_object(&meta, obj, "metadata") || tfj_json_get_string(&v, meta, key))
		return NULL;
	return v;
}
