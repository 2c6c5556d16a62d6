/*
 * slim.c - informer transforms (see slim.h for what is kept and why).
 */
#include "app/slim.h"

#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

#include "kube/objmeta.h"
#include "tfjob/netpol.h"
#include "tfjob/podspec.h"
#include "tfjob/podstate.h"
#include "tfjob/tfjob.h"

/* Readers look at no more than this many conditions or container statuses. */
#define LIST_CAP 64

enum kind { K_STRING, K_NUMBER, K_OBJECT, K_ARRAY };

static int is_kind(const cJSON *v, enum kind k)
{
	switch (k) {
	case K_STRING:
		return cJSON_IsString(v);
	case K_NUMBER:
		return cJSON_IsNumber(v);
	case K_OBJECT:
		return cJSON_IsObject(v);
	case K_ARRAY:
		return cJSON_IsArray(v);
	}
	return 0;
}

/*
 * Copies src[key] into dst when it has the expected type. Returns 0, or -1
 * when out of memory; a missing or mistyped field is simply not copied.
 */
static int copy(cJSON *dst, const cJSON *src, const char *key, enum kind k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(src, key);
	cJSON *c;

	if (!v || !is_kind(v, k))
		return 0;
	c = cJSON_Duplicate(v, 1);
	if (!c || !cJSON_AddItemToObject(dst, key, c)) {
		cJSON_Delete(c);
		return -1;
	}
	return 0;
}

/* A new empty object added to dst under key, or NULL when out of memory. */
static cJSON *add_obj(cJSON *dst, const char *key)
{
	return cJSON_AddObjectToObject(dst, key);
}

/*
 * The labels readers look at: job-name (the caches' index, adopt.c,
 * tokenreview.c) and replica-type and replica-index (podstate.c slots
 * pods and services by them; tokenreview.c), or, with `all`, the
 * operator's five (podspec.h). Any other label is the object author's (a
 * tenant may put a megabyte of them on a pod that carries a job's name
 * label), so it is not kept. operator-name and job-role are the
 * operator's own but nothing reads them from a cache: they are about 70
 * bytes of every cached pod and Service.
 */
static int slim_labels(cJSON *dst, const cJSON *meta, int all)
{
	static const char *const keys[] = {
		TFJ_LABEL_JOB_NAME, TFJ_LABEL_REPLICA_TYPE, TFJ_LABEL_REPLICA_INDEX,
		TFJ_LABEL_OPERATOR, TFJ_LABEL_JOB_ROLE,
	};
	const cJSON *labels = cJSON_GetObjectItemCaseSensitive(meta, "labels");
	size_t n = all ? sizeof(keys) / sizeof(keys[0]) : 3;
	cJSON *out;

	if (!cJSON_IsObject(labels))
		return 0;
	if (!(out = add_obj(dst, "labels")))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (copy(out, labels, keys[i], K_STRING))
			return -1;
	return 0;
}

/*
 * The controller ownerReference, the only one readers look at (the first
 * with controller true: the API server allows one), cut to the fields they
 * read. Other references are the object author's and unbounded in number.
 */
static int slim_owner(cJSON *dst, const cJSON *obj, const cJSON *meta)
{
	const cJSON *r = tfj_objmeta_controller_ref(obj);
	cJSON *out, *o;

	if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(meta, "ownerReferences")))
		return 0;
	if (!(out = cJSON_AddArrayToObject(dst, "ownerReferences")))
		return -1;
	if (!r)
		return 0;
	if (!(o = cJSON_CreateObject()) || !cJSON_AddItemToArray(out, o)) {
		cJSON_Delete(o);
		return -1;
	}
	if (copy(o, r, "apiVersion", K_STRING) || copy(o, r, "kind", K_STRING) ||
	    copy(o, r, "name", K_STRING) || copy(o, r, "uid", K_STRING) ||
	    !cJSON_AddTrueToObject(o, "controller"))
		return -1;
	return 0;
}

/*
 * metadata as every reader of cached pods, Services and NetworkPolicies
 * needs it: name and namespace (the key), uid, resourceVersion (the
 * informer's relists), the deletion (podstate.c), the labels above and the
 * controller reference. META_CREATED adds creationTimestamp (pods: the
 * planner tells a replacement made while another replica ran by it,
 * tfjob/planlost.h); META_ALL (PodGroups, at most one per job and cached
 * as before: their readers, tfjob/podgroup.c and planpodgroup.c, were not
 * part of the cut) adds it and generation, which no reader of Services or
 * NetworkPolicies looks at.
 */
