/*
 * podspec.c - building a replica's pod and headless service.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/json.h>
#include <tfj/names.h>
#include <tfj/tfconfig.h>

#include "tfjob/inject.h"
#include "tfjob/pssecret.h"
#include "tfjob/podspec.h"
#include "tfjob/kueue.h"
#include "tfjob/podgroup.h"

/* Training types, in the order they appear in TF_CONFIG's cluster. */
static const enum tfj_rtype training_types[] = { TFJ_RT_CHIEF, TFJ_RT_MASTER, TFJ_RT_PS,
						 TFJ_RT_WORKER };

int tfj_podspec_port(const struct tfj_tfjob *job, enum tfj_rtype t,
		     const struct tfj_podspec_opts *o)
{
	if (job->rs[t].port > 0)
		return job->rs[t].port;
	return (o && o->default_port > 0) ? o->default_port : TFJ_PODSPEC_DEFAULT_PORT;
}

static int add_hosts(struct tfj_tfconfig *cfg, const struct tfj_tfjob *job, enum tfj_rtype t,
		     const struct tfj_podspec_opts *o)
{
	char host[TFJ_NAMES_HOST_MAX + 1];
	const char *lower = tfj_tfjob_type_lower(t);
	int i, rc;

	if (!job->rs[t].present || job->rs[t].replicas <= 0)
		return 0;
	if ((rc = tfj_tfconfig_add_job(cfg, lower)))
		return rc;
	for (i = 0; i < job->rs[t].replicas; i++) {
		if ((rc = tfj_names_host(host, sizeof(host), job->name, lower, i, job->ns,
					 o ? o->cluster_domain : NULL, tfj_podspec_port(job, t, o))) ||
		    (rc = tfj_tfconfig_add_host(cfg, lower, host)))
			return rc;
	}
	return 0;
}

/*
 * Kubeflow's sparse cluster for enableDynamicWorker
 * (pkg/controller.v1/tensorflow/tensorflow.go L61-83, L125-134 of v1.9):
 * {"worker": {"<i>": own host}, "ps": [every ps]} for worker i, an empty
 * worker object and the ps list for a ps, both empty for chief/evaluator;
 * no "environment". Two deliberate differences: every ps gets the whole ps
 * list (Kubeflow gives ps i a list of one host with task index i, out of
 * range for i > 0), and a job without ps gets "ps": [] (Kubeflow writes
 * null, which TensorFlow's ClusterSpec refuses).
 */
static int sparse_cluster(struct tfj_tfconfig *cfg, const struct tfj_tfjob *job,
			  enum tfj_rtype t, int index, const struct tfj_podspec_opts *o)
{
	char host[TFJ_NAMES_HOST_MAX + 1];
	int rc;

	if ((rc = tfj_tfconfig_add_sparse_job(cfg, "worker")))
		return rc;
	if (t == TFJ_RT_WORKER &&
	    ((rc = tfj_names_host(host, sizeof(host), job->name, "worker", index, job->ns,
				  o ? o->cluster_domain : NULL,
				  tfj_podspec_port(job, TFJ_RT_WORKER, o))) ||
	     (rc = tfj_tfconfig_add_host_at(cfg, "worker", index, host))))
		return rc;
	if (t != TFJ_RT_WORKER && t != TFJ_RT_PS)
		return tfj_tfconfig_add_job(cfg, "ps");
	if ((rc = add_hosts(cfg, job, TFJ_RT_PS, o)))
		return rc;
	return tfj_tfconfig_find_job(cfg, "ps") ? 0 : tfj_tfconfig_add_job(cfg, "ps");
}

