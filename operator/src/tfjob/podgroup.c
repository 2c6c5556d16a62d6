/*
 * podgroup.c - the PodGroup of a TFJob (gang scheduling) and its pods' marks.
 */
#include "tfjob/podgroup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/json.h>

#include "kube/objmeta.h"
#include "tfjob/podspec.h"
#include "tfjob/quantity.h"

/* Resource names summed for minResources; more in one job is refused. */
#define MAX_RESOURCES 32
#define LAST_APPLIED "kubectl.kubernetes.io/last-applied-configuration"

int tfj_podgroup_parse(struct tfj_gang *out, const char *s)
{
	size_t n, i;

	memset(out, 0, sizeof(*out));
	if (!s || !*s || !strcmp(s, "none") || !strcmp(s, "None"))
		return 0;
	if (!strcmp(s, TFJ_PODGROUP_VOLCANO_SCHEDULER)) {
		out->api = TFJ_PODGROUP_VOLCANO;
		out->scheduler = TFJ_PODGROUP_VOLCANO_SCHEDULER;
		return 0;
	}
	/* A scheduler (profile) name is a pod's spec.schedulerName: a DNS-1123 subdomain. */
	n = strlen(s);
	if (n > 253)
		return tfj_err_set(TFJ_EINVAL, "gang scheduler name: longer than 253 characters");
	for (i = 0; i < n; i++) {
		char c = s[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!alnum && ((c != '-' && c != '.') || i == 0 || i == n - 1))
			return tfj_err_set(TFJ_EINVAL,
					   "gang scheduler name '%s': not a DNS-1123 subdomain "
					   "(volcano, or the scheduler-plugins scheduler's name)", s);
	}
	out->api = TFJ_PODGROUP_SCHEDULER_PLUGINS;
	out->scheduler = s;
	return 0;
}

const char *tfj_podgroup_api_path(enum tfj_podgroup_api api)
{
	switch (api) {
	case TFJ_PODGROUP_SCHEDULER_PLUGINS: return "/apis/" TFJ_PODGROUP_SP_API;
	case TFJ_PODGROUP_VOLCANO: return "/apis/" TFJ_PODGROUP_VOLCANO_API;
	default: return NULL;
	}
}

const char *tfj_podgroup_api_name(enum tfj_podgroup_api api)
{
	switch (api) {
	case TFJ_PODGROUP_SCHEDULER_PLUGINS: return "scheduler-plugins";
	case TFJ_PODGROUP_VOLCANO: return "volcano";
	default: return "off";
	}
}

const char *tfj_podgroup_op_name(enum tfj_podgroup_op op)
{
	switch (op) {
	case TFJ_PODGROUP_CREATE: return "create";
	case TFJ_PODGROUP_UPDATE: return "update";
	case TFJ_PODGROUP_DELETE: return "delete";
	default: return "none";
	}
}

int tfj_podgroup_wanted(const struct tfj_tfjob *job)
{
	return job->spec_valid && !job->run.suspend && !job->deleting &&
	       !tfj_jobstatus_finished(&job->status);
}

/* ---- minResources ---- */

struct reslist {
	const char *name[MAX_RESOURCES]; /* point into the job */
	int64_t milli[MAX_RESOURCES];
	int n;
};

static int res_add(struct reslist *r, const char *name, const cJSON *q, const char *where)
{
	int64_t v;
	int i;

	if (tfj_quantity_from_json(&v, q))
		return tfj_err_set(TFJ_EINVAL, "%s.%s: %s", where, name, tfj_err_detail());
	for (i = 0; i < r->n; i++)
		if (!strcmp(r->name[i], name))
			break;
	if (i == r->n) {
		if (r->n == MAX_RESOURCES)
			return tfj_err_set(TFJ_ETOOBIG, "%s: more than %d resource names", where,
					   MAX_RESOURCES);
		r->name[r->n] = name;
		r->milli[r->n++] = 0;
	}
	if (tfj_quantity_add(&r->milli[i], v))
		return tfj_err_set(TFJ_ERANGE, "%s.%s: %s", where, name, tfj_err_detail());
	return 0;
}

