/*
 * tfjob.c - decoding a TFJob from the API's JSON.
 *
 * Every field is read through the type-checked getters of <tfj/json.h>;
 * every count and number is bounded. The CRD's CEL rules reject the same
 * things at admission, but the decoder never trusts that: a CRD installed
 * without them, an old object, or a hand-made request must not crash or
 * confuse the operator.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <tfj/err.h>
#include <tfj/json.h>
#include <tfj/tfconfig.h>

#include "kube/jscan.h"
#include "tfjob/podspec.h"
#include "tfjob/pssecret.h"
#include "tfjob/tfjob.h"

/* Containers per pod template; the API server has no cap, we need one. */
#define MAX_CONTAINERS 64
#define MAX_PORTS 128

_Static_assert(TFJ_TFJOB_MAX_REPLICAS == TFJ_TFCONFIG_MAX_HOSTS,
	       "replica cap and TF_CONFIG host cap must agree");
_Static_assert(TFJ_TFJOB_MAX_REPLICAS == TFJ_JOBSTATUS_MAX_INDEX,
	       "replica cap and completed-index bitmap must agree");
_Static_assert(TFJ_RT_COUNT == TFJ_JOBSTATUS_TYPES, "replica type count");

static const char *const type_names[TFJ_RT_COUNT] = {
	"Chief", "Master", "PS", "Worker", "Evaluator"
};
static const char *const type_lower[TFJ_RT_COUNT] = {
	"chief", "master", "ps", "worker", "evaluator"
};

const char *tfj_tfjob_type_name(enum tfj_rtype t)
{
	return (t >= 0 && t < TFJ_RT_COUNT) ? type_names[t] : "";
}

const char *tfj_tfjob_type_lower(enum tfj_rtype t)
{
	return (t >= 0 && t < TFJ_RT_COUNT) ? type_lower[t] : "";
}

int tfj_tfjob_type_parse(enum tfj_rtype *out, const char *s)
{
	int i;

	for (i = 0; i < TFJ_RT_COUNT; i++) {
		if (!strcasecmp(s, type_names[i])) {
			*out = (enum tfj_rtype)i;
			return 0;
		}
	}
	return tfj_err_set(TFJ_EINVAL, "unknown replica type '%.64s' (want Chief, Master, PS, "
			   "Worker or Evaluator)", s);
}

int tfj_tfjob_type_is_chief(enum tfj_rtype t)
{
	return t == TFJ_RT_CHIEF || t == TFJ_RT_MASTER;
}

int tfj_tfjob_chief_type(const struct tfj_tfjob *job)
{
	if (job->rs[TFJ_RT_CHIEF].present && job->rs[TFJ_RT_CHIEF].replicas > 0)
		return TFJ_RT_CHIEF;
	if (job->rs[TFJ_RT_MASTER].present && job->rs[TFJ_RT_MASTER].replicas > 0)
		return TFJ_RT_MASTER;
	return -1;
}

/* Records why the spec is invalid (first reason wins) and returns 1. */
static int spec_fail(struct tfj_tfjob *job, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int spec_fail(struct tfj_tfjob *job, const char *fmt, ...)
{
	va_list ap;

	if (job->spec_valid) {
		job->spec_valid = 0;
		va_start(ap, fmt);
		vsnprintf(job->spec_error, sizeof(job->spec_error), fmt, ap);
		va_end(ap);
	}
	return 1;
}

static int parse_enum(int *out, const char *s, const char *const *names, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (!strcmp(s, names[i])) {
			*out = i;
			return 0;
		}
	}
	return -1;
}

/* Finds the tensorflow container's tfjob-port; 0 when it declares none. */
static int read_port(struct tfj_tfjob *job, const char *key, const cJSON *ctr, int *port)
{
	const cJSON *ports, *p;
	const char *name;
	int n = 0, v;

	*port = 0;
	if (!cJSON_GetObjectItemCaseSensitive(ctr, "ports") ||
	    cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(ctr, "ports")))
		return 0;
	if (tfj_json_get_array(&ports, ctr, "ports"))
		return spec_fail(job, "%s: ports is not a list", key);
	cJSON_ArrayForEach(p, ports) {
		if (++n > MAX_PORTS)
			return spec_fail(job, "%s: more than %d ports", key, MAX_PORTS);
		if (tfj_json_opt_string(&name, p, "name", ""))
			return spec_fail(job, "%s: port name: %s", key, tfj_err_detail());
		if (strcmp(name, TFJ_PODSPEC_PORT_NAME))
			continue;
		if (tfj_json_get_int(&v, p, "containerPort", 1, 65535))
			return spec_fail(job, "%s: %s port: %s", key, TFJ_PODSPEC_PORT_NAME,
					 tfj_err_detail());
		*port = v;
	}
	return 0;
}

