/*
 * plan_fixtures.h - TFJob, pod and service fixtures for the planner tests,
 * and a small in-memory "cluster" that applies plans the way controller.c
 * does (status write, creates, deletes), so multi-step scenarios can run
 * the real planner round after round.
 *
 * Header-only (static inline) so each test program includes what it uses.
 */
#ifndef TFJ_PLAN_FIXTURES_H
#define TFJ_PLAN_FIXTURES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <tfj/err.h>

#include "tfjob/plan.h"
#include "tfjob/podspec.h"
#include "tfj_test.h"

#define FX_T0_MS 1700000000000LL /* 2023-11-14T22:13:20Z */
#define FX_MAX_OBJS 256

/* The item of array arr whose "name" is name, or NULL. */
static inline cJSON *fx_named(cJSON *arr, const char *name)
{
	cJSON *it, *n;

	cJSON_ArrayForEach(it, arr) {
		n = cJSON_GetObjectItem(it, "name");
		if (cJSON_IsString(n) && !strcmp(n->valuestring, name))
			return it;
	}
	return NULL;
}

static inline cJSON *fx_template(void)
{
	return cJSON_Parse("{\"metadata\":{\"labels\":{\"app\":\"mnist\"},"
			   "\"annotations\":{\"note\":\"kept\"}},"
			   "\"spec\":{\"containers\":[{\"name\":\"tensorflow\","
			   "\"image\":\"tfjob-runtime:dev\"}]}}");
}

static inline cJSON *fx_job(const char *name)
{
	cJSON *j = cJSON_CreateObject(), *m, *s;

	cJSON_AddStringToObject(j, "apiVersion", "kubeflow.org/v1");
	cJSON_AddStringToObject(j, "kind", "TFJob");
	m = cJSON_AddObjectToObject(j, "metadata");
	cJSON_AddStringToObject(m, "name", name);
	cJSON_AddStringToObject(m, "namespace", "default");
	cJSON_AddStringToObject(m, "uid", "job-uid-1");
	cJSON_AddNumberToObject(m, "generation", 1);
	s = cJSON_AddObjectToObject(j, "spec");
	cJSON_AddObjectToObject(s, "tfReplicaSpecs");
	return j;
}

/* Adds a replica type; policy NULL leaves restartPolicy out (default Never). */
static inline cJSON *fx_replica(cJSON *job, const char *type, int n, const char *policy)
{
	cJSON *specs = cJSON_GetObjectItem(cJSON_GetObjectItem(job, "spec"), "tfReplicaSpecs");
	cJSON *r = cJSON_AddObjectToObject(specs, type);

	cJSON_AddNumberToObject(r, "replicas", n);
	if (policy)
		cJSON_AddStringToObject(r, "restartPolicy", policy);
	cJSON_AddItemToObject(r, "template", fx_template());
	return r;
}

static inline cJSON *fx_run_policy(cJSON *job)
{
	cJSON *s = cJSON_GetObjectItem(job, "spec");
	cJSON *r = cJSON_GetObjectItem(s, "runPolicy");

	return r ? r : cJSON_AddObjectToObject(s, "runPolicy");
}

/* A pod as the planner would have created it, then moved to `phase`. */
static inline cJSON *fx_pod(const char *job, const char *type, int idx, const char *phase)
{
	cJSON *p = cJSON_CreateObject(), *m, *l, *st;
	char name[128], sidx[16], uid[160];

	snprintf(name, sizeof(name), "%s-%s-%d", job, type, idx);
	snprintf(sidx, sizeof(sidx), "%d", idx);
	snprintf(uid, sizeof(uid), "uid-%s", name);
	m = cJSON_AddObjectToObject(p, "metadata");
	cJSON_AddStringToObject(m, "name", name);
	cJSON_AddStringToObject(m, "uid", uid);
	l = cJSON_AddObjectToObject(m, "labels");
	cJSON_AddStringToObject(l, TFJ_LABEL_JOB_NAME, job);
	cJSON_AddStringToObject(l, TFJ_LABEL_REPLICA_TYPE, type);
	cJSON_AddStringToObject(l, TFJ_LABEL_REPLICA_INDEX, sidx);
	st = cJSON_AddObjectToObject(p, "status");
	cJSON_AddStringToObject(st, "phase", phase);
	return p;
}

static inline void fx_pod_phase(cJSON *pod, const char *phase)
{
	cJSON *st = cJSON_GetObjectItem(pod, "status");

	cJSON_ReplaceItemInObject(st, "phase", cJSON_CreateString(phase));
}

