/*
 * netpol.c - the per-job NetworkPolicy (netpol.h).
 */
#include "tfjob/netpol.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include <tfj/err.h>
#include <tfj/json.h>

#define PORT_MAX 65535
/* How deep tfj_netpol_spec_digest follows a spec (ours is 6 levels deep). */
#define DIGEST_DEPTH 32

int tfj_netpol_name(char *out, size_t outlen, const struct tfj_tfjob *job)
{
	int n = snprintf(out, outlen, "%s%s", job->name, TFJ_NETPOL_SUFFIX);

	if (n < 0 || (size_t)n >= outlen)
		return tfj_err_set(TFJ_ETOOBIG, "NetworkPolicy name for job %s too long", job->name);
	return 0;
}

/* {matchLabels: {job-name, operator-name}} added to obj under key. */
static int add_job_selector(cJSON *obj, const char *key, const struct tfj_tfjob *job,
			    const char *op)
{
	cJSON *sel, *ml;

	return (sel = cJSON_AddObjectToObject(obj, key)) &&
	       (ml = cJSON_AddObjectToObject(sel, "matchLabels")) &&
	       cJSON_AddStringToObject(ml, TFJ_LABEL_JOB_NAME, job->name) &&
	       cJSON_AddStringToObject(ml, TFJ_LABEL_OPERATOR, op) ? 0 : TFJ_ENOMEM;
}

/* Appends {protocol, port[, endPort]} (port 0: every port of the protocol). */
static int add_port(cJSON *ports, const char *proto, int port, int end)
{
	cJSON *p = cJSON_CreateObject();

	if (!p)
		return TFJ_ENOMEM;
	cJSON_AddItemToArray(ports, p);
	if (!cJSON_AddStringToObject(p, "protocol", proto))
		return TFJ_ENOMEM;
	if (port > 0 && !cJSON_AddNumberToObject(p, "port", port))
		return TFJ_ENOMEM;
	if (end > port && !cJSON_AddNumberToObject(p, "endPort", end))
		return TFJ_ENOMEM;
	return 0;
}

/* The distinct training ports of the job's replica types, ascending; their count. */
static size_t training_ports(int *ports, const struct tfj_tfjob *job,
			     const struct tfj_podspec_opts *o)
{
	size_t n = 0, i, j;
	int t, p;

	for (t = 0; t < TFJ_RT_COUNT; t++) {
		if (!job->rs[t].present)
			continue;
		p = tfj_podspec_port(job, (enum tfj_rtype)t, o);
		if (p < 1 || p > PORT_MAX)
			continue;
		for (i = 0; i < n && ports[i] < p; i++)
			;
		if (i < n && ports[i] == p)
			continue;
		for (j = n; j > i; j--)
			ports[j] = ports[j - 1];
		ports[i] = p;
		n++;
	}
	return n;
}

int tfj_netpol_body(cJSON **out, const struct tfj_tfjob *job, const struct tfj_podspec_opts *o)
{
	const char *op = o && o->operator_name ? o->operator_name : TFJ_PODSPEC_DEFAULT_OPERATOR;
	int ports[TFJ_RT_COUNT], lo = 1;
	char name[300];
	cJSON *np, *meta, *spec, *types, *ingress, *rule, *from, *peer, *pl;
	size_t n, i;
	int rc;

	*out = NULL;
	if (!job->spec_valid)
		return tfj_err_set(TFJ_EINVAL, "job %s has no valid spec", job->name);
	if ((rc = tfj_netpol_name(name, sizeof(name), job)))
		return rc;
	n = training_ports(ports, job, o);
	rc = TFJ_ENOMEM;
	if (!(np = tfj_podspec_job_object(&meta, "networking.k8s.io/v1", "NetworkPolicy", name,
					  job, op)))
		goto out;
	if (!(spec = cJSON_AddObjectToObject(np, "spec")) ||
	    add_job_selector(spec, "podSelector", job, op) ||
	    !(types = cJSON_AddArrayToObject(spec, "policyTypes")) ||
	    !(ingress = cJSON_AddArrayToObject(spec, "ingress")))
		goto out;
	cJSON_AddItemToArray(types, cJSON_CreateString("Ingress"));
	if (cJSON_GetArraySize(types) != 1)
		goto out;
	/* The training ports: only from pods of this job (same namespace). */
	if (!(rule = cJSON_CreateObject()))
		goto out;
	cJSON_AddItemToArray(ingress, rule);
	if (!(from = cJSON_AddArrayToObject(rule, "from")) || !(peer = cJSON_CreateObject()))
		goto out;
	cJSON_AddItemToArray(from, peer);
	if (add_job_selector(peer, "podSelector", job, op) ||
	    !(pl = cJSON_AddArrayToObject(rule, "ports")))
		goto out;
	for (i = 0; i < n; i++)
		if (add_port(pl, "TCP", ports[i], 0))
			goto out;
	/* Everything else stays open: TCP around the training ports, UDP. */
	if (!(rule = cJSON_CreateObject()))
		goto out;
	cJSON_AddItemToArray(ingress, rule);
	if (!(pl = cJSON_AddArrayToObject(rule, "ports")))
		goto out;
	for (i = 0; i <= n; i++) {
		int hi = i < n ? ports[i] - 1 : PORT_MAX;

		if (hi >= lo && add_port(pl, "TCP", lo, hi))
			goto out;
		if (i < n)
			lo = ports[i] + 1;
	}
	if (add_port(pl, "UDP", 0, 0))
		goto out;
	*out = np;
	np = NULL;
	rc = 0;
out:
	cJSON_Delete(np);
	return rc == TFJ_ENOMEM ? tfj_err_set(TFJ_ENOMEM, "building the NetworkPolicy") : rc;
}