int tfj_podspec_tfconfig(char **out, const struct tfj_tfjob *job, enum tfj_rtype t, int index,
			 const struct tfj_podspec_opts *o)
{
	struct tfj_tfconfig cfg;
	size_t i;
	int rc = 0;

	*out = NULL;
	if (job->total_replicas <= 1)
		return 0;
	memset(&cfg, 0, sizeof(cfg));
	if (job->dynamic_worker) {
		if (!(rc = sparse_cluster(&cfg, job, t, index, o)) &&
		    !(rc = tfj_tfconfig_set_task(&cfg, tfj_tfjob_type_lower(t), index)))
			rc = tfj_tfconfig_encode(out, &cfg);
		goto out;
	}
	for (i = 0; i < sizeof(training_types) / sizeof(training_types[0]); i++)
		if ((rc = add_hosts(&cfg, job, training_types[i], o)))
			goto out;
	/*
	 * Only the evaluator sees the evaluator job: TensorFlow's
	 * ParameterServerStrategy waits for every task in the cluster it is
	 * given, and an evaluator never joins training.
	 */
	if (t == TFJ_RT_EVALUATOR && (rc = add_hosts(&cfg, job, TFJ_RT_EVALUATOR, o)))
		goto out;
	if ((rc = tfj_tfconfig_set_task(&cfg, tfj_tfjob_type_lower(t), index)) ||
	    (rc = tfj_tfconfig_set_environment(&cfg, "cloud")) ||
	    (rc = tfj_tfconfig_encode(out, &cfg)))
		goto out;
out:
	tfj_tfconfig_free(&cfg);
	return rc;
}

static cJSON *ensure_array(cJSON *obj, const char *key)
{
	cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (cJSON_IsArray(it))
		return it;
	if (it)
		cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
	return cJSON_AddArrayToObject(obj, key);
}

static int is_master_role(const struct tfj_tfjob *job, enum tfj_rtype t, int index)
{
	if (tfj_tfjob_type_is_chief(t))
		return 1;
	return t == TFJ_RT_WORKER && index == 0 && tfj_tfjob_chief_type(job) < 0;
}

/* Which labels beyond job-name, replica-type and replica-index. */
enum { LBL_OPERATOR = 1, LBL_ROLE = 2 };

static int put_labels(cJSON *labels, const struct tfj_tfjob *job, enum tfj_rtype t, int index,
		      const struct tfj_podspec_opts *o, int which)
{
	char idx[16];
	const char *op = (o && o->operator_name) ? o->operator_name : TFJ_PODSPEC_DEFAULT_OPERATOR;

	snprintf(idx, sizeof(idx), "%d", index);
	if (tfj_json_set_string(labels, TFJ_LABEL_JOB_NAME, job->name) ||
	    tfj_json_set_string(labels, TFJ_LABEL_REPLICA_TYPE, tfj_tfjob_type_lower(t)) ||
	    tfj_json_set_string(labels, TFJ_LABEL_REPLICA_INDEX, idx))
		return TFJ_ENOMEM;
	if ((which & LBL_OPERATOR) && tfj_json_set_string(labels, TFJ_LABEL_OPERATOR, op))
		return TFJ_ENOMEM;
	if ((which & LBL_ROLE) && is_master_role(job, t, index) &&
	    tfj_json_set_string(labels, TFJ_LABEL_JOB_ROLE, "master"))
		return TFJ_ENOMEM;
	return 0;
}

/*
 * Sets name, namespace, our labels and the controller ownerReference. As
 * Kubeflow, only pods carry job-role (pkg/controller.v1/common/pod.go
 * L406-408; a service has the other four, service.go L219-222, L244).
 */