/* Gives the pod a container status with a terminated state. */
static inline void fx_pod_exit(cJSON *pod, const char *container, int code, const char *reason,
			       int restarts)
{
	cJSON *st = cJSON_GetObjectItem(pod, "status");
	cJSON *list = cJSON_GetObjectItem(st, "containerStatuses"), *cs, *state, *t;

	if (!list)
		list = cJSON_AddArrayToObject(st, "containerStatuses");
	cs = cJSON_CreateObject();
	cJSON_AddItemToArray(list, cs);
	cJSON_AddStringToObject(cs, "name", container);
	cJSON_AddNumberToObject(cs, "restartCount", restarts);
	state = cJSON_AddObjectToObject(cs, code >= 0 ? "state" : "lastState");
	if (code < 0)
		code = -code;
	t = cJSON_AddObjectToObject(state, "terminated");
	cJSON_AddNumberToObject(t, "exitCode", code);
	if (reason)
		cJSON_AddStringToObject(t, "reason", reason);
}

/* Running container with restarts (OnFailure/Always restarts by the kubelet). */
static inline void fx_pod_restarts(cJSON *pod, int restarts)
{
	cJSON *st = cJSON_GetObjectItem(pod, "status");
	cJSON *list = cJSON_AddArrayToObject(st, "containerStatuses"), *cs;

	cs = cJSON_CreateObject();
	cJSON_AddItemToArray(list, cs);
	cJSON_AddStringToObject(cs, "name", "tensorflow");
	cJSON_AddNumberToObject(cs, "restartCount", restarts);
}

static inline void fx_pod_reason(cJSON *pod, const char *reason)
{
	cJSON_AddStringToObject(cJSON_GetObjectItem(pod, "status"), "reason", reason);
}

/* ---- a tiny cluster ------------------------------------------------- */

struct fx_world {
	cJSON *job;
	cJSON *pods[FX_MAX_OBJS];
	size_t npods;
	cJSON *svcs[FX_MAX_OBJS];
	size_t nsvcs;
	cJSON *netpols[4];         /* the job's NetworkPolicies (cfg.netpol) */
	size_t nnetpols;
	int report_ca_current;     /* the namespace holds the report CA (cfg.report_ca) */
	int ps_secret_known;       /* the job's ps Secret exists (cfg.ps_secret) */
	int64_t now_ms;
	struct tfj_plan plan;
	struct tfj_tfjob planned;  /* the job the plan was computed from (it points there) */
	struct tfj_plan_config cfg;
	const struct tfj_plan_progress *progress; /* report channel input; NULL = off */
	const struct tfj_createfail *create_failure; /* createfail.h input; NULL = none */
	cJSON *podgroup;           /* the PodGroup named after the job (cfg.gang); owned */
	int podgroup_api_absent;   /* the PodGroup API is not served (plan.h) */
	int creates, deletes, status_writes, events, uid_seq;
	int secret_posts;          /* CREATE_SECRETs applied */
	char secret[96];           /* the name the plan being applied recorded ("" = none) */
};

static inline void fx_world_init(struct fx_world *w, cJSON *job)
{
	memset(w, 0, sizeof(*w));
	w->job = job;
	w->now_ms = FX_T0_MS;
}

static inline void fx_world_free(struct fx_world *w)
{
	size_t i;

	tfj_plan_free(&w->plan);
	tfj_tfjob_free(&w->planned);
	for (i = 0; i < w->npods; i++)
		cJSON_Delete(w->pods[i]);
	for (i = 0; i < w->nsvcs; i++)
		cJSON_Delete(w->svcs[i]);
	for (i = 0; i < w->nnetpols; i++)
		cJSON_Delete(w->netpols[i]);
	cJSON_Delete(w->podgroup);
	cJSON_Delete(w->job);
}

/* Decodes the job and plans; the plan stays in w->plan. Returns the rc. */
static inline int fx_plan(struct fx_world *w)
{
	struct tfj_plan_input in;
	int rc;

	tfj_plan_free(&w->plan);
	tfj_tfjob_free(&w->planned);
	rc = tfj_tfjob_from_json(&w->planned, w->job);
	TFJ_CHECK_INT(rc, 0);
	if (rc)
		return rc;
	memset(&in, 0, sizeof(in));
	in.job = &w->planned;
	in.pods = (const cJSON *const *)w->pods;
	in.npods = w->npods;
	in.services = (const cJSON *const *)w->svcs;
	in.nservices = w->nsvcs;
	in.netpols = (const cJSON *const *)w->netpols;
	in.nnetpols = w->nnetpols;
	in.report_ca_current = w->report_ca_current;
	in.ps_secret_known = w->ps_secret_known;
	in.now_ms = w->now_ms;
	in.cfg = &w->cfg;
	in.progress = w->progress;
	in.create_failure = w->create_failure;
	in.podgroup = w->podgroup;
	in.podgroup_api_absent = w->podgroup_api_absent;
	return tfj_plan_compute(&w->plan, &in);
}

