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

const cJSON *tfj_objmeta_controller_ref(const cJSON *obj)
{
	const cJSON *meta, *refs, *r;

	if (tfj_json_get_object(&meta, obj, "metadata") ||
	    tfj_json_get_array(&refs, meta, "ownerReferences"))
		return NULL;
	cJSON_ArrayForEach(r, refs) {
		int ctl = 0;

		if (tfj_json_opt_bool(&ctl, r, "controller", 0) == 0 && ctl)
			return r;
	}
	return NULL;
}