static int put_meta(cJSON *meta, const struct tfj_tfjob *job, enum tfj_rtype t, int index,
		    const struct tfj_podspec_opts *o, int which)
{
	static const char *const drop[] = { "generateName", "uid", "resourceVersion",
					    "creationTimestamp", "deletionTimestamp",
					    "managedFields", "selfLink", "ownerReferences" };
	char name[TFJ_NAMES_LABEL_MAX + 1];
	cJSON *labels;
	size_t i;
	int rc;

	if ((rc = tfj_names_replica(name, sizeof(name), job->name, tfj_tfjob_type_lower(t), index)))
		return rc;
	for (i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		cJSON_DeleteItemFromObjectCaseSensitive(meta, drop[i]);
	if (tfj_json_set_string(meta, "name", name) || tfj_json_set_string(meta, "namespace", job->ns))
		return TFJ_ENOMEM;
	if (!(labels = tfj_json_ensure_object(meta, "labels")))
		return TFJ_ENOMEM;
	if ((rc = put_labels(labels, job, t, index, o, which)))
		return rc;
	return tfj_podspec_owner_ref(meta, job);
}

int tfj_podspec_owner_ref(cJSON *meta, const struct tfj_tfjob *job)
{
	cJSON *refs, *ref;

	cJSON_DeleteItemFromObjectCaseSensitive(meta, "ownerReferences");
	if (!(refs = cJSON_AddArrayToObject(meta, "ownerReferences")) ||
	    !(ref = cJSON_CreateObject()))
		return TFJ_ENOMEM;
	cJSON_AddItemToArray(refs, ref);
	if (!cJSON_AddStringToObject(ref, "apiVersion", TFJ_TFJOB_API_VERSION) ||
	    !cJSON_AddStringToObject(ref, "kind", TFJ_TFJOB_KIND) ||
	    !cJSON_AddStringToObject(ref, "name", job->name) ||
	    !cJSON_AddStringToObject(ref, "uid", job->uid) ||
	    !cJSON_AddTrueToObject(ref, "controller") ||
	    !cJSON_AddTrueToObject(ref, "blockOwnerDeletion"))
		return TFJ_ENOMEM;
	return 0;
}

static int has_named(const cJSON *arr, const char *name)
{
	const cJSON *it, *n;

	cJSON_ArrayForEach(it, arr) {
		n = cJSON_GetObjectItemCaseSensitive(it, "name");
		if (cJSON_IsString(n) && n->valuestring && !strcmp(n->valuestring, name))
			return 1;
	}
	return 0;
}

static int put_container(cJSON *ctr, const char *tfconfig, int port)
{
	cJSON *ports, *env, *it, *next, *n;

	if (!(ports = ensure_array(ctr, "ports")))
		return TFJ_ENOMEM;
	if (!has_named(ports, TFJ_PODSPEC_PORT_NAME)) {
		if (!(it = cJSON_CreateObject()))
			return TFJ_ENOMEM;
		cJSON_AddItemToArray(ports, it);
		if (!cJSON_AddStringToObject(it, "name", TFJ_PODSPEC_PORT_NAME) ||
		    !cJSON_AddNumberToObject(it, "containerPort", port))
			return TFJ_ENOMEM;
	}
	if (!tfconfig)
		return 0;
	if (!(env = ensure_array(ctr, "env")))
		return TFJ_ENOMEM;
	/* Ours is the only TF_CONFIG: a second entry would silently win or lose. */
	for (it = env->child; it; it = next) {
		next = it->next;
		n = cJSON_GetObjectItemCaseSensitive(it, "name");
		if (cJSON_IsString(n) && n->valuestring && !strcmp(n->valuestring, "TF_CONFIG"))
			cJSON_Delete(cJSON_DetachItemViaPointer(env, it));
	}
	if (!(it = cJSON_CreateObject()))
		return TFJ_ENOMEM;
	cJSON_AddItemToArray(env, it);
	if (!cJSON_AddStringToObject(it, "name", "TF_CONFIG") ||
	    !cJSON_AddStringToObject(it, "value", tfconfig))
		return TFJ_ENOMEM;
	return 0;
}

/* Removes every item of arr whose "name" is `name`. */
static void drop_named(cJSON *arr, const char *name)
{
	cJSON *it, *next, *n;

	for (it = arr->child; it; it = next) {
		next = it->next;
		n = cJSON_GetObjectItemCaseSensitive(it, "name");
		if (cJSON_IsString(n) && n->valuestring && !strcmp(n->valuestring, name))
			cJSON_Delete(cJSON_DetachItemViaPointer(arr, it));
	}
}

void tfj_podspec_drop_named(cJSON *arr, const char *name)
{
	drop_named(arr, name);
}

cJSON *tfj_podspec_ensure_array(cJSON *obj, const char *key)
{
	return ensure_array(obj, key);
}

/* Appends {name, value} or {name, valueFrom.fieldRef.fieldPath} to env, replacing `name`. */
static int put_env(cJSON *env, const char *name, const char *value, const char *field)
{
	cJSON *it, *from, *ref;

	drop_named(env, name);
	if (!(it = cJSON_CreateObject()))
		return TFJ_ENOMEM;
	cJSON_AddItemToArray(env, it);
	if (!cJSON_AddStringToObject(it, "name", name))
		return TFJ_ENOMEM;
	if (!field)
		return cJSON_AddStringToObject(it, "value", value) ? 0 : TFJ_ENOMEM;
	if (!(from = cJSON_AddObjectToObject(it, "valueFrom")) ||
	    !(ref = cJSON_AddObjectToObject(from, "fieldRef")) ||
	    !cJSON_AddStringToObject(ref, "fieldPath", field))
		return TFJ_ENOMEM;
	return 0;
}

cJSON *tfj_podspec_job_object(cJSON **meta, const char *api_version, const char *kind,
			      const char *name, const struct tfj_tfjob *job,
			      const char *operator_name)
{
	cJSON *o = cJSON_CreateObject(), *m, *labels;

	if (!o || !cJSON_AddStringToObject(o, "apiVersion", api_version) ||
	    !cJSON_AddStringToObject(o, "kind", kind) ||
	    !(m = cJSON_AddObjectToObject(o, "metadata")) ||
	    !cJSON_AddStringToObject(m, "name", name) ||
	    !cJSON_AddStringToObject(m, "namespace", job->ns) ||
	    !(labels = cJSON_AddObjectToObject(m, "labels")) ||
	    !cJSON_AddStringToObject(labels, TFJ_LABEL_JOB_NAME, job->name) ||
	    !cJSON_AddStringToObject(labels, TFJ_LABEL_OPERATOR,
				     operator_name ? operator_name : TFJ_PODSPEC_DEFAULT_OPERATOR) ||
	    tfj_podspec_owner_ref(m, job)) {
		cJSON_Delete(o);
		return NULL;
	}
	*meta = m;
	return o;
}

cJSON *tfj_podspec_volume(cJSON *spec, const char *name)
{
	cJSON *vols = ensure_array(spec, "volumes"), *vol;

	if (!vols)
		return NULL;
	drop_named(vols, name);
	if (!(vol = cJSON_CreateObject()))
		return NULL;
	cJSON_AddItemToArray(vols, vol);
	return cJSON_AddStringToObject(vol, "name", name) ? vol : NULL;
}

int tfj_podspec_mount(cJSON *ctr, const char *name, const char *path, int read_only)
{
	cJSON *mounts = ensure_array(ctr, "volumeMounts"), *m;

	if (!mounts)
		return TFJ_ENOMEM;
	drop_named(mounts, name);
	if (!(m = cJSON_CreateObject()))
		return TFJ_ENOMEM;
	cJSON_AddItemToArray(mounts, m);
	if (!cJSON_AddStringToObject(m, "name", name) ||
	    !cJSON_AddStringToObject(m, "mountPath", path) ||
	    (read_only && !cJSON_AddTrueToObject(m, "readOnly")))
		return TFJ_ENOMEM;
	return 0;
}

int tfj_podspec_env(cJSON *ctr, const char *name, const char *value)
{
	cJSON *env = ensure_array(ctr, "env");

	return env ? put_env(env, name, value, NULL) : TFJ_ENOMEM;
}

/*
 * The CA agents verify the report service with: a projected source of the
 * namespace's CA ConfigMap (one volume with the token, so the agent finds
 * both under one directory). Not optional: a pod that cannot verify the
 * operator must not start as if it could (kubelet waits for the ConfigMap).
 */
int tfj_podspec_report_ca_name(char *out, size_t outlen, const char *operator_name)
{
	const char *op = operator_name && *operator_name ? operator_name
							 : TFJ_PODSPEC_DEFAULT_OPERATOR;
	int n = snprintf(out, outlen, "%s%s", op, TFJ_PODSPEC_REPORT_CA_SUFFIX);

	if (n < 0 || (size_t)n >= outlen)
		return tfj_err_set(TFJ_ETOOBIG, "report CA ConfigMap name for %s too long", op);
	return 0;
}

static int put_report_ca(cJSON *srcs, const struct tfj_podspec_opts *o)
{
	cJSON *src, *cm, *items, *it;
	char name[128];

	if (o->report_ca_configmap && *o->report_ca_configmap)
		snprintf(name, sizeof(name), "%s", o->report_ca_configmap);
	else if (tfj_podspec_report_ca_name(name, sizeof(name), o->operator_name))
		return TFJ_ETOOBIG;
	if (!(src = cJSON_CreateObject()))
		return TFJ_ENOMEM;
	cJSON_AddItemToArray(srcs, src);
	if (!(cm = cJSON_AddObjectToObject(src, "configMap")) ||
	    !cJSON_AddStringToObject(cm, "name", name) ||
	    !(items = cJSON_AddArrayToObject(cm, "items")) || !(it = cJSON_CreateObject()))
		return TFJ_ENOMEM;
	cJSON_AddItemToArray(items, it);
	if (!cJSON_AddStringToObject(it, "key", TFJ_PODSPEC_REPORT_CA_KEY) ||
	    !cJSON_AddStringToObject(it, "path", TFJ_PODSPEC_REPORT_CA_KEY))
		return TFJ_ENOMEM;
	return 0;
}

/*
 * The report channel's token and identity (see podspec.h). The token is a
 * projected service-account token with our own audience, so it is useless
 * against the API server and anything else that checks audiences, and it
 * expires within the hour (kubelet rotates it in place).
 */
static int put_report(cJSON *spec, cJSON *ctr, const struct tfj_tfjob *job, enum tfj_rtype t,
		      int index, const struct tfj_podspec_opts *o)
{
	const char *aud = o->report_audience && *o->report_audience ? o->report_audience :
			  TFJ_PODSPEC_REPORT_AUDIENCE;
	cJSON *vol, *proj, *srcs, *src, *sat, *env;
	int rc;
	char idx[16];

	snprintf(idx, sizeof(idx), "%d", index);
	if (!(vol = tfj_podspec_volume(spec, TFJ_PODSPEC_REPORT_VOLUME)) ||
	    !(proj = cJSON_AddObjectToObject(vol, "projected")) ||
	    !(srcs = cJSON_AddArrayToObject(proj, "sources")) || !(src = cJSON_CreateObject()))
		return TFJ_ENOMEM;
	cJSON_AddItemToArray(srcs, src);
	if (!(sat = cJSON_AddObjectToObject(src, "serviceAccountToken")) ||
	    !cJSON_AddStringToObject(sat, "audience", aud) ||
	    !cJSON_AddNumberToObject(sat, "expirationSeconds", TFJ_PODSPEC_REPORT_TOKEN_TTL) ||
	    !cJSON_AddStringToObject(sat, "path", "token"))
		return TFJ_ENOMEM;
	if (!o->report_insecure && (rc = put_report_ca(srcs, o)))
		return rc;
	if (tfj_podspec_mount(ctr, TFJ_PODSPEC_REPORT_VOLUME, TFJ_PODSPEC_REPORT_DIR, 1))
		return TFJ_ENOMEM;
	if (!(env = ensure_array(ctr, "env")))
		return TFJ_ENOMEM;
	if (put_env(env, "TFJOB_REPORT_ADDR", o->report_addr, NULL) ||
	    put_env(env, "TFJOB_REPORT_TOKEN_FILE", TFJ_PODSPEC_REPORT_TOKEN_FILE, NULL) ||
	    put_env(env, "TFJOB_JOB_NAMESPACE", job->ns, NULL) ||
	    put_env(env, "TFJOB_JOB_NAME", job->name, NULL) ||
	    put_env(env, "TFJOB_JOB_UID", job->uid, NULL) ||
	    put_env(env, "TFJOB_REPLICA_TYPE", tfj_tfjob_type_lower(t), NULL) ||
	    put_env(env, "TFJOB_REPLICA_INDEX", idx, NULL) ||
	    put_env(env, "POD_NAME", NULL, "metadata.name"))
		return TFJ_ENOMEM;
	drop_named(env, o->report_insecure ? "TFJOB_REPORT_CA_FILE" : "TFJOB_REPORT_INSECURE");
	if (o->report_insecure ? put_env(env, "TFJOB_REPORT_INSECURE", "true", NULL)
			       : put_env(env, "TFJOB_REPORT_CA_FILE", TFJ_PODSPEC_REPORT_CA_FILE, NULL))
		return TFJ_ENOMEM;
	return 0;
}

/*
 * Gang scheduling (podgroup.h): the scheduler name, unless the template
 * chose one (as in Kubeflow), and the PodGroup label or annotations.
 */
static int put_gang(cJSON *meta, cJSON *spec, const struct tfj_tfjob *job, enum tfj_rtype t,
		    const struct tfj_gang *g)
{
	const cJSON *sn = cJSON_GetObjectItemCaseSensitive(spec, "schedulerName");
	cJSON *m;

	if (g->api == TFJ_PODGROUP_OFF)
		return 0;
	if (!(cJSON_IsString(sn) && sn->valuestring && *sn->valuestring) &&
	    tfj_json_set_string(spec, "schedulerName", g->scheduler))
		return TFJ_ENOMEM;
	if (g->api == TFJ_PODGROUP_SCHEDULER_PLUGINS)
		return (m = tfj_json_ensure_object(meta, "labels")) &&
		       !tfj_json_set_string(m, TFJ_PODGROUP_SP_LABEL, job->name) ? 0 : TFJ_ENOMEM;
	if (!(m = tfj_json_ensure_object(meta, "annotations")) ||
	    tfj_json_set_string(m, TFJ_PODGROUP_VOLCANO_GROUP, job->name) ||
	    tfj_json_set_string(m, TFJ_PODGROUP_VOLCANO_TASK, tfj_tfjob_type_lower(t)))
		return TFJ_ENOMEM;
	return 0;
}

/* Kueue's pod-group marks, for a job in pod-group mode (kueue.h). */
static int put_kueue(cJSON *meta, const struct tfj_tfjob *job, const struct tfj_podspec_opts *o)
{
	const char *queue;
	int rc;

	if ((rc = tfj_kueue_queue(&queue, job, o->kueue_pod_groups)))
		return rc;
	return queue ? tfj_kueue_pod(meta, job, queue) : 0;
}

static int build_pod(cJSON *pod, const struct tfj_tfjob *job, enum tfj_rtype t, int index,
		     const struct tfj_podspec_opts *o)
{
	const struct tfj_replica_spec *rs = &job->rs[t];
	const char *policy;
	char *tfconfig = NULL;
	cJSON *meta, *spec, *ctrs, *c, *n;
	int rc;

	if (!(meta = tfj_json_ensure_object(pod, "metadata")) || !(spec = tfj_json_ensure_object(pod, "spec")))
		return TFJ_ENOMEM;
	if ((rc = put_meta(meta, job, t, index, o, LBL_OPERATOR | LBL_ROLE)))
		return rc;
	switch (rs->restart) {
	case TFJ_RESTART_ALWAYS: policy = "Always"; break;
	case TFJ_RESTART_ONFAILURE: policy = "OnFailure"; break;
	default: policy = "Never"; break; /* Never, and ExitCode: we decide, not kubelet */
	}
	if (tfj_json_set_string(spec, "restartPolicy", policy))
		return TFJ_ENOMEM;
	/*
	 * schedulingPolicy.priorityClass is not copied here: as in Kubeflow it
	 * is the PodGroup's (gang scheduling); a pod's own priorityClassName
	 * comes from its template, untouched.
	 */
	if (o && o->gang && (rc = put_gang(meta, spec, job, t, o->gang)))
		return rc;
	if (o && (rc = put_kueue(meta, job, o)))
		return rc;
	if ((rc = tfj_podspec_tfconfig(&tfconfig, job, t, index, o)))
		return rc;
	ctrs = cJSON_GetObjectItemCaseSensitive(spec, "containers");
	rc = tfj_err_set(TFJ_EINVAL, "template has no '%s' container", TFJ_PODSPEC_CONTAINER);
	cJSON_ArrayForEach(c, ctrs) {
		n = cJSON_GetObjectItemCaseSensitive(c, "name");
		if (cJSON_IsObject(c) && cJSON_IsString(n) && n->valuestring &&
		    !strcmp(n->valuestring, TFJ_PODSPEC_CONTAINER)) {
			rc = put_container(c, tfconfig, tfj_podspec_port(job, t, o));
			if (!rc && o && o->ps_secret_name && *o->ps_secret_name)
				rc = tfj_pssecret_pod(spec, c, o->ps_secret_name);
			if (!rc && o && o->report_addr && *o->report_addr)
				rc = put_report(spec, c, job, t, index, o);
			if (!rc && tfj_inject_wanted(job, t, o))
				rc = tfj_inject_pod(spec, c, job, o);
			break;
		}
	}
	free(tfconfig);
	return rc;
}

int tfj_podspec_pod(cJSON **out, const struct tfj_tfjob *job, enum tfj_rtype t, int index,
		    const struct tfj_podspec_opts *o)
{
	cJSON *pod;
	int rc;

	*out = NULL;
	if (!job->spec_valid || t < 0 || t >= TFJ_RT_COUNT || !job->rs[t].present || index < 0 ||
	    index >= job->rs[t].replicas)
		return tfj_err_set(TFJ_EINVAL, "no replica %s %d in this job",
				   tfj_tfjob_type_lower(t), index);
	pod = cJSON_Duplicate(job->rs[t].tmpl, 1);
	if (!pod)
		return tfj_err_set(TFJ_ENOMEM, "copying pod template");
	if (!cJSON_AddStringToObject(pod, "apiVersion", "v1") ||
	    !cJSON_AddStringToObject(pod, "kind", "Pod")) {
		rc = TFJ_ENOMEM;
	} else {
		rc = build_pod(pod, job, t, index, o);
	}
	if (rc) {
		cJSON_Delete(pod);
		return rc == TFJ_ENOMEM ? tfj_err_set(TFJ_ENOMEM, "building pod") : rc;
	}
	*out = pod;
	return 0;
}

/* The replica's `tensorflow` container in the template, or NULL. */
static const cJSON *tf_container(const struct tfj_tfjob *job, enum tfj_rtype t)
{
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(job->rs[t].tmpl, "spec");
	const cJSON *c, *n;

	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, "containers")) {
		n = cJSON_GetObjectItemCaseSensitive(c, "name");
		if (cJSON_IsString(n) && n->valuestring && !strcmp(n->valuestring, TFJ_PODSPEC_CONTAINER))
			return c;
	}
	return NULL;
}