enum { META_CREATED = 1, META_ALL = 3 };

static int slim_meta(cJSON *dst, const cJSON *obj, int what)
{
	int all = what == META_ALL;

	const cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	cJSON *o;

	if (!cJSON_IsObject(m))
		return 0;
	if (!(o = add_obj(dst, "metadata")))
		return -1;
	if (copy(o, m, "name", K_STRING) || copy(o, m, "namespace", K_STRING) ||
	    copy(o, m, "uid", K_STRING) || copy(o, m, "resourceVersion", K_STRING) ||
	    (all && copy(o, m, "generation", K_NUMBER)) ||
	    ((what & META_CREATED) && copy(o, m, "creationTimestamp", K_STRING)) ||
	    copy(o, m, "deletionTimestamp", K_STRING) ||
	    copy(o, m, "deletionGracePeriodSeconds", K_NUMBER) || slim_labels(o, m, all) ||
	    slim_owner(o, obj, m))
		return -1;
	return 0;
}

/*
 * apiVersion and kind: PodGroups keep them (as above); a cache of one kind
 * needs neither, and no reader of the other caches looks at them.
 */
static int slim_type(cJSON *dst, const cJSON *obj)
{
	return copy(dst, obj, "apiVersion", K_STRING) || copy(dst, obj, "kind", K_STRING) ? -1 : 0;
}

/*
 * Only the conditions the pod reader looks at (tfj_podstate_reads_condition:
 * DisruptionTarget, Kueue's TerminationTarget, a Ready that is not True
 * for a reason its kubelet does not give). Every pod carries four or five
 * others (PodScheduled, Initialized, its kubelet's Ready, ...), about 200 bytes of a cached pod's 1.1 KB that nobody
 * reads. The reader's cap counts every
 * condition, so the cap here does too: both stop at the same one.
 */
static int slim_conditions(cJSON *dst, const cJSON *src)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(src, "conditions"), *c, *type, *status,
		    *reason;
	cJSON *out = NULL;
	int n = 0;

	if (!cJSON_IsArray(list))
		return 0;
	cJSON_ArrayForEach(c, list) {
		cJSON *o;
		if (++n > TFJ_PODSTATE_MAX_CONDITIONS)
			break;
		type = cJSON_GetObjectItemCaseSensitive(c, "type");
		status = cJSON_GetObjectItemCaseSensitive(c, "status");
		reason = cJSON_GetObjectItemCaseSensitive(c, "reason");
		if (!cJSON_IsObject(c) || !cJSON_IsString(type) ||
		    !tfj_podstate_reads_condition(type->valuestring,
						  cJSON_IsString(status) ? status->valuestring : "",
						  cJSON_IsString(reason) ? reason->valuestring : ""))
			continue;
		/* The list only when a condition is kept: most pods have none. */
		if (!out && !(out = cJSON_AddArrayToObject(dst, "conditions")))
			return -1;
		if (!(o = cJSON_CreateObject()) || !cJSON_AddItemToArray(out, o)) {
			cJSON_Delete(o);
			return -1;
		}
		if (copy(o, c, "type", K_STRING) || copy(o, c, "status", K_STRING) ||
		    copy(o, c, "reason", K_STRING))
			return -1;
	}
	return 0;
}

/*
 * state/lastState: running.startedAt and terminated.{exitCode,reason,message,
 * finishedAt} (finishedAt: which replica failed first, and whether a container
 * ended because its pod was being deleted; tfjob/podstate.h).
 */
static int slim_state(cJSON *dst, const cJSON *cs, const char *key)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(cs, key), *r, *t;
	cJSON *o, *x;

	r = cJSON_GetObjectItemCaseSensitive(s, "running");
	t = cJSON_GetObjectItemCaseSensitive(s, "terminated");
	/* A state with neither (waiting, or lastState {} of a pod never
	 * restarted) reads as no state at all. */
	if (!cJSON_IsObject(r) && !cJSON_IsObject(t))
		return 0;
	if (!(o = add_obj(dst, key)))
		return -1;
	if (cJSON_IsObject(r) && (!(x = add_obj(o, "running")) || copy(x, r, "startedAt", K_STRING)))
		return -1;
	if (cJSON_IsObject(t) &&
	    (!(x = add_obj(o, "terminated")) || copy(x, t, "exitCode", K_NUMBER) ||
	     copy(x, t, "reason", K_STRING) || copy(x, t, "message", K_STRING) ||
	     copy(x, t, "finishedAt", K_STRING)))
		return -1;
	return 0;
}