/* The body of create action a of the world's plan (the caller's), as apply.c builds it. */
static inline cJSON *fx_body(struct fx_world *w, const struct tfj_action *a)
{
	cJSON *body = NULL;

	TFJ_CHECK_INT(tfj_plan_child_body(&body, &w->plan, a, w->secret[0] ? w->secret : NULL), 0);
	return body;
}

static inline int fx_find(cJSON **arr, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++) {
		cJSON *nm = cJSON_GetObjectItem(cJSON_GetObjectItem(arr[i], "metadata"), "name");

		if (cJSON_IsString(nm) && !strcmp(nm->valuestring, name))
			return (int)i;
	}
	return -1;
}

static inline cJSON *fx_pod_named(struct fx_world *w, const char *name)
{
	int i = fx_find(w->pods, w->npods, name);

	return i >= 0 ? w->pods[i] : NULL;
}

static inline void fx_remove(cJSON **arr, size_t *n, int i)
{
	cJSON_Delete(arr[i]);
	arr[i] = arr[--*n];
}

/* Applies the plan as controller.c does. New pods start Pending. */
static inline void fx_apply(struct fx_world *w)
{
	size_t i;

	w->secret[0] = '\0';
	for (i = 0; i < w->plan.n; i++) {
		struct tfj_action *a = &w->plan.actions[i];
		cJSON *obj, *st;
		char uid[96];
		int at;

		if (a->ev_type)
			w->events++;
		switch (a->kind) {
		case TFJ_ACT_WRITE_STATUS:
			cJSON_DeleteItemFromObject(w->job, "status");
			cJSON_AddItemToObject(w->job, "status", cJSON_Duplicate(a->body, 1));
			w->status_writes++;
			break;
		case TFJ_ACT_CREATE_POD:
		case TFJ_ACT_CREATE_SERVICE:
			if (!(obj = fx_body(w, a)))
				break;
			snprintf(uid, sizeof(uid), "uid-%s-%d", a->name, ++w->uid_seq);
			cJSON_AddStringToObject(cJSON_GetObjectItem(obj, "metadata"), "uid", uid);
			if (a->kind == TFJ_ACT_CREATE_POD) {
				st = cJSON_AddObjectToObject(obj, "status");
				cJSON_AddStringToObject(st, "phase", "Pending");
				if (fx_find(w->pods, w->npods, a->name) < 0 && w->npods < FX_MAX_OBJS)
					w->pods[w->npods++] = obj;
				else
					cJSON_Delete(obj);
			} else if (fx_find(w->svcs, w->nsvcs, a->name) < 0 && w->nsvcs < FX_MAX_OBJS) {
				w->svcs[w->nsvcs++] = obj;
			} else {
				cJSON_Delete(obj);
			}
			w->creates++;
			break;
		case TFJ_ACT_CREATE_NETPOL:
		case TFJ_ACT_UPDATE_NETPOL:
			/* The API server keeps the spec as sent (netpol.h). */
			if (!(obj = fx_body(w, a)))
				break;
			snprintf(uid, sizeof(uid), "uid-%s-%d", a->name, ++w->uid_seq);
			at = fx_find(w->netpols, w->nnetpols, a->name);
			if (at >= 0 && a->kind == TFJ_ACT_UPDATE_NETPOL) {
				cJSON_ReplaceItemInObject(w->netpols[at], "spec",
							  cJSON_DetachItemFromObject(obj, "spec"));
				cJSON_Delete(obj);
			} else if (at < 0 && a->kind == TFJ_ACT_CREATE_NETPOL && w->nnetpols < 4) {
				cJSON_AddStringToObject(cJSON_GetObjectItem(obj, "metadata"), "uid", uid);
				w->netpols[w->nnetpols++] = obj;
			} else {
				cJSON_Delete(obj);
			}
			w->creates++;
			break;
		case TFJ_ACT_CREATE_PODGROUP:
			/* As the API server keeps it, with a uid; 409 when one is there. */
			if (!w->podgroup && (w->podgroup = cJSON_Duplicate(a->body, 1))) {
				snprintf(uid, sizeof(uid), "uid-pg-%s-%d", a->name, ++w->uid_seq);
				cJSON_AddStringToObject(cJSON_GetObjectItem(w->podgroup, "metadata"),
							"uid", uid);
			}
			w->creates++;
			break;
		case TFJ_ACT_UPDATE_PODGROUP:
			if (w->podgroup)
				cJSON_ReplaceItemInObject(w->podgroup, "spec",
							  cJSON_Duplicate(a->body, 1));
			break;
		case TFJ_ACT_DELETE_PODGROUP:
			cJSON_Delete(w->podgroup);
			w->podgroup = NULL;
			w->deletes++;
			break;
		case TFJ_ACT_DELETE_POD:
			if ((at = fx_find(w->pods, w->npods, a->name)) >= 0)
				fx_remove(w->pods, &w->npods, at);
			w->deletes++;
			break;
		case TFJ_ACT_DELETE_SERVICE:
			if ((at = fx_find(w->svcs, w->nsvcs, a->name)) >= 0)
				fx_remove(w->svcs, &w->nsvcs, at);
			w->deletes++;
			break;
		case TFJ_ACT_CREATE_SECRET:
			/* A new Secret: the API server names it, apply.c records the
			 * name in the status. */
			w->secret_posts++;
			if (!w->plan.ps_secret[0]) {
				char nm[96];

				snprintf(nm, sizeof(nm), "%s-ps-g%d",
					 cJSON_GetStringValue(cJSON_GetObjectItem(
						 cJSON_GetObjectItem(w->job, "metadata"), "name")),
					 ++w->uid_seq);
				if (!(st = cJSON_GetObjectItem(w->job, "status")))
					st = cJSON_AddObjectToObject(w->job, "status");
				cJSON_DeleteItemFromObject(st, "psSecretName");
				cJSON_AddStringToObject(st, "psSecretName", nm);
				/* The plan's pods mount the recorded name (plan.h). */
				snprintf(w->secret, sizeof(w->secret), "%s", nm);
			}
			break;
		default:
			break;
		}
	}
}