/* Adds one pod of the template: each container's requests, else its limits. */
static int add_pod(struct reslist *r, const cJSON *tmpl)
{
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(tmpl, "spec");
	const cJSON *c, *res, *list, *q;
	int rc;

	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, "containers")) {
		res = cJSON_GetObjectItemCaseSensitive(c, "resources");
		list = cJSON_GetObjectItemCaseSensitive(res, "requests");
		/* A container without requests is given its limits as requests. */
		if (!cJSON_IsObject(list))
			list = cJSON_GetObjectItemCaseSensitive(res, "limits");
		if (!cJSON_IsObject(list))
			continue;
		cJSON_ArrayForEach(q, list)
			if ((rc = res_add(r, q->string, q, "container resources")))
				return rc;
	}
	return 0;
}

static int put_reslist(cJSON *spec, const struct reslist *r)
{
	char buf[TFJ_QUANTITY_FMT_LEN];
	cJSON *o;
	int i, rc;

	if (!r->n)
		return 0; /* nothing requested: no minimum to check */
	if (!(o = cJSON_AddObjectToObject(spec, "minResources")))
		return TFJ_ENOMEM;
	for (i = 0; i < r->n; i++) {
		if ((rc = tfj_quantity_format(buf, sizeof(buf), r->milli[i])))
			return rc;
		if (!cJSON_AddStringToObject(o, r->name[i], buf))
			return TFJ_ENOMEM;
	}
	return 0;
}

/* The requests of the first min_member pods in the planner's type order. */
static int computed_resources(struct reslist *r, const struct tfj_tfjob *job, int64_t min_member)
{
	int64_t taken = 0;
	int t, i, rc;

	for (t = 0; t < TFJ_RT_COUNT; t++) {
		if (!job->rs[t].present)
			continue;
		for (i = 0; i < job->rs[t].replicas && taken < min_member; i++, taken++)
			if ((rc = add_pod(r, job->rs[t].tmpl)))
				return rc;
	}
	return 0;
}

/* ---- the body ---- */

struct policy {
	int64_t min_member;
	const char *queue, *priority_class;
	const cJSON *min_resources;   /* NULL = computed */
	int has_timeout;
	int64_t timeout_s;
};

static int read_policy(struct policy *p, const struct tfj_tfjob *job)
{
	const cJSON *sp = job->run.scheduling_policy, *v;

	memset(p, 0, sizeof(*p));
	p->min_member = job->total_replicas;
	if (!sp)
		return 0;
	v = cJSON_GetObjectItemCaseSensitive(sp, "minAvailable");
	if (v && !cJSON_IsNull(v) &&
	    tfj_json_as_int64(&p->min_member, v, "schedulingPolicy.minAvailable", 0, 2147483647))
		return TFJ_EINVAL;
	if (tfj_json_opt_string(&p->queue, sp, "queue", NULL) ||
	    tfj_json_opt_string(&p->priority_class, sp, "priorityClass", NULL))
		return tfj_err_set(TFJ_EINVAL, "schedulingPolicy: %s", tfj_err_detail());
	v = cJSON_GetObjectItemCaseSensitive(sp, "minResources");
	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsObject(v))
			return tfj_err_set(TFJ_EINVAL, "schedulingPolicy.minResources: expected an object");
		p->min_resources = v;
	}
	v = cJSON_GetObjectItemCaseSensitive(sp, "scheduleTimeoutSeconds");
	if (v && !cJSON_IsNull(v)) {
		if (tfj_json_as_int64(&p->timeout_s, v, "schedulingPolicy.scheduleTimeoutSeconds", 0,
				      2147483647))
			return TFJ_EINVAL;
		p->has_timeout = 1;
	}
	if (p->queue && !*p->queue)
		p->queue = NULL;
	if (p->priority_class && !*p->priority_class)
		p->priority_class = NULL;
	return 0;
}