static int add_service_port(cJSON *ports, const char *name, const char *proto, int port)
{
	cJSON *p = cJSON_CreateObject();

	if (!p)
		return TFJ_ENOMEM;
	cJSON_AddItemToArray(ports, p);
	if (!cJSON_AddStringToObject(p, "name", name) ||
	    !cJSON_AddStringToObject(p, "protocol", proto) ||
	    !cJSON_AddNumberToObject(p, "port", port) ||
	    !cJSON_AddNumberToObject(p, "targetPort", port))
		return TFJ_ENOMEM;
	return 0;
}

/*
 * Every named port of the `tensorflow` container, in its order, then
 * tfjob-port if the template has none (the pod gets it, put_container), as
 * Kubeflow v1.9 publishes them (pkg/core/service.go L83-101,
 * pkg/controller.v1/common/service.go L237-241), so a `metrics` port can
 * be scraped through the service and has SRV records. Deliberately: an
 * unnamed port is left out (Kubeflow puts it in as "", and the API server
 * refuses a service with several ports where one has no name, so the
 * replica gets no service), and the port's protocol is kept (Kubeflow
 * publishes a UDP port as TCP).
 */
static int put_service_ports(cJSON *ports, const struct tfj_tfjob *job, enum tfj_rtype t,
			     const struct tfj_podspec_opts *o)
{
	const cJSON *cp, *n, *num, *proto;
	int rc;

	cJSON_ArrayForEach(cp, cJSON_GetObjectItemCaseSensitive(tf_container(job, t), "ports")) {
		n = cJSON_GetObjectItemCaseSensitive(cp, "name");
		num = cJSON_GetObjectItemCaseSensitive(cp, "containerPort");
		proto = cJSON_GetObjectItemCaseSensitive(cp, "protocol");
		if (!cJSON_IsString(n) || !n->valuestring || !*n->valuestring ||
		    !cJSON_IsNumber(num) || num->valuedouble < 1 || num->valuedouble > 65535)
			continue;
		if ((rc = add_service_port(ports, n->valuestring,
					   cJSON_IsString(proto) && proto->valuestring ?
					   proto->valuestring : "TCP", (int)num->valuedouble)))
			return rc;
	}
	if (has_named(ports, TFJ_PODSPEC_PORT_NAME))
		return 0;
	return add_service_port(ports, TFJ_PODSPEC_PORT_NAME, "TCP", tfj_podspec_port(job, t, o));
}

