/*
 * pssecret.c - the per-job ps secret's Secret and pod wiring (pssecret.h).
 */
#include "tfjob/pssecret.h"

#include <stdio.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/names.h>

#include "tfjob/podspec.h"

int tfj_pssecret_prefix(char *out, size_t outlen, const char *job_name)
{
	int n = snprintf(out, outlen, "%.*s", TFJ_PSSECRET_GENERATE_MAX, job_name);
	size_t len, add = sizeof(TFJ_PSSECRET_SUFFIX) - 1;

	if (n < 0 || (size_t)n >= outlen)
		return tfj_err_set(TFJ_ETOOBIG, "secret prefix for job %s too long", job_name);
	len = (size_t)n;
	if (len + add > TFJ_PSSECRET_GENERATE_MAX)
		add = TFJ_PSSECRET_GENERATE_MAX - len;
	if (len + add >= outlen)
		return tfj_err_set(TFJ_ETOOBIG, "secret prefix for job %s too long", job_name);
	memcpy(out + len, TFJ_PSSECRET_SUFFIX, add);
	out[len + add] = '\0';
	return 0;
}

int tfj_pssecret_legacy_name(char *out, size_t outlen, const char *job_name)
{
	int n = snprintf(out, outlen, "%s%s", job_name, TFJ_PSSECRET_LEGACY_SUFFIX);

	if (n < 0 || (size_t)n >= outlen)
		return tfj_err_set(TFJ_ETOOBIG, "secret name for job %s too long", job_name);
	return 0;
}

/* 1 when s is a DNS-1123 subdomain: dot-separated DNS-1123 labels, 253 characters at most. */
static int is_subdomain(const char *s)
{
	size_t len = strlen(s), i = 0, j;

	if (len == 0 || len > TFJ_PSSECRET_NAME_MAX - 1)
		return 0;
	while (i <= len) {
		for (j = i; j < len && s[j] != '.'; j++)
			;
		if (!tfj_names_is_dns1123_label(s + i, j - i))
			return 0;
		i = j + 1;
	}
	return 1;
}

int tfj_pssecret_name_check(char *why, size_t whylen, const char *job_name, const char *name)
{
	char prefix[TFJ_PSSECRET_NAME_MAX];

	if (tfj_pssecret_prefix(prefix, sizeof(prefix), job_name)) {
		snprintf(why, whylen, "the job's name is too long for a secret name");
		return TFJ_EINVAL;
	}
	if (!is_subdomain(name)) {
		snprintf(why, whylen, "%.80s is not a DNS-1123 subdomain", name);
		return TFJ_EINVAL;
	}
	if (strncmp(name, prefix, strlen(prefix)) != 0) {
		snprintf(why, whylen, "%.80s does not start with %s", name, prefix);
		return TFJ_EINVAL;
	}
	return 0;
}

int tfj_pssecret_tls_names(char names[TFJ_PSSECRET_MAX_SANS][TFJ_PSSECRET_SAN_MAX], size_t *n,
			   const struct tfj_tfjob *job, const char *domain)
{
	char host[TFJ_NAMES_HOST_MAX + 1], *colon;
	int i, nps = job->rs[TFJ_RT_PS].present ? job->rs[TFJ_RT_PS].replicas : 0, w, rc;

	*n = 0;
	if (nps < 1 || nps > TFJ_PSSECRET_MAX_SANS) {
		w = snprintf(names[0], TFJ_PSSECRET_SAN_MAX, "*.%s.svc%s%s", job->ns,
			     domain && *domain ? "." : "", domain && *domain ? domain : "");
		if (w < 0 || w >= TFJ_PSSECRET_SAN_MAX)
			return tfj_err_set(TFJ_ETOOBIG, "ps certificate name for job %s too long",
					   job->name);
		*n = 1;
		return 0;
	}
	for (i = 0; i < nps; i++) {
		/* The port is irrelevant to the name: any will do. */
		if ((rc = tfj_names_host(host, sizeof(host), job->name, "ps", i, job->ns, domain, 1)))
			return rc;
		if ((colon = strrchr(host, ':')))
			*colon = '\0';
		if (strlen(host) >= TFJ_PSSECRET_SAN_MAX)
			return tfj_err_set(TFJ_ETOOBIG, "ps host %s too long for a certificate", host);
		memcpy(names[i], host, strlen(host) + 1);
	}
	*n = (size_t)nps;
	return 0;
}