static int slim_containers(cJSON *dst, const cJSON *status)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(status, "containerStatuses"), *cs;
	cJSON *out;
	int n = 0;

	if (!cJSON_IsArray(list))
		return 0;
	if (!(out = cJSON_AddArrayToObject(dst, "containerStatuses")))
		return -1;
	cJSON_ArrayForEach(cs, list) {
		cJSON *o;
		if (++n > LIST_CAP)
			break;
		if (!cJSON_IsObject(cs))
			continue;
		if (!(o = cJSON_CreateObject()) || !cJSON_AddItemToArray(out, o)) {
			cJSON_Delete(o);
			return -1;
		}
		if (copy(o, cs, "name", K_STRING) || copy(o, cs, "restartCount", K_NUMBER) ||
		    slim_state(o, cs, "state") || slim_state(o, cs, "lastState"))
			return -1;
	}
	return 0;
}

static int slim_pod_status(cJSON *dst, const cJSON *obj)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(obj, "status");
	cJSON *o;

	if (!cJSON_IsObject(s))
		return 0;
	if (!(o = add_obj(dst, "status")))
		return -1;
	if (copy(o, s, "phase", K_STRING) || copy(o, s, "reason", K_STRING) ||
	    slim_conditions(o, s) || slim_containers(o, s))
		return -1;
	return 0;
}

/*
 * Up to LIST_CAP strings of src[key] (or of its items' `name`), in order:
 * the positions are the real ones, which a JSON patch of the list needs.
 */
static int copy_strings(cJSON *dst, const cJSON *src, const char *key, const char *name)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(src, key), *it;
	cJSON *out, *o;
	int n = 0;

	if (!cJSON_IsArray(list))
		return 0;
	if (!(out = cJSON_AddArrayToObject(dst, key)))
		return -1;
	cJSON_ArrayForEach(it, list) {
		const cJSON *v = name ? cJSON_GetObjectItemCaseSensitive(it, name) : it;

		if (++n > LIST_CAP)
			break;
		o = name ? cJSON_CreateObject() : cJSON_CreateString(cJSON_IsString(v) ? v->valuestring : "");
		if (!o || !cJSON_AddItemToArray(out, o)) {
			cJSON_Delete(o);
			return -1;
		}
		if (name && cJSON_IsString(v) && !cJSON_AddStringToObject(o, name, v->valuestring))
			return -1;
	}
	return 0;
}

/*
 * What Kueue's pod integration puts on a pod (tfjob/kueue.h): its
 * finalizer, its scheduling gate, and the node it is bound to (which the
 * events about a lost node name too, planlost.h).
 */
static int slim_kueue(cJSON *dst, const cJSON *obj)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(obj, "spec");
	cJSON *meta = cJSON_GetObjectItemCaseSensitive(dst, "metadata"), *spec;

	if (cJSON_IsObject(meta) && copy_strings(meta, m, "finalizers", NULL))
		return -1;
	/* A spec only when there is something of it to keep. */
	if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(s, "nodeName")) &&
	    !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(s, "schedulingGates")))
		return 0;
	if (!(spec = add_obj(dst, "spec")))
		return -1;
	return copy(spec, s, "nodeName", K_STRING) ||
	       copy_strings(spec, s, "schedulingGates", "name") ? -1 : 0;
}

cJSON *tfj_slim_pod(const cJSON *obj)
{
	cJSON *out;

	if (!cJSON_IsObject(obj) || !(out = cJSON_CreateObject()))
		return NULL;
	if (slim_meta(out, obj, META_CREATED) || slim_kueue(out, obj) || slim_pod_status(out, obj)) {
		cJSON_Delete(out);
		return NULL;
	}
	return out;
}

cJSON *tfj_slim_service(const cJSON *obj)
{
	cJSON *out;

	if (!cJSON_IsObject(obj) || !(out = cJSON_CreateObject()))
		return NULL;
	if (slim_meta(out, obj, 0)) {
		cJSON_Delete(out);
		return NULL;
	}
	return out;
}

/*
 * The metadata and, when it prints in `cap` bytes, the spec: what the
 * planner converges. A spec over the cap is not ours (ours is well under
 * it), so leaving it out only makes the planner replace it.
 */