static int by_key(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;

	return strcmp(x->string ? x->string : "", y->string ? y->string : "");
}

/*
 * Sorts the members of every object in the tree v by key, in place. The
 * member list is relinked as cJSON keeps it: child->prev is the last item,
 * the last item's next is NULL.
 */
static int sort_members(cJSON *v, int depth)
{
	cJSON *it, **items;
	size_t n = 0, i;
	int rc;

	if (depth > DIGEST_DEPTH)
		return tfj_err_set(TFJ_ETOOBIG, "NetworkPolicy spec nested too deep");
	for (it = v->child; it; it = it->next) {
		if ((cJSON_IsObject(it) || cJSON_IsArray(it)) && (rc = sort_members(it, depth + 1)))
			return rc;
		n++;
	}
	if (!cJSON_IsObject(v) || n < 2)
		return 0;
	if (n > SIZE_MAX / sizeof(*items) || !(items = malloc(n * sizeof(*items))))
		return tfj_err_set(TFJ_ENOMEM, "NetworkPolicy digest");
	for (i = 0, it = v->child; it; it = it->next)
		items[i++] = it;
	qsort(items, n, sizeof(*items), by_key);
	v->child = items[0];
	for (i = 0; i < n; i++) {
		items[i]->prev = items[i ? i - 1 : n - 1];
		items[i]->next = i + 1 < n ? items[i + 1] : NULL;
	}
	free(items);
	return 0;
}

/*
 * The digest of spec, whose members it sorts in place (a tree the caller
 * owns and may reorder): tfj_netpol_spec_digest without the copy.
 */
static int digest_sorted(char *out, size_t outlen, cJSON *spec, size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0, i;
	char *text = NULL;
	size_t len;
	int rc;

	if (outlen)
		out[0] = '\0';
	if (!cJSON_IsObject(spec))
		return tfj_err_set(TFJ_EINVAL, "NetworkPolicy spec is not an object");
	if (outlen < TFJ_NETPOL_DIGEST_MAX)
		return tfj_err_set(TFJ_ETOOBIG, "NetworkPolicy digest buffer too small");
	if ((rc = sort_members(spec, 0)) || (rc = tfj_json_print(&text, spec)))
		goto out;
	len = strlen(text);
	if (len > cap) {
		rc = tfj_err_set(TFJ_ETOOBIG, "NetworkPolicy spec over %zu bytes", cap);
		goto out;
	}
	if (!EVP_Digest(text, len, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32) {
		rc = tfj_err_set(TFJ_EINTERNAL, "NetworkPolicy digest: SHA-256 failed");
		goto out;
	}
	memcpy(out, "sha256:", 7);
	for (i = 0; i < mdlen; i++) {
		out[7 + 2 * i] = hex[md[i] >> 4];
		out[8 + 2 * i] = hex[md[i] & 15];
	}
	out[7 + 2 * mdlen] = '\0';
	rc = 0;
out:
	free(text);
	return rc;
}

int tfj_netpol_spec_digest(char *out, size_t outlen, const cJSON *spec, size_t cap)
{
	cJSON *copy;
	int rc;

	if (outlen)
		out[0] = '\0';
	if (!cJSON_IsObject(spec))
		return tfj_err_set(TFJ_EINVAL, "NetworkPolicy spec is not an object");
	if (!(copy = cJSON_Duplicate(spec, 1)))
		return tfj_err_set(TFJ_ENOMEM, "NetworkPolicy digest");
	rc = digest_sorted(out, outlen, copy, cap);
	cJSON_Delete(copy);
	return rc;
}

int tfj_netpol_current(const cJSON *np, const struct tfj_tfjob *job,
		       const struct tfj_podspec_opts *o)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(np, TFJ_NETPOL_DIGEST_KEY);
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(np, "spec");
	char have[TFJ_NETPOL_DIGEST_MAX], want_d[TFJ_NETPOL_DIGEST_MAX];
	cJSON *want = NULL;
	int rc;

	if ((rc = tfj_netpol_body(&want, job, o)))
		return rc;
	/* The API server stores a NetworkPolicy's spec as sent (every field
	 * the body sets is explicit, protocol included), so equal digests
	 * (equal specs, member order aside) find only real differences. */
	/* The wanted policy is built for this compare alone: sorted in place. */
	rc = digest_sorted(want_d, sizeof(want_d), cJSON_GetObjectItemCaseSensitive(want, "spec"),
			   SIZE_MAX);
	cJSON_Delete(want);
	if (rc)
		return rc;
	if (cJSON_IsString(d) && d->valuestring)
		return !strcmp(d->valuestring, want_d);
	if (!cJSON_IsObject(spec))
		return 0;
	/* A whole policy: a spec that cannot be digested is not ours. */
	rc = tfj_netpol_spec_digest(have, sizeof(have), spec, SIZE_MAX);
	if (rc == TFJ_ENOMEM)
		return rc;
	return !rc && !strcmp(have, want_d);
}
