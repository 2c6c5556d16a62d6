/*
 * adopt.c - 409 on a child's create: ours, adopt, wait, or refuse.
 */
#include "tfjob/adopt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/json.h>

#include "kube/objmeta.h"
#include "tfjob/podspec.h"

const char *tfj_adopt_name(enum tfj_adopt_verdict v)
{
	static const char *const names[] = { "ours", "orphan", "stale", "foreign" };

	return (v >= 0 && v <= TFJ_ADOPT_FOREIGN) ? names[v] : "";
}

static const char *str_or(const cJSON *o, const char *key, const char *def)
{
	const char *s = NULL;

	return tfj_json_opt_string(&s, o, key, def) == 0 && s ? s : def;
}

/* metadata.labels[key] of obj, or NULL. */
static const char *label(const cJSON *obj, const char *key)
{
	const cJSON *meta, *labels;
	const char *v = NULL;

	if (tfj_json_get_object(&meta, obj, "metadata") ||
	    tfj_json_get_object(&labels, meta, "labels") ||
	    tfj_json_opt_string(&v, labels, key, NULL))
		return NULL;
	return v;
}

/*
 * 1 when obj carries the labels the planner slots children by, with the
 * values of `want` (the body we tried to create): adopted, it is the child
 * we wanted. Without `want` only the job-name label is compared.
 */
static int labels_match(const cJSON *obj, const cJSON *want, const char *job_name)
{
	static const char *const keys[] = { TFJ_LABEL_REPLICA_TYPE, TFJ_LABEL_REPLICA_INDEX };
	const char *v = label(obj, TFJ_LABEL_JOB_NAME);

	if (!v || strcmp(v, job_name))
		return 0;
	for (size_t i = 0; want && i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *w = label(want, keys[i]), *got = label(obj, keys[i]);

		if (w && (!got || strcmp(got, w)))
			return 0;
	}
	return 1;
}

static int terminating(const cJSON *obj)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	const cJSON *ts = cJSON_GetObjectItemCaseSensitive(meta, "deletionTimestamp");

	return ts && !cJSON_IsNull(ts);
}

enum tfj_adopt_verdict tfj_adopt_decide(char *why, size_t whylen, const cJSON *obj,
					const cJSON *want, const struct tfj_tfjob *job)
{
	const cJSON *ref = tfj_objmeta_controller_ref(obj);
	const char *name = tfj_objmeta_str(obj, "name");

	if (!name)
		name = "?";
	if (ref) {
		const char *kind = str_or(ref, "kind", ""), *rname = str_or(ref, "name", "");
		const char *ruid = str_or(ref, "uid", "");

		if (!strcmp(ruid, job->uid)) {
			snprintf(why, whylen, "%s is already ours", name);
			return TFJ_ADOPT_OURS;
		}
		if (!strcmp(kind, TFJ_TFJOB_KIND) && !strcmp(rname, job->name)) {
			snprintf(why, whylen, "%s still belongs to an earlier TFJob %s (uid %s) that "
				 "the garbage collector is deleting", name, rname, ruid);
			return TFJ_ADOPT_STALE;
		}
		snprintf(why, whylen, "%s already exists and is controlled by %s %s, not by "
			 "TFJob %s", name, kind, rname, job->name);
		return TFJ_ADOPT_FOREIGN;
	}
	if (!labels_match(obj, want, job->name)) {
		snprintf(why, whylen, "%s already exists, has no controller and not the labels "
			 "of TFJob %s's replica (%s, %s, %s): not ours to adopt", name, job->name,
			 TFJ_LABEL_JOB_NAME, TFJ_LABEL_REPLICA_TYPE, TFJ_LABEL_REPLICA_INDEX);
		return TFJ_ADOPT_FOREIGN;
	}
	if (terminating(obj)) {
		snprintf(why, whylen, "%s is an orphan being deleted", name);
		return TFJ_ADOPT_STALE;
	}
	snprintf(why, whylen, "%s is an orphan with the labels of TFJob %s's replica: "
		 "adopting it", name, job->name);
	return TFJ_ADOPT_ORPHAN;
}

int tfj_adopt_patch(char **out, const cJSON *obj, const struct tfj_tfjob *job)
{
	const char *uid = tfj_objmeta_str(obj, "uid");
	cJSON *p = NULL, *meta, *refs, *ref;
	int rc = 0;

	*out = NULL;
	if (!uid || !*uid)
		return tfj_err_set(TFJ_EINVAL, "adopt: the object has no uid");
	if (!(p = cJSON_CreateObject()) || !(meta = cJSON_AddObjectToObject(p, "metadata")) ||
	    !(refs = cJSON_AddArrayToObject(meta, "ownerReferences")) ||
	    !(ref = cJSON_CreateObject()) || !cJSON_AddItemToArray(refs, ref) ||
	    !cJSON_AddStringToObject(ref, "apiVersion", TFJ_TFJOB_API_VERSION) ||
	    !cJSON_AddStringToObject(ref, "kind", TFJ_TFJOB_KIND) ||
	    !cJSON_AddStringToObject(ref, "name", job->name) ||
	    !cJSON_AddStringToObject(ref, "uid", job->uid) ||
	    !cJSON_AddTrueToObject(ref, "controller") ||
	    !cJSON_AddTrueToObject(ref, "blockOwnerDeletion") ||
	    /* The precondition: the patch fails (409) on another object of this name. */
	    !cJSON_AddStringToObject(meta, "uid", uid) ||
	    !(*out = cJSON_PrintUnformatted(p)))
		rc = tfj_err_set(TFJ_ENOMEM, "adopt patch");
	cJSON_Delete(p);
	return rc;
}