static cJSON *meta_and_spec(const cJSON *obj, size_t cap)
{
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
	cJSON *out;
	char *text = NULL;
	int keep;

	if (!cJSON_IsObject(obj) || !(out = cJSON_CreateObject()))
		return NULL;
	if (slim_type(out, obj) || slim_meta(out, obj, META_ALL))
		goto fail;
	if (cJSON_IsObject(spec)) {
		if (!(text = cJSON_PrintUnformatted(spec)))
			goto fail;
		keep = strlen(text) <= cap;
		cJSON_free(text);
		if (keep && copy(out, obj, "spec", K_OBJECT))
			goto fail;
	}
	return out;
fail:
	cJSON_Delete(out);
	return NULL;
}

/*
 * The metadata and the digest of the spec (tfj_netpol_spec_digest), all
 * that tfj_netpol_current compares: a job's policy spec is about 500 bytes,
 * its digest 71, and nothing else reads the cached spec (an update sends
 * the whole wanted spec, app/apply.c). A spec over the cap, or one that
 * cannot be digested, is not ours: it is cached without a digest, which
 * the planner replaces.
 */
cJSON *tfj_slim_netpol(const cJSON *obj)
{
	char d[TFJ_NETPOL_DIGEST_MAX];
	cJSON *out;
	int rc;

	if (!cJSON_IsObject(obj) || !(out = cJSON_CreateObject()))
		return NULL;
	if (slim_meta(out, obj, 0))
		goto fail;
	rc = tfj_netpol_spec_digest(d, sizeof(d), cJSON_GetObjectItemCaseSensitive(obj, "spec"),
				    TFJ_SLIM_NETPOL_SPEC_MAX);
	if (rc == TFJ_ENOMEM || (!rc && !cJSON_AddStringToObject(out, TFJ_NETPOL_DIGEST_KEY, d)))
		goto fail;
	return out;
fail:
	cJSON_Delete(out);
	return NULL;
}

cJSON *tfj_slim_podgroup(const cJSON *obj)
{
	return meta_and_spec(obj, TFJ_SLIM_PODGROUP_SPEC_MAX);
}

/*
 * A TFJob whose spec the operator will never serve (tfjob.h's
 * TFJ_TFJOB_MAX_SPEC_BYTES): everything but the spec, and the spec's size
 * under TFJ_TFJOB_OVERSIZE_KEY, so the decoder still fails it with
 * InvalidSpec and the cache does not hold a spec nobody will read.
 */
static cJSON *without_spec(const cJSON *obj, size_t bytes)
{
	cJSON *out = cJSON_CreateObject(), *c;
	const cJSON *m;

	if (!out)
		return NULL;
	for (m = obj->child; m; m = m->next) {
		if (!m->string || !strcmp(m->string, "spec") ||
		    !strcmp(m->string, TFJ_TFJOB_OVERSIZE_KEY))
			continue;
		if (!(c = cJSON_Duplicate(m, 1)) || !cJSON_AddItemToObject(out, m->string, c)) {
			cJSON_Delete(c);
			goto fail;
		}
	}
	if (!cJSON_AddNumberToObject(out, TFJ_TFJOB_OVERSIZE_KEY, (double)bytes))
		goto fail;
	return out;
fail:
	cJSON_Delete(out);
	return NULL;
}

cJSON *tfj_slim_tfjob(const cJSON *obj)
{
	cJSON *out, *meta, *ann;
	size_t bytes;

	if (!cJSON_IsObject(obj))
		return NULL;
	/*
	 * The copy is made whole and then trimmed: a TFJob is mostly spec and
	 * status, which are kept, so trimming first would save little.
	 */
	out = tfj_tfjob_spec_oversize(&bytes, obj) ? without_spec(obj, bytes) : cJSON_Duplicate(obj, 1);
	if (!out)
		return NULL;
	meta = cJSON_GetObjectItemCaseSensitive(out, "metadata");
	if (cJSON_IsObject(meta)) {
		cJSON_DeleteItemFromObjectCaseSensitive(meta, "managedFields");
		ann = cJSON_GetObjectItemCaseSensitive(meta, "annotations");
		if (cJSON_IsObject(ann)) {
			cJSON_DeleteItemFromObjectCaseSensitive(ann, TFJ_SLIM_LAST_APPLIED);
			if (!ann->child)
				cJSON_DeleteItemFromObjectCaseSensitive(meta, "annotations");
		}
	}
	return out;
}
