/*
 * capublish.c - the CA ConfigMap in job namespaces (see capublish.h).
 */
#include "report/capublish.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/json.h>
#include <tfj/log.h>

#include "kube/apipath.h"
#include "kube/strmap.h"
#include "tfjob/podspec.h"

struct tfj_capublish {
	struct tfj_kube *k;
	char name[128];            /* <operator name>-report-ca */
	char opname[64];           /* the operator name its label carries */
	tfj_capublish_ca_fn ca;
	void *ud;
	pthread_mutex_t mu;
	struct tfj_strmap done;    /* namespace -> generation written (as a pointer) */
	_Atomic uint64_t writes;
};

int tfj_capublish_configmap(cJSON **out, const char *ns, const char *name, const char *opname,
			    const char *pem)
{
	cJSON *cm = cJSON_CreateObject(), *meta, *labels, *data;

	*out = NULL;
	if (!cm || !cJSON_AddStringToObject(cm, "apiVersion", "v1") ||
	    !cJSON_AddStringToObject(cm, "kind", "ConfigMap") ||
	    !(meta = cJSON_AddObjectToObject(cm, "metadata")) ||
	    !cJSON_AddStringToObject(meta, "name", name) ||
	    !cJSON_AddStringToObject(meta, "namespace", ns) ||
	    !(labels = cJSON_AddObjectToObject(meta, "labels")) ||
	    !cJSON_AddStringToObject(labels, "app.kubernetes.io/managed-by", "tfjob-operator") ||
	    !cJSON_AddStringToObject(labels, "app.kubernetes.io/component", "report-ca") ||
	    !cJSON_AddStringToObject(labels, TFJ_LABEL_OPERATOR, opname) ||
	    !(data = cJSON_AddObjectToObject(cm, "data")) ||
	    !cJSON_AddStringToObject(data, TFJ_PODSPEC_REPORT_CA_KEY, pem)) {
		cJSON_Delete(cm);
		return tfj_err_set(TFJ_ENOMEM, "ConfigMap");
	}
	*out = cm;
	return 0;
}

int tfj_capublish_new(struct tfj_capublish **out, struct tfj_kube *k, const char *operator_name,
		      const char *name, tfj_capublish_ca_fn ca, void *ud)
{
	const char *op = operator_name && *operator_name ? operator_name
							 : TFJ_PODSPEC_DEFAULT_OPERATOR;
	struct tfj_capublish *p;
	int rc;

	*out = NULL;
	if (!k || !ca)
		return tfj_err_set(TFJ_EINVAL, "CA publisher: a client and a CA source are needed");
	if (strlen(op) >= sizeof(p->opname) ||
	    (name && strlen(name) >= sizeof(p->name)))
		return tfj_err_set(TFJ_ETOOBIG, "CA publisher: operator or ConfigMap name too long");
	if (!(p = calloc(1, sizeof(*p))))
		return tfj_err_set(TFJ_ENOMEM, "CA publisher");
	if (name && *name)
		memcpy(p->name, name, strlen(name) + 1);
	else if ((rc = tfj_podspec_report_ca_name(p->name, sizeof(p->name), op))) {
		free(p);
		return rc;
	}
	memcpy(p->opname, op, strlen(op) + 1);
	p->k = k;
	p->ca = ca;
	p->ud = ud;
	pthread_mutex_init(&p->mu, NULL);
	*out = p;
	return 0;
}

/* The ConfigMap's ca.crt equals pem. */
static int current(const cJSON *cm, const char *pem)
{
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(cm, "data");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(data, TFJ_PODSPEC_REPORT_CA_KEY);

	return cJSON_IsString(v) && v->valuestring && !strcmp(v->valuestring, pem);
}

/*
 * The ConfigMap is this install's: the labels tfj_capublish_configmap puts
 * on it, the operator name included. Another install (or anyone) may hold
 * the name; its CA is never replaced by ours.
 */
static int ours(const struct tfj_capublish *p, const cJSON *cm)
{
	const cJSON *labels = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cm, "metadata"), "labels");
	const char *by = cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(labels, "app.kubernetes.io/managed-by"));
	const char *comp = cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(labels, "app.kubernetes.io/component"));
	const char *op = cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(labels, TFJ_LABEL_OPERATOR));

	return by && comp && op && !strcmp(by, "tfjob-operator") && !strcmp(comp, "report-ca") &&
	       !strcmp(op, p->opname);
}