static int put_spec(cJSON *spec, const struct tfj_tfjob *job, const struct tfj_gang *g,
		    const struct policy *p)
{
	struct reslist r;
	const cJSON *q;
	int rc;

	memset(&r, 0, sizeof(r));
	if (!cJSON_AddNumberToObject(spec, "minMember", (double)p->min_member))
		return TFJ_ENOMEM;
	if (g->api == TFJ_PODGROUP_VOLCANO &&
	    (!cJSON_AddStringToObject(spec, "queue", p->queue ? p->queue : TFJ_PODGROUP_DEFAULT_QUEUE) ||
	     (p->priority_class &&
	      !cJSON_AddStringToObject(spec, "priorityClassName", p->priority_class))))
		return TFJ_ENOMEM;
	if (p->min_resources) {
		/* The user's minimum, checked and written in one canonical form. */
		cJSON_ArrayForEach(q, p->min_resources)
			if ((rc = res_add(&r, q->string, q, "schedulingPolicy.minResources")))
				return rc;
	} else if ((rc = computed_resources(&r, job, p->min_member))) {
		return rc;
	}
	if ((rc = put_reslist(spec, &r)))
		return rc;
	if (g->api == TFJ_PODGROUP_SCHEDULER_PLUGINS && p->has_timeout &&
	    !cJSON_AddNumberToObject(spec, "scheduleTimeoutSeconds", (double)p->timeout_s))
		return TFJ_ENOMEM;
	return 0;
}

static int put_meta(cJSON *meta, const struct tfj_tfjob *job)
{
	const cJSON *src = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(job->doc, "metadata"), "annotations");
	const cJSON *a;
	cJSON *ann = NULL;

	if (!cJSON_AddStringToObject(meta, "name", job->name) ||
	    !cJSON_AddStringToObject(meta, "namespace", job->ns))
		return TFJ_ENOMEM;
	/* Kubeflow copies the job's annotations (schedulers read some of theirs there). */
	cJSON_ArrayForEach(a, src) {
		if (!cJSON_IsString(a) || !strcmp(a->string, LAST_APPLIED))
			continue; /* a copy of the whole job is no PodGroup's business */
		if (!ann && !(ann = cJSON_AddObjectToObject(meta, "annotations")))
			return TFJ_ENOMEM;
		if (!cJSON_AddStringToObject(ann, a->string, a->valuestring))
			return TFJ_ENOMEM;
	}
	return tfj_podspec_owner_ref(meta, job);
}

int tfj_podgroup_body(cJSON **out, const struct tfj_tfjob *job, const struct tfj_gang *g)
{
	struct policy p;
	cJSON *pg = NULL, *meta, *spec;
	int rc;

	*out = NULL;
	if (!g || g->api == TFJ_PODGROUP_OFF || !job->spec_valid)
		return tfj_err_set(TFJ_EINVAL, "no PodGroup: gang scheduling off or invalid job");
	if ((rc = read_policy(&p, job)))
		return rc;
	if (!(pg = cJSON_CreateObject()) ||
	    !cJSON_AddStringToObject(pg, "apiVersion", g->api == TFJ_PODGROUP_VOLCANO ?
							 TFJ_PODGROUP_VOLCANO_API : TFJ_PODGROUP_SP_API) ||
	    !cJSON_AddStringToObject(pg, "kind", "PodGroup") ||
	    !(meta = cJSON_AddObjectToObject(pg, "metadata")) ||
	    !(spec = cJSON_AddObjectToObject(pg, "spec"))) {
		rc = TFJ_ENOMEM;
		goto out;
	}
	if ((rc = put_meta(meta, job)) || (rc = put_spec(spec, job, g, &p)))
		goto out;
	*out = pg;
	pg = NULL;
out:
	cJSON_Delete(pg);
	if (rc == TFJ_ENOMEM)
		return tfj_err_set(TFJ_ENOMEM, "building PodGroup");
	return rc;
}