/* Plans and applies once. */
static inline void fx_step(struct fx_world *w)
{
	TFJ_CHECK_INT(fx_plan(w), 0);
	fx_apply(w);
}

/* Sets every pod of the world to `phase`. */
static inline void fx_all_pods(struct fx_world *w, const char *phase)
{
	size_t i;

	for (i = 0; i < w->npods; i++)
		fx_pod_phase(w->pods[i], phase);
}

static inline size_t fx_count(const struct tfj_plan *p, enum tfj_action_kind k)
{
	size_t i, n = 0;

	for (i = 0; i < p->n; i++)
		n += p->actions[i].kind == k;
	return n;
}

static inline const struct tfj_action *fx_action(const struct tfj_plan *p,
						 enum tfj_action_kind k, const char *name)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (p->actions[i].kind == k && (!name || !strcmp(p->actions[i].name, name)))
			return &p->actions[i];
	return NULL;
}

/* The event action with this reason, or NULL. */
static inline const struct tfj_action *fx_event(const struct tfj_plan *p, const char *reason)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (p->actions[i].ev_reason && !strcmp(p->actions[i].ev_reason, reason))
			return &p->actions[i];
	return NULL;
}

static inline const char *fx_status_str(struct fx_world *w, const char *key)
{
	cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(w->job, "status"), key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

/* "True"/"False"/"" for a condition in the world's job status. */
static inline const char *fx_cond(struct fx_world *w, const char *type)
{
	cJSON *c, *conds = cJSON_GetObjectItem(cJSON_GetObjectItem(w->job, "status"), "conditions");

	cJSON_ArrayForEach(c, conds)
		if (!strcmp(cJSON_GetObjectItem(c, "type")->valuestring, type))
			return cJSON_GetObjectItem(c, "status")->valuestring;
	return "";
}

static inline const char *fx_cond_field(struct fx_world *w, const char *type, const char *field)
{
	cJSON *c, *conds = cJSON_GetObjectItem(cJSON_GetObjectItem(w->job, "status"), "conditions");

	cJSON_ArrayForEach(c, conds)
		if (!strcmp(cJSON_GetObjectItem(c, "type")->valuestring, type))
			return cJSON_GetObjectItem(c, field)->valuestring;
	return "";
}

static inline double fx_rs(struct fx_world *w, const char *type, const char *field)
{
	cJSON *rs = cJSON_GetObjectItem(cJSON_GetObjectItem(w->job, "status"), "replicaStatuses");
	cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(rs, type), field);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

#endif