/* One GET and, when needed, one write. TFJ_EEXIST/TFJ_ECONFLICT: try again. */
static int publish(struct tfj_capublish *p, const char *ns, const char *pem)
{
	char path[512];
	cJSON *cur = NULL, *want = NULL;
	const char *rv;
	int rc;

	if ((rc = tfj_apipath_obj(path, sizeof(path), TFJ_APIPATH_CORE, ns, "configmaps",
				  p->name, NULL)))
		return rc;
	rc = tfj_kube_get(p->k, &cur, path);
	if (rc && rc != TFJ_ENOTFOUND)
		return rc;
	if (cur && !ours(p, cur)) {
		rc = tfj_err_set(TFJ_ESTATE, "ConfigMap %s/%s is not this operator's (labels "
				 "app.kubernetes.io/managed-by, component, %s=%s): not replaced",
				 ns, p->name, TFJ_LABEL_OPERATOR, p->opname);
		goto out;
	}
	if (cur && current(cur, pem)) {
		cJSON_Delete(cur);
		return 0;
	}
	if ((rc = tfj_capublish_configmap(&want, ns, p->name, p->opname, pem)))
		goto out;
	if (cur) {
		/* Replaced whole: ours, the labels said so; rv guards a concurrent writer. */
		if (tfj_json_get_string(&rv, cJSON_GetObjectItemCaseSensitive(cur, "metadata"),
					"resourceVersion") ||
		    !cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(want, "metadata"),
					     "resourceVersion", rv)) {
			rc = tfj_err_set(TFJ_EPARSE, "ConfigMap %s/%s: no resourceVersion", ns,
					 p->name);
			goto out;
		}
		rc = tfj_kube_replace(p->k, NULL, path, want);
	} else {
		if (!(rc = tfj_apipath_coll(path, sizeof(path), TFJ_APIPATH_CORE, ns, "configmaps")))
			rc = tfj_kube_create(p->k, NULL, path, want);
	}
	atomic_fetch_add(&p->writes, 1);
	if (!rc)
		tfj_log_info("report channel: CA published", "namespace", ns, "configmap",
			     p->name);
out:
	cJSON_Delete(cur);
	cJSON_Delete(want);
	return rc;
}

int tfj_capublish_ensure(struct tfj_capublish *p, const char *ns)
{
	uint64_t gen = 0;
	char *pem = NULL;
	void *had;
	int rc, attempt;

	if ((rc = p->ca(&pem, &gen, p->ud)))
		return rc;
	pthread_mutex_lock(&p->mu);
	had = tfj_strmap_get(&p->done, ns);
	pthread_mutex_unlock(&p->mu);
	if (had && (uint64_t)(uintptr_t)had == gen) {
		free(pem);
		return 0;
	}
	for (attempt = 0; attempt < 3; attempt++) {
		rc = publish(p, ns, pem);
		if (rc != TFJ_EEXIST && rc != TFJ_ECONFLICT)
			break;
	}
	free(pem);
	if (rc)
		return tfj_err_set(rc, "report channel: CA ConfigMap in %s: %s", ns,
				   tfj_err_detail());
	pthread_mutex_lock(&p->mu);
	/* Generations start at 1, so a stored one is never a NULL pointer. */
	rc = tfj_strmap_put(&p->done, ns, (void *)(uintptr_t)gen, NULL);
	pthread_mutex_unlock(&p->mu);
	return rc;
}

int tfj_capublish_current(struct tfj_capublish *p, const char *ns)
{
	uint64_t gen = 0;
	char *pem = NULL;
	void *had;

	if (p->ca(&pem, &gen, p->ud))
		return 0;
	free(pem);
	pthread_mutex_lock(&p->mu);
	had = tfj_strmap_get(&p->done, ns);
	pthread_mutex_unlock(&p->mu);
	return had && (uint64_t)(uintptr_t)had == gen;
}

void tfj_capublish_forget(struct tfj_capublish *p, const char *ns)
{
	if (!p || !ns)
		return;
	pthread_mutex_lock(&p->mu);
	tfj_strmap_del(&p->done, ns);
	pthread_mutex_unlock(&p->mu);
}

uint64_t tfj_capublish_writes(struct tfj_capublish *p)
{
	return atomic_load(&p->writes);
}

void tfj_capublish_free(struct tfj_capublish *p)
{
	if (!p)
		return;
	tfj_strmap_free(&p->done, NULL);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