static int build_service(cJSON *svc, const struct tfj_tfjob *job, enum tfj_rtype t, int index,
			 const struct tfj_podspec_opts *o)
{
	cJSON *meta, *spec, *sel, *ports;
	int rc;

	if (!cJSON_AddStringToObject(svc, "apiVersion", "v1") ||
	    !cJSON_AddStringToObject(svc, "kind", "Service") ||
	    !(meta = cJSON_AddObjectToObject(svc, "metadata")) ||
	    !(spec = cJSON_AddObjectToObject(svc, "spec")))
		return TFJ_ENOMEM;
	if ((rc = put_meta(meta, job, t, index, o, LBL_OPERATOR)))
		return rc;
	if (!cJSON_AddStringToObject(spec, "clusterIP", "None") ||
	    /* Peers must resolve each other before they are ready (trainer#1458). */
	    !cJSON_AddTrueToObject(spec, "publishNotReadyAddresses") ||
	    !(sel = cJSON_AddObjectToObject(spec, "selector")) ||
	    !(ports = cJSON_AddArrayToObject(spec, "ports")))
		return TFJ_ENOMEM;
	/*
	 * Deliberately without operator-name (Kubeflow selects on it too): a
	 * renamed operator's new pods are still selected by the old services.
	 */
	if ((rc = put_labels(sel, job, t, index, o, 0)))
		return rc;
	return put_service_ports(ports, job, t, o);
}

int tfj_podspec_service(cJSON **out, const struct tfj_tfjob *job, enum tfj_rtype t, int index,
			const struct tfj_podspec_opts *o)
{
	cJSON *svc;
	int rc;

	*out = NULL;
	if (t < 0 || t >= TFJ_RT_COUNT || !job->rs[t].present || index < 0 ||
	    index >= job->rs[t].replicas)
		return tfj_err_set(TFJ_EINVAL, "no replica %s %d in this job",
				   tfj_tfjob_type_lower(t), index);
	if (!(svc = cJSON_CreateObject()))
		return tfj_err_set(TFJ_ENOMEM, "building service");
	rc = build_service(svc, job, t, index, o);
	if (rc) {
		cJSON_Delete(svc);
		return rc == TFJ_ENOMEM ? tfj_err_set(TFJ_ENOMEM, "building service") : rc;
	}
	*out = svc;
	return 0;
}