static int decode_template(struct tfj_tfjob *job, const char *key, const cJSON *tmpl,
			   struct tfj_replica_spec *rs)
{
	const cJSON *spec, *ctrs, *c;
	const char *name, *image;
	int n = 0, found = 0;

	if (tfj_json_get_object(&spec, tmpl, "spec"))
		return spec_fail(job, "spec.tfReplicaSpecs.%s.template.spec: %s", key,
				 tfj_err_detail());
	if (tfj_json_get_array(&ctrs, spec, "containers"))
		return spec_fail(job, "spec.tfReplicaSpecs.%s.template.spec.containers: %s", key,
				 tfj_err_detail());
	cJSON_ArrayForEach(c, ctrs) {
		if (++n > MAX_CONTAINERS)
			return spec_fail(job, "spec.tfReplicaSpecs.%s: more than %d containers", key,
					 MAX_CONTAINERS);
		if (tfj_json_get_string(&name, c, "name"))
			return spec_fail(job, "spec.tfReplicaSpecs.%s: container %d: %s", key, n,
					 tfj_err_detail());
		/* The CRD refuses it too; Kubeflow's webhook does (tfjob_webhook.go). */
		if (tfj_json_opt_string(&image, c, "image", "") || !*image)
			return spec_fail(job, "spec.tfReplicaSpecs.%s: container '%.63s' has no image",
					 key, name);
		if (!strcmp(name, TFJ_PODSPEC_CONTAINER)) {
			const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(c, "command");

			found = 1;
			rs->has_command = cJSON_IsArray(cmd) && cJSON_GetArraySize(cmd) > 0;
			if (read_port(job, key, c, &rs->port))
				return 1;
		}
	}
	if (n == 0)
		return spec_fail(job, "spec.tfReplicaSpecs.%s: the template has no containers", key);
	if (!found)
		return spec_fail(job, "spec.tfReplicaSpecs.%s: no container is named '%s'", key,
				 TFJ_PODSPEC_CONTAINER);
	return 0;
}

static int decode_replica(struct tfj_tfjob *job, const char *key, const cJSON *it,
			  struct tfj_replica_spec *rs)
{
	static const char *const restarts[] = { "Never", "OnFailure", "Always", "ExitCode" };
	const char *s;
	int v;

	if (!cJSON_IsObject(it))
		return spec_fail(job, "spec.tfReplicaSpecs.%s: expected an object", key);
	if (tfj_json_opt_int(&rs->replicas, it, "replicas", 0, TFJ_TFJOB_MAX_REPLICAS, 1))
		return spec_fail(job, "spec.tfReplicaSpecs.%s.replicas must be 0..%d: %s", key,
				 TFJ_TFJOB_MAX_REPLICAS, tfj_err_detail());
	if (tfj_json_opt_string(&s, it, "restartPolicy", "Never"))
		return spec_fail(job, "spec.tfReplicaSpecs.%s.restartPolicy: %s", key,
				 tfj_err_detail());
	if (!*s)
		s = "Never";
	if (parse_enum(&v, s, restarts, 4))
		return spec_fail(job, "spec.tfReplicaSpecs.%s.restartPolicy '%.32s': want Never, "
				 "OnFailure, Always or ExitCode", key, s);
	rs->restart = (enum tfj_restart)v;
	if (tfj_json_get_object(&rs->tmpl, it, "template"))
		return spec_fail(job, "spec.tfReplicaSpecs.%s.template: %s", key, tfj_err_detail());
	return decode_template(job, key, rs->tmpl, rs);
}