int tfj_pssecret_body(cJSON **out, const struct tfj_tfjob *job, const char *operator_name,
		      const char *name, const uint8_t rnd[TFJ_PSSECRET_BYTES],
		      const struct tfj_pssecret_tls *tls)
{
	static const char hex[] = "0123456789abcdef";
	char prefix[TFJ_PSSECRET_NAME_MAX], tok[2 * TFJ_PSSECRET_BYTES + 1];
	int generate = !name || !*name;
	cJSON *s, *meta, *data;
	size_t i;
	int rc;

	*out = NULL;
	if (!tls || !tls->ca_pem || !tls->cert_pem || !tls->key_pem)
		return tfj_err_set(TFJ_EINVAL, "ps secret: the TLS certificate is missing");
	if ((rc = tfj_pssecret_prefix(prefix, sizeof(prefix), job->name)))
		return rc;
	for (i = 0; i < TFJ_PSSECRET_BYTES; i++) {
		tok[2 * i] = hex[rnd[i] >> 4];
		tok[2 * i + 1] = hex[rnd[i] & 15];
	}
	tok[2 * TFJ_PSSECRET_BYTES] = '\0';
	rc = TFJ_ENOMEM;
	if (!(s = tfj_podspec_job_object(&meta, "v1", "Secret", generate ? prefix : name, job,
					 operator_name)))
		goto out;
	/* The API server picks the name: nobody can have made it before. */
	if (generate && !cJSON_AddItemToObject(meta, "generateName",
					       cJSON_DetachItemFromObject(meta, "name")))
		goto out;
	if (!cJSON_AddStringToObject(s, "type", "Opaque") ||
	    /* Never rewritten: a changed secret would split a running job in two. */
	    !cJSON_AddTrueToObject(s, "immutable") ||
	    !(data = cJSON_AddObjectToObject(s, "stringData")) ||
	    !cJSON_AddStringToObject(data, TFJ_PSSECRET_KEY, tok) ||
	    !cJSON_AddStringToObject(data, TFJ_PSSECRET_CA_KEY, tls->ca_pem) ||
	    !cJSON_AddStringToObject(data, TFJ_PSSECRET_CERT_KEY, tls->cert_pem) ||
	    !cJSON_AddStringToObject(data, TFJ_PSSECRET_TLSKEY_KEY, tls->key_pem))
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
	static const char *const wipe[] = { TFJ_PSSECRET_KEY, TFJ_PSSECRET_TLSKEY_KEY };
	cJSON *data = cJSON_GetObjectItemCaseSensitive(s, "stringData"), *t;
	size_t i;

	for (i = 0; i < sizeof(wipe) / sizeof(wipe[0]); i++) {
		t = cJSON_GetObjectItemCaseSensitive(data, wipe[i]);
		if (cJSON_IsString(t) && t->valuestring)
			explicit_bzero(t->valuestring, strlen(t->valuestring));
	}
	cJSON_Delete(s);
}

int tfj_pssecret_pod(cJSON *spec, cJSON *ctr, const char *name)
{
	cJSON *vol, *sec;

	if (!name || !*name)
		return tfj_err_set(TFJ_EINVAL, "ps secret: no name for the pod's volume");
	if (!(vol = tfj_podspec_volume(spec, TFJ_PSSECRET_VOLUME)) ||
	    !(sec = cJSON_AddObjectToObject(vol, "secret")) ||
	    !cJSON_AddStringToObject(sec, "secretName", name) ||
	    !cJSON_AddNumberToObject(sec, "defaultMode", 0444))
		return TFJ_ENOMEM;
	if (tfj_podspec_mount(ctr, TFJ_PSSECRET_VOLUME, TFJ_PSSECRET_DIR, 1) ||
	    tfj_podspec_env(ctr, TFJ_PSSECRET_ENV, TFJ_PSSECRET_FILE) ||
	    tfj_podspec_env(ctr, TFJ_PSSECRET_TLS_ENV, TFJ_PSSECRET_DIR))
		return TFJ_ENOMEM;
	return 0;
}
