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
	cJSON *s, *meta, *data;
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
	if (!(s = tfj_podspec_job_object(&meta, "v1", "Secret", name, job, operator_name)))
		goto out;
	if (!cJSON_AddStringToObject(s, "type", "Opaque") ||
	    /* Never rewritten: a changed secret would split a running job in two. */
	    !cJSON_AddTrueToObject(s, "immutable") ||
	    !(data = cJSON_AddObjectToObject(s, "stringData")) ||
	    !cJSON_AddStringToObject(data, TFJ_PSSECRET_KEY, tok))
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
	cJSON *vol, *sec;
	int rc;

	if ((rc = tfj_pssecret_name(name, sizeof(name), job)))
		return rc;
	if (!(vol = tfj_podspec_volume(spec, TFJ_PSSECRET_VOLUME)) ||
	    !(sec = cJSON_AddObjectToObject(vol, "secret")) ||
	    !cJSON_AddStringToObject(sec, "secretName", name) ||
	    !cJSON_AddNumberToObject(sec, "defaultMode", 0444))
		return TFJ_ENOMEM;
	if (tfj_podspec_mount(ctr, TFJ_PSSECRET_VOLUME, TFJ_PSSECRET_DIR, 1) ||
	    tfj_podspec_env(ctr, TFJ_PSSECRET_ENV, TFJ_PSSECRET_FILE))
		return TFJ_ENOMEM;
	return 0;
}