static int decode_replicas(struct tfj_tfjob *job, const cJSON *spec)
{
	const cJSON *specs, *it;
	enum tfj_rtype t = TFJ_RT_CHIEF;
	int n = 0;

	if (tfj_json_get_object(&specs, spec, "tfReplicaSpecs"))
		return spec_fail(job, "spec.tfReplicaSpecs: %s", tfj_err_detail());
	cJSON_ArrayForEach(it, specs) {
		if (++n > TFJ_RT_COUNT)
			return spec_fail(job, "spec.tfReplicaSpecs: more than %d replica types",
					 TFJ_RT_COUNT);
		if (!it->string || tfj_tfjob_type_parse(&t, it->string))
			return spec_fail(job, "spec.tfReplicaSpecs: %s", tfj_err_detail());
		if (job->rs[t].present)
			return spec_fail(job, "spec.tfReplicaSpecs: replica type %s given twice",
					 type_names[t]);
		job->rs[t].present = 1;
		if (decode_replica(job, type_names[t], it, &job->rs[t]))
			return 1;
		job->total_replicas += job->rs[t].replicas;
	}
	if (job->rs[TFJ_RT_CHIEF].present && job->rs[TFJ_RT_MASTER].present)
		return spec_fail(job, "spec.tfReplicaSpecs: Chief and Master are the same role; "
				 "give only one");
	for (t = TFJ_RT_CHIEF; t <= TFJ_RT_MASTER; t++)
		if (job->rs[t].present && job->rs[t].replicas > 1)
			return spec_fail(job, "spec.tfReplicaSpecs.%s.replicas is %d; at most 1",
					 type_names[t], job->rs[t].replicas);
	/*
	 * TensorFlow refuses a cluster with two evaluators ("There must be at most
	 * one evaluator"); Kubeflow accepts such a job, we refuse it up front.
	 */
	if (job->rs[TFJ_RT_EVALUATOR].present && job->rs[TFJ_RT_EVALUATOR].replicas > 1)
		return spec_fail(job, "spec.tfReplicaSpecs.Evaluator.replicas is %d; at most 1",
				 job->rs[TFJ_RT_EVALUATOR].replicas);
	if (job->total_replicas > TFJ_TFJOB_MAX_REPLICAS)
		return spec_fail(job, "spec.tfReplicaSpecs: %d replicas in all; at most %d",
				 job->total_replicas, TFJ_TFJOB_MAX_REPLICAS);
	if (tfj_tfjob_chief_type(job) < 0 &&
	    !(job->rs[TFJ_RT_WORKER].present && job->rs[TFJ_RT_WORKER].replicas > 0))
		return spec_fail(job, "spec.tfReplicaSpecs: needs a Chief, Master or at least one "
				 "Worker, or the job can never succeed");
	return 0;
}

static int decode_run_policy(struct tfj_tfjob *job, const cJSON *spec)
{
	/* In enum tfj_cleanpod's order; "" means the default, None. */
	static const char *const cleans[] = { "None", "Running", "All" };
	struct tfj_run_policy *rp = &job->run;
	const cJSON *run = cJSON_GetObjectItemCaseSensitive(spec, "runPolicy");
	const cJSON *sp;
	const char *s;
	int v;

	if (!run || cJSON_IsNull(run))
		return 0;
	if (!cJSON_IsObject(run))
		return spec_fail(job, "spec.runPolicy: expected an object");
	if (tfj_json_opt_string(&s, run, "cleanPodPolicy", "None"))
		return spec_fail(job, "spec.runPolicy.cleanPodPolicy: %s", tfj_err_detail());
	if (parse_enum(&v, *s ? s : "None", cleans, 3))
		return spec_fail(job, "spec.runPolicy.cleanPodPolicy '%.32s': want All, Running "
				 "or None", s);
	rp->clean_pod = (enum tfj_cleanpod)v;
#define OPT_I64(field, has, key, min)                                                     \
	do {                                                                              \
		rp->has = cJSON_GetObjectItemCaseSensitive(run, key) &&                   \
			  !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(run, key));      \
		if (tfj_json_opt_int64(&rp->field, run, key, min, 2147483647, 0))         \
			return spec_fail(job, "spec.runPolicy.%s: %s", key, tfj_err_detail()); \
	} while (0)
	OPT_I64(ttl_seconds, has_ttl, "ttlSecondsAfterFinished", 0);
	OPT_I64(active_deadline_seconds, has_deadline, "activeDeadlineSeconds", 0);
	OPT_I64(backoff_limit, has_backoff, "backoffLimit", 0);
	OPT_I64(progress_deadline_seconds, has_progress_deadline, "progressDeadlineSeconds", 1);