/* ---- plan ---- */

/* The uid of obj's controller ownerReference, or NULL when it has none. */
static const char *controller_uid(const cJSON *obj)
{
	const cJSON *refs = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "ownerReferences");
	const cJSON *r, *uid;

	cJSON_ArrayForEach(r, refs) {
		if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "controller")))
			continue;
		uid = cJSON_GetObjectItemCaseSensitive(r, "uid");
		return cJSON_IsString(uid) ? uid->valuestring : "";
	}
	return NULL;
}

/* 1 when every field we manage has the wanted value in have. */
static int spec_matches(const cJSON *want, const cJSON *have)
{
	static const char *const managed[] = { "minMember", "minResources", "queue",
					       "priorityClassName", "scheduleTimeoutSeconds" };
	size_t i;

	if (!cJSON_IsObject(have))
		return 0;
	for (i = 0; i < sizeof(managed) / sizeof(managed[0]); i++) {
		const cJSON *w = cJSON_GetObjectItemCaseSensitive(want, managed[i]);
		const cJSON *h = cJSON_GetObjectItemCaseSensitive(have, managed[i]);
		if (!w != !h || (w && !cJSON_Compare(w, h, 1)))
			return 0;
	}
	return 1;
}

int tfj_podgroup_plan(enum tfj_podgroup_op *op, cJSON **body, const struct tfj_tfjob *job,
		      const cJSON *observed, const struct tfj_gang *g)
{
	const char *owner = observed ? controller_uid(observed) : NULL;
	const cJSON *have_spec, *q;
	cJSON *want = NULL, *upd = NULL, *spec;
	int rc;

	*op = TFJ_PODGROUP_NOOP;
	*body = NULL;
	if (!g || g->api == TFJ_PODGROUP_OFF)
		return 0;
	if (!tfj_podgroup_wanted(job)) {
		/* Ours (or orphaned) goes; someone else's controller owns theirs. */
		if (observed && (!owner || !strcmp(owner, job->uid)))
			*op = TFJ_PODGROUP_DELETE;
		return 0;
	}
	if (observed && owner && strcmp(owner, job->uid)) {
		/* Left by an earlier TFJob of this name, waiting for the garbage
		 * collector: remove it now so this job's can be created. */
		*op = TFJ_PODGROUP_DELETE;
		return 0;
	}
	if ((rc = tfj_podgroup_body(&want, job, g)))
		return rc;
	if (!observed) {
		*op = TFJ_PODGROUP_CREATE;
		*body = want;
		return 0;
	}
	have_spec = cJSON_GetObjectItemCaseSensitive(observed, "spec");
	spec = cJSON_GetObjectItemCaseSensitive(want, "spec");
	/* Volcano's queue is immutable once set: keep the PodGroup's. */
	q = cJSON_GetObjectItemCaseSensitive(have_spec, "queue");
	if (g->api == TFJ_PODGROUP_VOLCANO && cJSON_IsString(q) && q->valuestring && *q->valuestring &&
	    !cJSON_ReplaceItemInObjectCaseSensitive(spec, "queue", cJSON_CreateString(q->valuestring))) {
		rc = tfj_err_set(TFJ_ENOMEM, "building PodGroup");
		goto out;
	}
	if (spec_matches(spec, have_spec))
		goto out;
	/* The observed object with our spec; the planner sends only the spec (planpodgroup.c). */
	if (!(upd = cJSON_Duplicate(observed, 1))) {
		rc = tfj_err_set(TFJ_ENOMEM, "building PodGroup");
		goto out;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(upd, "status");
	cJSON_DeleteItemFromObjectCaseSensitive(upd, "spec");
	cJSON_DetachItemViaPointer(want, spec);
	cJSON_AddItemToObject(upd, "spec", spec);
	*op = TFJ_PODGROUP_UPDATE;
	*body = upd;
out:
	cJSON_Delete(want);
	return rc;
}
