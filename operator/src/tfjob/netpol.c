/*
 * netpol.c - the per-job NetworkPolicy (netpol.h).
 */
#include "tfjob/netpol.h"

#include <stdio.h>
#include <string.h>

#include <tfj/err.h>

#define PORT_MAX 65535

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

int tfj_netpol_current(const cJSON *np, const struct tfj_tfjob *job,
		       const struct tfj_podspec_opts *o)
{
	const cJSON *have = cJSON_GetObjectItemCaseSensitive(np, "spec");
	cJSON *want = NULL;
	int rc;

	if ((rc = tfj_netpol_body(&want, job, o)))
		return rc;
	/* The API server stores a NetworkPolicy's spec as sent (every field
	 * the body sets is explicit, protocol included), so an exact compare
	 * finds only real differences. */
	rc = cJSON_IsObject(have) &&
	     cJSON_Compare(have, cJSON_GetObjectItemCaseSensitive(want, "spec"), 1);
	cJSON_Delete(want);
	return rc;
}