#undef OPT_I64
	if (tfj_json_opt_bool(&rp->suspend, run, "suspend", 0))
		return spec_fail(job, "spec.runPolicy.suspend: %s", tfj_err_detail());
	if (tfj_json_opt_string(&rp->managed_by, run, "managedBy", NULL))
		return spec_fail(job, "spec.runPolicy.managedBy: %s", tfj_err_detail());
	if (rp->managed_by && strlen(rp->managed_by) > 63)
		return spec_fail(job, "spec.runPolicy.managedBy: longer than 63 characters");
	sp = cJSON_GetObjectItemCaseSensitive(run, "schedulingPolicy");
	if (sp && !cJSON_IsNull(sp)) {
		if (!cJSON_IsObject(sp))
			return spec_fail(job, "spec.runPolicy.schedulingPolicy: expected an object");
		rp->scheduling_policy = sp;
		if (tfj_json_opt_string(&rp->priority_class, sp, "priorityClass", NULL))
			return spec_fail(job, "spec.runPolicy.schedulingPolicy.priorityClass: %s",
					 tfj_err_detail());
		if (rp->priority_class && (!*rp->priority_class || strlen(rp->priority_class) > 253))
			rp->priority_class = NULL;
	}
	return 0;
}

/*
 * The agent annotations (tfjob.h). Refusing "inject" without a command here
 * too, not only at admission (the ValidatingAdmissionPolicy), keeps the rule
 * when the policy is not installed: the job fails with InvalidSpec and the
 * message says why.
 */
static int decode_agent(struct tfj_tfjob *job)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(job->doc, "metadata");
	const cJSON *ann = cJSON_GetObjectItemCaseSensitive(meta, "annotations");
	const char *mode;
	int t;

	if (!cJSON_IsObject(ann))
		return 0;
	if (tfj_json_opt_string(&mode, ann, TFJ_TFJOB_ANN_AGENT, ""))
		return spec_fail(job, "annotation %s: %s", TFJ_TFJOB_ANN_AGENT, tfj_err_detail());
	if (!strcmp(mode, "inject"))
		job->agent = TFJ_AGENT_INJECT;
	else if (!strcmp(mode, "none"))
		job->agent = TFJ_AGENT_NONE;
	else if (*mode)
		return spec_fail(job, "annotation %s '%.32s': want inject or none",
				 TFJ_TFJOB_ANN_AGENT, mode);
	if (tfj_json_opt_string(&job->progress_regex, ann, TFJ_TFJOB_ANN_PROGRESS_REGEX, NULL))
		return spec_fail(job, "annotation %s: %s", TFJ_TFJOB_ANN_PROGRESS_REGEX,
				 tfj_err_detail());
	if (job->progress_regex && strlen(job->progress_regex) > TFJ_TFJOB_MAX_REGEX)
		return spec_fail(job, "annotation %s: longer than %d bytes",
				 TFJ_TFJOB_ANN_PROGRESS_REGEX, TFJ_TFJOB_MAX_REGEX);
	if (job->progress_regex && !*job->progress_regex)
		job->progress_regex = NULL;
	if (job->agent != TFJ_AGENT_INJECT)
		return 0;
	for (t = 0; t < TFJ_RT_COUNT; t++)
		if (job->rs[t].present && !job->rs[t].has_command)
			return spec_fail(job, "annotation %s: inject needs a command on the %s "
					 "container of %s (the image's entrypoint cannot be wrapped)",
					 TFJ_TFJOB_ANN_AGENT, TFJ_PODSPEC_CONTAINER, type_names[t]);
	return 0;
}

int tfj_tfjob_spec_oversize(size_t *bytes, const cJSON *obj)
{
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");

	*bytes = tfj_json_text_size(spec, TFJ_TFJOB_MAX_SPEC_BYTES);
	return *bytes > TFJ_TFJOB_MAX_SPEC_BYTES;
}

/*
 * A spec over the size the operator serves (tfjob.h), whether it is here or
 * only its size is (the informer's copy, or decode's text path): the job is
 * invalid, and the spec's tree is freed at once.
 */
