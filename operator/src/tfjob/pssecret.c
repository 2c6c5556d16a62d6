/*
 * pssecret.c - the per-job ps secret's Secret and pod wiring (pssecret.h).
 */
#include "tfjob/pssecret.h"

#include <stdio.h>
#include <string.h>

#include <tfj/err.h>

#include "tfjob/podspec.h"

int tfj_pssecret_name(char *out, size_t outlen, const struct tfj_tfjob *job)
{
	int n = snprintf(out, outlen, "%s%s", job->name, TFJ_PSSECRET_SUFFIX);

	if (n < 0 || (size_t)n >= outlen)
		return tfj_err_set(TFJ_ETOOBIG, "secret name for job %s too long", job->name);
	return 0;
}

int tfj_pssecret_body(cJSON **out, const struct tfj_tfjob *job, const char *operator_name,
		      const uint8_t rnd[TFJ_PSSECRET_BYTES])
{
	static const char hex[] = "0123456789abcdef";
	char name[300], tok[2 * TFJ_PSSECRET_BYTES + 1];
	cJSON *s, *meta, *labels, *data;
	size_t i;
	int rc;

	*out = NULL;
	if ((rc = tfj_pssecret_name(name, sizeof(name), job)))
		return rc;
	for (i = 0; i < TFJ_PSSECRET_BYTES; i++) {
		tok[2 * i] = hex[rnd[i] >> 4];
		tok[2 * i + 1] = hex[rnd[i] & 15];
	}
	tok[2 * TFJ_PSSECRET_BYTES] = '\0';
	rc = TFJ_ENOMEM;
	if (!(s = cJSON_CreateObject()))
		goto out;
	if (!cJSON_AddStringToObject(s, "apiVersion", "v1") ||
	    !cJSON_AddStringToObject(s, "kind", "Secret") ||
	    !(meta = cJSON_AddObjectToObject(s, "metadata")) ||
	    !cJSON_AddStringToObject(meta, "name", name) ||
	    !cJSON_AddStringToObject(meta, "namespace", job->ns) ||
	    !(labels = cJSON_AddObjectToObject(meta, "labels")) ||
	    !cJSON_AddStringToObject(labels, TFJ_LABEL_JOB_NAME, job->name) ||
	    !cJSON_AddStringToObject(labels, TFJ_LABEL_OPERATOR,
				     operator_name ? operator_name : TFJ_PODSPEC_DEFAULT_OPERATOR) ||
	    !cJSON_AddStringToObject(s, "type", "Opaque") ||
	    /* Never rewritten: a changed secret would split a running job in two. */
	    !cJSON_AddTrueToObject(s, "immutable") ||
	    !(data = cJSON_AddObjectToObject(s, "stringData")) ||
	    !cJSON_AddStringToObject(data, TFJ_PSSECRET_KEY, tok))
		goto out;
	if ((rc = tfj_podspec_owner_ref(meta, job)))
		goto out;
	*out = s;
	s = NULL;
	rc = 0;
out:
	/* The hex form is the secret itself: leave no copy on the stack. */
	explicit_bzero(tok, sizeof(tok));
	cJSON_Delete(s);
	return rc == TFJ_ENOMEM ? tfj_err_set(TFJ_ENOMEM, "building the ps secret") : rc;
}

void tfj_pssecret_body_free(cJSON *s)
{
	cJSON *t = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(s, "stringData"),
						    TFJ_PSSECRET_KEY);

	if (cJSON_IsString(t) && t->valuestring)
		explicit_bzero(t->valuestring, strlen(t->valuestring));
	cJSON_Delete(s);
}

int tfj_pssecret_pod(cJSON *spec, cJSON *ctr, const struct tfj_tfjob *job)
{
	char name[300];
	cJSON *vols, *vol, *sec, *mounts, *m, *env, *e;
	int rc;

	if ((rc = tfj_pssecret_name(name, sizeof(name), job)))
		return rc;
	if (!(vols = tfj_podspec_ensure_array(spec, "volumes")))
		return TFJ_ENOMEM;
	tfj_podspec_drop_named(vols, TFJ_PSSECRET_VOLUME);
	if (!(vol = cJSON_CreateObject()))
		return TFJ_ENOMEM;
	cJSON_AddItemToArray(vols, vol);
	if (!cJSON_AddStringToObject(vol, "name", TFJ_PSSECRET_VOLUME) ||
	    !(sec = cJSON_AddObjectToObject(vol, "secret")) ||
	    !cJSON_AddStringToObject(sec, "secretName", name) ||
	    !cJSON_AddNumberToObject(sec, "defaultMode", 0444))
		return TFJ_ENOMEM;
	if (!(mounts = tfj_podspec_ensure_array(ctr, "volumeMounts")))
		return TFJ_ENOMEM;
	tfj_podspec_drop_named(mounts, TFJ_PSSECRET_VOLUME);
	if (!(m = cJSON_CreateObject()))
		return TFJ_ENOMEM;
	cJSON_AddItemToArray(mounts, m);
	if (!cJSON_AddStringToObject(m, "name", TFJ_PSSECRET_VOLUME) ||
	    !cJSON_AddStringToObject(m, "mountPath", TFJ_PSSECRET_DIR) ||
	    !cJSON_AddTrueToObject(m, "readOnly"))
		return TFJ_ENOMEM;
	if (!(env = tfj_podspec_ensure_array(ctr, "env")))
		return TFJ_ENOMEM;
	tfj_podspec_drop_named(env, TFJ_PSSECRET_ENV);
	if (!(e = cJSON_CreateObject()))
		return TFJ_ENOMEM;
	cJSON_AddItemToArray(env, e);
	if (!cJSON_AddStringToObject(e, "name", TFJ_PSSECRET_ENV) ||
	    !cJSON_AddStringToObject(e, "value", TFJ_PSSECRET_FILE))
		return TFJ_ENOMEM;
	return 0;
}