static int oversize_fail(struct tfj_tfjob *job)
{
	const cJSON *mark = cJSON_GetObjectItemCaseSensitive(job->doc, TFJ_TFJOB_OVERSIZE_KEY);
	size_t bytes = 0;

	if (!cJSON_IsNumber(mark) && !tfj_tfjob_spec_oversize(&bytes, job->doc))
		return 0;
	cJSON_DeleteItemFromObjectCaseSensitive(job->doc, "spec");
	return spec_fail(job, "spec: more than %u bytes of JSON; the operator serves specs up to "
			 "that size (docs/reliability.md): make the pod templates smaller, e.g. "
			 "move long env lists into a ConfigMap with envFrom",
			 TFJ_TFJOB_MAX_SPEC_BYTES);
}

static void decode_spec(struct tfj_tfjob *job)
{
	const cJSON *spec;
	const char *s;

	/* The job name is a label value on every child: at most 63 characters. */
	if (strlen(job->name) > TFJ_TFJOB_MAX_NAME) {
		spec_fail(job, "metadata.name: %zu characters; at most %d (it labels every pod)",
			  strlen(job->name), TFJ_TFJOB_MAX_NAME);
		return;
	}
	if (oversize_fail(job))
		return;
	if (tfj_json_get_object(&spec, job->doc, "spec")) {
		spec_fail(job, "spec: %s", tfj_err_detail());
		return;
	}
	if (decode_replicas(job, spec) || decode_run_policy(job, spec) || decode_agent(job))
		return;
	if (tfj_json_opt_bool(&job->dynamic_worker, spec, "enableDynamicWorker", 0)) {
		spec_fail(job, "spec.enableDynamicWorker: %s", tfj_err_detail());
		return;
	}
	if (tfj_json_opt_string(&s, spec, "successPolicy", "")) {
		spec_fail(job, "spec.successPolicy: %s", tfj_err_detail());
		return;
	}
	if (!strcmp(s, "AllWorkers"))
		job->success_policy = TFJ_SUCCESS_ALLWORKERS;
	else if (*s)
		spec_fail(job, "spec.successPolicy '%.32s': want \"\" or AllWorkers", s);
}

static int decode_meta(struct tfj_tfjob *job)
{
	const cJSON *meta, *del;
	const char *kind;
	int rc;

	if ((rc = tfj_json_opt_string(&kind, job->doc, "kind", TFJ_TFJOB_KIND)))
		return rc;
	if (strcmp(kind, TFJ_TFJOB_KIND))
		return tfj_err_set(TFJ_EINVAL, "kind '%.32s' is not TFJob", kind);
	if ((rc = tfj_json_get_object(&meta, job->doc, "metadata")) ||
	    (rc = tfj_json_get_string(&job->name, meta, "name")) ||
	    (rc = tfj_json_get_string(&job->ns, meta, "namespace")) ||
	    (rc = tfj_json_get_string(&job->uid, meta, "uid")) ||
	    (rc = tfj_json_opt_string(&job->resource_version, meta, "resourceVersion", "")) ||
	    (rc = tfj_json_opt_int64(&job->generation, meta, "generation", 0, TFJ_JSON_INT_MAX, 0)))
		return rc;
	if (!*job->name || strlen(job->name) > 253 || !*job->ns || strlen(job->ns) > 63 ||
	    !*job->uid || strlen(job->uid) > 127)
		return tfj_err_set(TFJ_EINVAL, "metadata: name, namespace or uid empty or too long");
	del = cJSON_GetObjectItemCaseSensitive(meta, "deletionTimestamp");
	job->deleting = del && !cJSON_IsNull(del);
	return 0;
}

/*
 * status.psSecretName: the job's ps Secret (tfjob/pssecret.h), which its
 * pods mount. Only a name the API server can have given this job's Secret
 * is used; anything else (a hand edit, a restore from elsewhere) is
 * ignored, its reason kept for the planner's Warning event, and the job
 * gets a Secret of its own, whose name replaces it.
 */
static void decode_ps_secret(struct tfj_tfjob *job)
{
	char why[160];
	const char *name;

	job->status.ps_secret[0] = '\0';
	job->ps_secret_ignored[0] = '\0';
	if (!cJSON_IsObject(job->status_json))
		return;
	if (tfj_json_opt_string(&name, job->status_json, "psSecretName", "")) {
		snprintf(job->ps_secret_ignored, sizeof(job->ps_secret_ignored),
			 "status.psSecretName ignored: not a string");
		return;
	}
	if (!*name)
		return;
	if (tfj_pssecret_name_check(why, sizeof(why), job->name, name)) {
		snprintf(job->ps_secret_ignored, sizeof(job->ps_secret_ignored),
			 "status.psSecretName ignored: %s", why);
		return;
	}
	/* name_check bounds it to a subdomain's 253 characters. */
	memcpy(job->status.ps_secret, name, strlen(name) + 1);
}

static int decode_doc(struct tfj_tfjob *job)
{
	int rc;

	if (!cJSON_IsObject(job->doc))
		return tfj_err_set(TFJ_ETYPE, "TFJob: expected a JSON object");
	if ((rc = decode_meta(job)))
		return rc;
	job->spec_valid = 1;
	decode_spec(job);
	job->status_json = cJSON_GetObjectItemCaseSensitive(job->doc, "status");
	/*
	 * A status we cannot read is treated as empty: the status subresource
	 * is ours to write, and the next write replaces it with a good one.
	 */
	if (tfj_jobstatus_decode(&job->status, job->status_json))
		memset(&job->status, 0, sizeof(job->status));
	decode_ps_secret(job);
	return 0;
}

/*
 * Parses text with its spec, when that is over the size the operator serves,
 * replaced by null and marked (TFJ_TFJOB_OVERSIZE_KEY): the tree of a spec
 * that will only be refused is never built. The scanner finds the spec's
 * range without a tree; text the scanner cannot read is parsed as it is, and
 * the parser says what is wrong with it.
 */
static int parse_without_big_spec(cJSON **out, const char *text, size_t len)
{
	struct tfj_jscan_span doc = { text, len }, spec;
	size_t head, tail;
	char *cut = NULL;
	int rc;

	if (len > TFJ_TFJOB_MAX_BYTES || tfj_jscan_member(&spec, doc, "spec") ||
	    spec.n <= TFJ_TFJOB_MAX_SPEC_BYTES)
		return tfj_json_parse(out, text, len, TFJ_TFJOB_MAX_BYTES);
	head = (size_t)(spec.p - text);
	tail = len - head - spec.n;
	if (!(cut = malloc(head + 4 + tail)))
		return tfj_err_set(TFJ_ENOMEM, "TFJob without its spec");
	memcpy(cut, text, head);
	memcpy(cut + head, "null", 4);
	memcpy(cut + head + 4, spec.p + spec.n, tail);
	rc = tfj_json_parse(out, cut, head + 4 + tail, TFJ_TFJOB_MAX_BYTES);
	free(cut);
	if (rc == 0 && cJSON_IsObject(*out) &&
	    !cJSON_AddNumberToObject(*out, TFJ_TFJOB_OVERSIZE_KEY, (double)spec.n)) {
		cJSON_Delete(*out);
		*out = NULL;
		rc = tfj_err_set(TFJ_ENOMEM, "TFJob without its spec");
	}
	return rc;
}

int tfj_tfjob_decode(struct tfj_tfjob *out, const char *text, size_t len)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = parse_without_big_spec(&out->doc, text, len)))
		return rc;
	rc = decode_doc(out);
	if (rc)
		tfj_tfjob_free(out);
	return rc;
}

int tfj_tfjob_from_json(struct tfj_tfjob *out, const cJSON *obj)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (!obj)
		return tfj_err_set(TFJ_EINVAL, "TFJob: NULL object");
	if (tfj_json_depth(obj) > TFJ_JSON_MAX_DEPTH)
		return tfj_err_set(TFJ_ERANGE, "TFJob nested deeper than %d levels",
				   TFJ_JSON_MAX_DEPTH);
	out->doc = cJSON_Duplicate(obj, 1);
	if (!out->doc)
		return tfj_err_set(TFJ_ENOMEM, "copying TFJob");
	rc = decode_doc(out);
	if (rc)
		tfj_tfjob_free(out);
	return rc;
}

void tfj_tfjob_free(struct tfj_tfjob *job)
{
	if (!job)
		return;
	cJSON_Delete(job->doc);
	memset(job, 0, sizeof(*job));
}
