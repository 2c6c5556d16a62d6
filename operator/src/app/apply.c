/*
 * apply.c - carrying out a plan: the only code that writes TFJob children,
 * TFJob status and events.
 */
#include "app/apply.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>

#include <tfj/certgen.h>
#include <tfj/clock.h>
#include <tfj/err.h>
#include <tfj/json.h>
#include <tfj/log.h>

#include "app/gang.h"
#include "kube/apipath.h"
#include "kube/jscan.h"
#include "kube/objmeta.h"
#include "tfjob/adopt.h"
#include "tfjob/jobstatus.h"
#include "tfjob/kueue.h"
#include "tfjob/netpol.h"
#include "tfjob/pssecret.h"

#define PATH_MAX_ 1024


/* ---- events ---- */

void tfj_apply_event(struct tfj_apply *c, const struct tfj_tfjob *job,
		       const char *type, const char *reason, const char *msg)
{
	struct tfj_events_ref ref = { job->ns, job->name, job->uid };

	/* Queued, not sent: events spend their own budget on their own thread (events.h). */
	tfj_events_post(c->events, &ref, type, reason, msg);
}

/* ---- status ---- */

/*
 * The body of a status write: the job's identity and the new status, not the
 * whole object. On the status subresource the API server takes everything
 * but .status from the stored object (and refuses a changed uid or a stale
 * resourceVersion with 409), so the spec need not travel, nor be copied.
 */
static int status_body(char **out, const struct tfj_tfjob *job, const char *rv,
		       const cJSON *status)
{
	cJSON *doc = cJSON_CreateObject(), *meta, *st = cJSON_Duplicate(status, 1);
	int rc = TFJ_ENOMEM;

	*out = NULL;
	if (!doc || !st || !cJSON_AddStringToObject(doc, "apiVersion", TFJ_TFJOB_API_VERSION) ||
	    !cJSON_AddStringToObject(doc, "kind", TFJ_TFJOB_KIND) ||
	    !(meta = cJSON_AddObjectToObject(doc, "metadata")) ||
	    !cJSON_AddStringToObject(meta, "name", job->name) ||
	    !cJSON_AddStringToObject(meta, "namespace", job->ns) ||
	    !cJSON_AddStringToObject(meta, "uid", job->uid) ||
	    !cJSON_AddStringToObject(meta, "resourceVersion", rv) ||
	    !cJSON_AddItemToObject(doc, "status", st))
		goto out;
	st = NULL;
	rc = tfj_json_print(out, doc);
out:
	cJSON_Delete(doc);
	cJSON_Delete(st);
	return rc ? tfj_err_set(TFJ_ENOMEM, "status body") : 0;
}

/*
 * PUTs the job's new status, as of the job's resourceVersion `rv`; *new_rv
 * (size rvlen) gets the result's version. The answer (the whole object) is
 * only scanned for it, not parsed, and, when `secret` is set, for
 * status.psSecretName: the API server prunes a field its CRD does not
 * declare, and an operator whose recorded name is dropped would make
 * pods never, so that is an error saying to apply the CRD.
 */
static int write_status(struct tfj_apply *c, const struct tfj_tfjob *job, const char *rv,
			const cJSON *status, const char *secret, char *new_rv, size_t rvlen)
{
	static const char *const rv_path[] = { "metadata", "resourceVersion", NULL };
	static const char *const secret_path[] = { "status", "psSecretName", NULL };
	char path[PATH_MAX_], kept[TFJ_JOBSTATUS_PS_SECRET_MAX], *body = NULL;
	struct tfj_buf resp;
	int rc;

	new_rv[0] = '\0';
	tfj_buf_init(&resp, TFJ_TFJOB_MAX_BYTES);
	if ((rc = tfj_apipath_obj(path, sizeof(path), TFJ_TFJOB_API_PATH, job->ns, "tfjobs",
				  job->name, "status")) ||
	    (rc = status_body(&body, job, rv, status)))
		goto out;
	rc = tfj_kube_do(c->k, TFJ_KUBE_PUT, path, "application/json", body, strlen(body), &resp,
			 NULL);
	if (rc == 0) {
		struct tfj_jscan_span doc = { tfj_buf_cstr(&resp), resp.len };

		atomic_fetch_add(&c->status_writes, 1);
		if (tfj_jscan_path_string(new_rv, rvlen, doc, rv_path))
			new_rv[0] = '\0';
		if (secret && (tfj_jscan_path_string(kept, sizeof(kept), doc, secret_path) ||
			       strcmp(kept, secret)))
			rc = tfj_err_set(TFJ_ESTATE, "status.psSecretName was not stored: the "
					 "TFJob CRD predates this operator; apply its CRD "
					 "(kubeflow.org_tfjobs.yaml)");
	}
out:
	free(body);
	tfj_buf_free(&resp);
	return rc;
}

/* Job-level counters from the old and new status. */
static void count_transitions(struct tfj_apply *c, const struct tfj_tfjob *job,
			      const cJSON *status)
{
	struct tfj_job_status *nst = malloc(sizeof(*nst));
	const struct tfj_job_status *ost = &job->status;

	if (!nst)
		return;
	if (tfj_jobstatus_decode(nst, status) == 0) {
		if (!tfj_jobstatus_is(ost, TFJ_COND_CREATED) && tfj_jobstatus_is(nst, TFJ_COND_CREATED)) {
			atomic_fetch_add(&c->jobs_created, 1);
			tfj_jobmetrics_inc(c->jm, job->ns, TFJ_JM_CREATED);
		}
		if (!tfj_jobstatus_is(ost, TFJ_COND_SUCCEEDED) &&
		    tfj_jobstatus_is(nst, TFJ_COND_SUCCEEDED)) {
			atomic_fetch_add(&c->jobs_succeeded, 1);
			tfj_jobmetrics_inc(c->jm, job->ns, TFJ_JM_SUCCESSFUL);
		}
		if (!tfj_jobstatus_is(ost, TFJ_COND_FAILED) && tfj_jobstatus_is(nst, TFJ_COND_FAILED)) {
			atomic_fetch_add(&c->jobs_failed, 1);
			tfj_jobmetrics_inc(c->jm, job->ns, TFJ_JM_FAILED);
		}
	}
	free(nst);
}

/* ---- applying a plan ---- */

struct apply_ctx {
	struct tfj_apply *c;
	const struct tfj_plan *plan;
	const struct tfj_tfjob *job;
	const char *key;
	struct tfj_apply_result *res;
	int err;             /* first failure of a child write (retry with backoff) */
	int create_failed;   /* a create failed: skip the plan's remaining creates */
	int creates_seen;    /* create actions in the plan */
	int64_t now_ms;      /* when apply started (createfail.h clock) */
	char rv[128];        /* the job's resourceVersion as of this apply's last status write */
	const cJSON *status; /* and its status then (the plan's or the job's; NULL = none) */
	/* The ps Secret this apply made sure of and recorded (CREATE_SECRET):
	 * the plan's pods mount it. "" = none (the plan's own name, if any). */
	char secret[TFJ_GUARDMEMO_NAME_MAX];
};

/*
 * A child's create or delete failed (the error detail says why): logged and
 * told on the TFJob as a Warning event.
 */
static void write_failed(struct apply_ctx *a, const struct tfj_action *act, const char *kind,
			 int deleting)
{
	int pod = strcmp(kind, "pod") == 0;
	char msg[600];

	snprintf(msg, sizeof(msg), "Error %s %s %s: %.500s", deleting ? "deleting" : "creating",
		 kind, act->name, tfj_err_detail());
	tfj_log_warn(deleting ? "delete failed" : "create failed", "job", a->key, "kind", kind,
		     "name", act->name, "error", tfj_err_detail());
	tfj_apply_event(a->c, a->job, "Warning",
			deleting ? (pod ? "FailedDeletePod" : "FailedDeleteService")
				 : (pod ? "FailedCreatePod" : "FailedCreateService"),
			msg);
}

/*
 * A create failed with rc: a permanent failure (createfail.h) is counted
 * on the job's record with its reason and message, which delays the next
 * creates and, after a few, shows as the ReplicaFailure condition.
 */
static void count_create_failure(struct apply_ctx *a, int rc, const char *reason,
				 const char *msg)
{
	if (a->res->create_failure && tfj_createfail_permanent(rc))
		tfj_createfail_fail(a->res->create_failure, reason, msg, a->now_ms);
}

/* Creates work (one succeeded, or none is needed): the failure count resets. */
static void creates_work(struct apply_ctx *a)
{
	if (a->res->create_failure) {
		tfj_createfail_ok(a->res->create_failure);
		a->res->creates_work = 1;
	}
}

/*
 * The name of a child we create was taken (409). Reads the object and
 * decides with adopt.h: ours -> done; an orphan -> adopted; a stale one ->
 * wait (transient); a foreign one -> Warning event and a permanent failure.
 */
static int name_taken(struct apply_ctx *a, const struct tfj_action *act, const cJSON *body,
		      const char *kind, const char *res)
{
	struct tfj_apply *c = a->c;
	char path[PATH_MAX_], why[512], msg[600];
	const char *reason = strcmp(kind, "pod") == 0 ? "FailedCreatePod" : "FailedCreateService";
	enum tfj_adopt_verdict v;
	cJSON *obj = NULL;
	char *patch = NULL;
	int rc;

	if ((rc = tfj_apipath_obj(path, sizeof(path), TFJ_APIPATH_CORE, a->job->ns, res, act->name,
				  NULL)))
		return rc;
	rc = tfj_kube_get(c->k, &obj, path);
	if (rc == TFJ_ENOTFOUND) /* gone since: the next reconcile creates it */
		return tfj_err_set(TFJ_EUNAVAIL, "%s %s: 409 on create, then gone", kind, act->name);
	if (rc)
		return rc;
	v = tfj_adopt_decide(why, sizeof(why), obj, body, a->job);
	tfj_log_info("create found the name taken", "job", a->key, "kind", kind, "name",
		     act->name, "verdict", tfj_adopt_name(v), "why", why);
	switch (v) {
	case TFJ_ADOPT_OURS:
		break;
	case TFJ_ADOPT_ORPHAN:
		if (!(rc = tfj_adopt_patch(&patch, obj, a->job)))
			rc = tfj_kube_patch(c->k, NULL, path, TFJ_KUBE_PATCH_STRATEGIC, patch);
		if (rc == 0) {
			atomic_fetch_add(&c->adoptions, 1);
			snprintf(msg, sizeof(msg), "Adopted %s %s: %s", kind, act->name, why);
			tfj_apply_event(c, a->job, "Normal",
					strcmp(kind, "pod") == 0 ? "AdoptedPod" : "AdoptedService", msg);
		}
		break;
	case TFJ_ADOPT_STALE:
		snprintf(msg, sizeof(msg), "Waiting to create %s %s: %s", kind, act->name, why);
		tfj_apply_event(c, a->job, "Warning", reason, msg);
		rc = tfj_err_set(TFJ_EUNAVAIL, "%s", why);
		break;
	case TFJ_ADOPT_FOREIGN:
		snprintf(msg, sizeof(msg), "Error creating %s %s: %s", kind, act->name, why);
		tfj_apply_event(c, a->job, "Warning", "NameConflict", msg);
		count_create_failure(a, TFJ_EEXIST, "NameConflict", msg);
		rc = tfj_err_set(TFJ_EEXIST, "%s", why);
		break;
	}
	free(patch);
	cJSON_Delete(obj);
	return rc;
}

/*
 * Builds the child's body (plan.h: one at a time, just before its POST, so
 * a plan never holds more than one), creates it and frees it.
 */
static int do_create(struct apply_ctx *a, const struct tfj_action *act, const char *kind,
		     const char *res)
{
	struct tfj_apply *c = a->c;
	char path[PATH_MAX_];
	cJSON *body = NULL;
	int rc;

	if ((rc = tfj_apipath_coll(path, sizeof(path), TFJ_APIPATH_CORE, a->job->ns, res)))
		return rc;
	if ((rc = tfj_plan_child_body(&body, a->plan, act, a->secret[0] ? a->secret : NULL))) {
		atomic_fetch_add(&c->create_errors, 1);
		write_failed(a, act, kind, 0);
		return rc;
	}
	if ((rc = tfj_expect_create(c->exp, a->key, kind, act->name)))
		goto out;
	rc = tfj_kube_create(c->k, NULL, path, body);
	if (rc == TFJ_EEXIST) {
		/* Nothing was created, so no ADD event will come for us. */
		tfj_expect_cancel_create(c->exp, a->key, kind, act->name);
		atomic_fetch_add(&c->name_conflicts, 1);
		rc = name_taken(a, act, body, kind, res);
		if (rc == 0)
			creates_work(a);
		goto out;
	}
	if (rc) {
		char msg[TFJ_JOBSTATUS_MESSAGE_MAX];

		tfj_expect_cancel_create(c->exp, a->key, kind, act->name);
		atomic_fetch_add(&c->create_errors, 1);
		snprintf(msg, sizeof(msg), "Error creating %s %s: %.400s", kind, act->name,
			 tfj_err_detail());
		write_failed(a, act, kind, 0);
		count_create_failure(a, rc, strcmp(kind, "pod") == 0 ? "FailedCreatePod" :
				     "FailedCreateService", msg);
		goto out;
	}
	atomic_fetch_add(&c->creates, 1);
	creates_work(a);
	tfj_apply_event(c, a->job, act->ev_type, act->ev_reason, act->ev_message);
out:
	cJSON_Delete(body);
	return rc;
}

/*
 * POSTs a per-job object (the NetworkPolicy) named `name` to collection
 * `coll`; a 409 is fine when the object there is ours (adopt.h),
 * transient when an earlier job's is being collected, an error otherwise.
 * Failures get a Warning event `reason`. *created is 1 only when this POST
 * made the object (its informer ADD is then on its way).
 */
static int ensure_job_object(int *created, struct apply_ctx *a, const char *api,
			     const char *coll, const char *name, const cJSON *body,
			     const char *kind, const char *reason)
{
	struct tfj_apply *c = a->c;
	char path[PATH_MAX_], why[512], msg[600];
	enum tfj_adopt_verdict v;
	cJSON *obj = NULL;
	int rc;

	*created = 0;
	if ((rc = tfj_apipath_coll(path, sizeof(path), api, a->job->ns, coll)))
		return rc;
	rc = tfj_kube_create(c->k, NULL, path, body);
	if (rc == 0) {
		*created = 1;
		tfj_log_info("created", "job", a->key, "kind", kind, "name", name);
		return 0;
	}
	if (rc == TFJ_EEXIST) {
		if ((rc = tfj_apipath_obj(path, sizeof(path), api, a->job->ns, coll, name, NULL)))
			return rc;
		rc = tfj_kube_get(c->k, &obj, path);
		if (rc == TFJ_ENOTFOUND) /* gone since: the next reconcile creates it */
			return tfj_err_set(TFJ_EUNAVAIL, "%s %s: 409 on create, then gone", kind, name);
		if (rc)
			return rc;
		v = tfj_adopt_decide(why, sizeof(why), obj, NULL, a->job);
		cJSON_Delete(obj);
		if (v == TFJ_ADOPT_OURS)
			return 0;
		/* Never adopted: whoever made it may know its content. */
		rc = v == TFJ_ADOPT_STALE ? tfj_err_set(TFJ_EUNAVAIL, "%s", why)
					  : tfj_err_set(TFJ_EEXIST, "%s %s exists and is not this "
							"job's: %s", kind, name, why);
	}
	snprintf(msg, sizeof(msg), "Error creating %s %s: %.500s", kind, name, tfj_err_detail());
	tfj_log_warn("create failed", "job", a->key, "kind", kind, "name", name, "error",
		     tfj_err_detail());
	tfj_apply_event(c, a->job, "Warning", reason, msg);
	return rc;
}

/*
 * The job's ps certificate (tfjob/pssecret.h): a CA of its own, whose key
 * is dropped as soon as it signed the one serving certificate for the
 * job's ps hosts, so no further certificate can chain to it. The key never
 * leaves libcrypto's memory (tfj_certgen_ca_and_leaf): printing it and
 * parsing it back was a tenth of the operator's CPU in the scale run.
 */
static int make_ps_cert(struct tfj_certgen_pair *leaf, char **ca_pem, const struct apply_ctx *a)
{
	char names[TFJ_PSSECRET_MAX_SANS][TFJ_PSSECRET_SAN_MAX];
	const char *ptrs[TFJ_PSSECRET_MAX_SANS];
	int64_t now_s = tfj_clock_unix_ms() / 1000;
	size_t n, i;
	int rc;

	if ((rc = tfj_pssecret_tls_names(names, &n, a->job, a->c->cluster_domain)))
		return rc;
	for (i = 0; i < n; i++)
		ptrs[i] = names[i];
	return tfj_certgen_ca_and_leaf(leaf, ca_pem, "tfjob-ps-ca", ptrs, n, now_s,
				       TFJ_PSSECRET_CERT_LIFE_S);
}

/* A Secret request failed: logged and told on the TFJob as a Warning event. */
static void secret_failed(struct apply_ctx *a, const char *what, const char *name)
{
	char msg[600];

	snprintf(msg, sizeof(msg), "Error %s secret %s: %.500s", what, name, tfj_err_detail());
	tfj_log_warn("ps secret failed", "job", a->key, "step", what, "name", name, "error",
		     tfj_err_detail());
	tfj_apply_event(a->c, a->job, "Warning", "FailedCreateSecret", msg);
}

/*
 * Makes the job's ps Secret (its token and its certificate, made here and
 * sent once): under `name` when it is set (a recorded name: a 409 means
 * it is there, and is the job's, since the API server gave the job that
 * name; only someone who deleted it first could have made it again), or
 * with generateName, name (namelen bytes) then getting the name the API
 * server picked. The answer carries the token, so only the name is
 * scanned out of it, and both the request and the answer are wiped.
 */
static int make_secret(struct apply_ctx *a, char *name, size_t namelen)
{
	static const char *const name_path[] = { "metadata", "name", NULL };
	struct tfj_certgen_pair leaf = { 0 };
	struct tfj_pssecret_tls tls;
	struct tfj_buf resp = TFJ_BUF_INIT(1u << 20);
	uint8_t rnd[TFJ_PSSECRET_BYTES];
	char path[PATH_MAX_], *text = NULL, *ca_pem = NULL;
	int named = *name != '\0', rc;
	cJSON *body = NULL;
	ssize_t got;

	if ((rc = tfj_apipath_coll(path, sizeof(path), TFJ_APIPATH_CORE, a->job->ns, "secrets")) ||
	    (rc = make_ps_cert(&leaf, &ca_pem, a)))
		goto out;
	/* getrandom blocks only until the kernel's pool is seeded at boot. */
	got = getrandom(rnd, sizeof(rnd), 0);
	if (got != (ssize_t)sizeof(rnd)) {
		rc = tfj_err_set(TFJ_EINTERNAL, "getrandom failed for the ps secret");
		goto out;
	}
	tls.ca_pem = ca_pem;
	tls.cert_pem = leaf.cert_pem;
	tls.key_pem = leaf.key_pem;
	rc = tfj_pssecret_body(&body, a->job, a->c->operator_name, named ? name : NULL, rnd, &tls);
	explicit_bzero(rnd, sizeof(rnd));
	if (rc || (rc = tfj_json_print(&text, body)))
		goto out;
	rc = tfj_kube_do(a->c->k, TFJ_KUBE_POST, path, "application/json", text, strlen(text),
			 &resp, NULL);
	if (rc == TFJ_EEXIST && named) {
		rc = 0;
		goto out;
	}
	if (rc == 0 && !named) {
		struct tfj_jscan_span doc = { tfj_buf_cstr(&resp), resp.len };

		if (tfj_jscan_path_string(name, namelen, doc, name_path) || !*name) {
			name[0] = '\0';
			rc = tfj_err_set(TFJ_EPARSE, "the created secret's answer has no usable name");
			goto out;
		}
	}
	if (rc == 0)
		tfj_log_info("created", "job", a->key, "kind", "secret", "name", name);
out:
	if (rc)
		secret_failed(a, "creating", named ? name : "(generateName)");
	if (text)
		explicit_bzero(text, strlen(text));
	free(text);
	if (resp.ptr)
		explicit_bzero(resp.ptr, resp.len);
	tfj_buf_free(&resp);
	tfj_pssecret_body_free(body);
	tfj_certgen_pair_free(&leaf);
	free(ca_pem);
	return rc;
}

/*
 * Records the Secret's name in the job's status.psSecretName: a status
 * write as WRITE_STATUS makes (PUT of the status subresource), of the
 * status this apply last wrote or read with the name set. Its
 * resourceVersion makes it land only on the status it was made from, never
 * on a newer incarnation of the job (same name, another uid, whose Secret
 * this is not): a 409 is a status conflict, and the caller replans from a
 * fresh read; the memo keeps the name for that retry.
 */
static int record_secret(struct apply_ctx *a, const char *name)
{
	struct tfj_apply *c = a->c;
	cJSON *st = a->status && cJSON_IsObject(a->status) ? cJSON_Duplicate(a->status, 1)
							  : cJSON_CreateObject();
	char rv[128];
	int rc;

	if (!st || tfj_json_set_string(st, "psSecretName", name)) {
		cJSON_Delete(st);
		return tfj_err_set(TFJ_ENOMEM, "status with the secret's name");
	}
	rc = write_status(c, a->job, a->rv, st, name, rv, sizeof(rv));
	cJSON_Delete(st);
	if (rc == 0) {
		tfj_expect_status(c->exp, a->key, rv);
		snprintf(a->rv, sizeof(a->rv), "%s", rv);
		a->status = NULL; /* the plan's status is not the job's any more */
		tfj_log_info("ps secret recorded", "job", a->key, "name", name);
	} else if (rc == TFJ_ECONFLICT) {
		atomic_fetch_add(&c->status_conflicts, 1);
		a->res->status_conflict = 1;
	} else {
		secret_failed(a, "recording", name);
	}
	return rc;
}

/*
 * CREATE_SECRET (plan.h): the job's ps Secret, before its first pod (the
 * pods mount it, so they wait for it). With the plan's recorded name it
 * is posted under that name: the memo's recheck, which makes a deleted
 * Secret again (guardmemo.h). Without one, a name this process made for
 * the job and could not record yet (the memo has it) is recorded now;
 * otherwise a new Secret is made and its name recorded. The memo notes
 * the name as soon as the Secret exists, so a failed record is retried
 * with the same Secret. A recorded new name is this plan's pods' to mount
 * (a->secret). The operator never reads a Secret: nothing here needs to.
 */
static int ensure_job_secret(struct apply_ctx *a)
{
	char name[TFJ_GUARDMEMO_NAME_MAX];
	int fresh, rc;

	fresh = tfj_guardmemo_secret(a->c->guards, name, sizeof(name), a->job->uid, a->now_ms);
	if (a->plan->ps_secret[0]) {
		if (fresh && strcmp(name, a->plan->ps_secret) == 0)
			return 0;
		snprintf(name, sizeof(name), "%s", a->plan->ps_secret);
		if ((rc = make_secret(a, name, sizeof(name))))
			return rc;
		tfj_guardmemo_note(a->c->guards, a->job->uid, name, a->now_ms);
		return 0;
	}
	if (!name[0]) {
		if ((rc = make_secret(a, name, sizeof(name))))
			return rc;
		tfj_guardmemo_note(a->c->guards, a->job->uid, name, a->now_ms);
	}
	/* Recorded first: a restart then finds the name the pods mount. */
	if ((rc = record_secret(a, name)))
		return rc;
	snprintf(a->secret, sizeof(a->secret), "%s", name);
	return 0;
}

/*
 * CREATE_NETPOL or UPDATE_NETPOL (plan.h). A failure holds nothing back:
 * it is a Warning event and the job's record (createfail.h), which the next
 * plan shows as NetworkPolicyFailure; the key's backoff paces the retries.
 */
static int do_netpol(struct apply_ctx *a, const struct tfj_action *act)
{
	struct tfj_apply *c = a->c;
	int update = act->kind == TFJ_ACT_UPDATE_NETPOL, created = 0, rc;
	const char *reason = update ? "FailedUpdateNetworkPolicy" : "FailedCreateNetworkPolicy";
	char path[PATH_MAX_], msg[TFJ_JOBSTATUS_MESSAGE_MAX] = "", *patch = NULL;
	cJSON *body = NULL, *doc = NULL;

	if ((rc = tfj_plan_child_body(&body, a->plan, act, NULL)))
		goto out;
	if (update) {
		/* A merge patch replaces the spec's arrays whole: the spec sent is
		 * the spec stored, whatever the old one held. */
		if (!(doc = cJSON_CreateObject()) ||
		    !cJSON_AddItemReferenceToObject(doc, "spec",
						    cJSON_GetObjectItemCaseSensitive(body, "spec")) ||
		    tfj_json_print(&patch, doc)) {
			rc = tfj_err_set(TFJ_ENOMEM, "NetworkPolicy patch");
			goto out;
		}
		if (!(rc = tfj_apipath_obj(path, sizeof(path), TFJ_NETPOL_API_PATH, a->job->ns,
					   "networkpolicies", act->name, NULL)))
			rc = tfj_kube_patch(c->k, NULL, path, TFJ_KUBE_PATCH_MERGE, patch);
		/* Gone since the plan: the cache will show it, and the next plan
		 * creates it again; nothing failed. */
		if (rc == TFJ_ENOTFOUND || rc == TFJ_ECONFLICT) {
			rc = 0;
			goto out_quiet;
		}
		if (rc) {
			snprintf(msg, sizeof(msg), "Error updating networkpolicy %s: %.400s",
				 act->name, tfj_err_detail());
			tfj_log_warn("update failed", "job", a->key, "kind", "networkpolicy",
				     "name", act->name, "error", tfj_err_detail());
			tfj_apply_event(c, a->job, "Warning", reason, msg);
		}
	} else {
		if ((rc = tfj_expect_create(c->exp, a->key, "networkpolicy", act->name)))
			goto out;
		rc = ensure_job_object(&created, a, TFJ_NETPOL_API_PATH, "networkpolicies",
				       act->name, body, "networkpolicy", reason);
		/* No ADD event comes for an object this POST did not make. */
		if (!created)
			tfj_expect_cancel_create(c->exp, a->key, "networkpolicy", act->name);
		if (rc)
			snprintf(msg, sizeof(msg), "Error creating networkpolicy %s: %.400s",
				 act->name, tfj_err_detail());
	}
out:
	if (rc && !msg[0])
		snprintf(msg, sizeof(msg), "NetworkPolicy %s: %.400s", act->name, tfj_err_detail());
	if (a->res->create_failure)
		tfj_createfail_netpol(a->res->create_failure, rc ? reason : NULL, rc ? msg : NULL);
	if (!rc)
		tfj_apply_event(c, a->job, act->ev_type, act->ev_reason, act->ev_message);
out_quiet:
	free(patch);
	cJSON_Delete(doc);
	cJSON_Delete(body);
	return rc;
}

static int do_delete(struct apply_ctx *a, const struct tfj_action *act, const char *kind,
		     const char *res)
{
	struct tfj_apply *c = a->c;
	char path[PATH_MAX_];
	int rc;

	if ((rc = tfj_apipath_obj(path, sizeof(path), TFJ_APIPATH_CORE, a->job->ns, res, act->name,
				  NULL)))
		return rc;
	if ((rc = tfj_expect_delete(c->exp, a->key, kind, act->name)))
		return rc;
	rc = tfj_kube_delete_grace(c->k, path, act->uid[0] ? act->uid : NULL, "Background",
				   act->force ? 0 : -1);
	if (rc == TFJ_ENOTFOUND || rc == TFJ_ECONFLICT) {
		/* Already gone, or a newer incarnation we must not touch. */
		tfj_expect_cancel_delete(c->exp, a->key, kind, act->name);
		return 0;
	}
	if (rc) {
		tfj_expect_cancel_delete(c->exp, a->key, kind, act->name);
		atomic_fetch_add(&c->delete_errors, 1);
		write_failed(a, act, kind, 1);
		return rc;
	}
	atomic_fetch_add(&c->deletes, 1);
	if (act->force)
		atomic_fetch_add(&c->pods_force_deleted, 1);
	if (strcmp(kind, "pod") == 0 && act->reason == TFJ_DEL_RESTART) {
		atomic_fetch_add(&c->jobs_restarted, 1);
		tfj_jobmetrics_inc(c->jm, a->job->ns, TFJ_JM_RESTARTED);
		tfj_jobmetrics_restart(c->jm, act->exit_code);
	}
	tfj_apply_event(c, a->job, act->ev_type, act->ev_reason, act->ev_message);
	return 0;
}

/*
 * RELEASE_POD (plan.h): Kueue's finalizer off a settled pod being deleted.
 * The patch tests the uid and the entry, so it never touches another pod
 * of that name or another finalizer; a failed test (the list changed) or
 * a pod already gone is left to the next plan.
 */
static int do_release(struct apply_ctx *a, const struct tfj_action *act)
{
	char path[PATH_MAX_], patch[512];
	int rc, n;

	/* The uid goes into the JSON text: only the characters a uid has. */
	if (!act->uid[0] || strspn(act->uid, "0123456789abcdefABCDEF-") != strlen(act->uid))
		return tfj_err_set(TFJ_EINVAL, "release pod %s: unexpected uid", act->name);
	if ((rc = tfj_apipath_obj(path, sizeof(path), TFJ_APIPATH_CORE, a->job->ns, "pods",
				  act->name, NULL)))
		return rc;
	n = snprintf(patch, sizeof(patch),
		     "[{\"op\":\"test\",\"path\":\"/metadata/uid\",\"value\":\"%s\"},"
		     "{\"op\":\"test\",\"path\":\"/metadata/finalizers/%d\",\"value\":\"%s\"},"
		     "{\"op\":\"remove\",\"path\":\"/metadata/finalizers/%d\"}]",
		     act->uid, act->index, TFJ_KUEUE_FINALIZER, act->index);
	if (n < 0 || (size_t)n >= sizeof(patch))
		return tfj_err_set(TFJ_EINVAL, "release pod %s: patch too long", act->name);
	rc = tfj_kube_patch(a->c->k, NULL, path, TFJ_KUBE_PATCH_JSON, patch);
	if (rc == TFJ_ENOTFOUND || rc == TFJ_ECONFLICT || rc == TFJ_EINVAL)
		return 0;
	if (rc)
		tfj_log_warn("releasing pod from Kueue's finalizer failed", "job", a->key,
			     "pod", act->name, "error", tfj_err_detail());
	return rc;
}

static int apply(struct apply_ctx *a, const struct tfj_plan *plan)
{
	struct tfj_apply *c = a->c;
	char path[PATH_MAX_], rv[128];
	int rc;

	for (size_t i = 0; i < plan->n; i++) {
		const struct tfj_action *act = &plan->actions[i];
		rc = 0;
		switch (act->kind) {
		case TFJ_ACT_WRITE_STATUS:
			rc = write_status(c, a->job, a->rv, act->body, NULL, rv, sizeof(rv));
			if (rc == TFJ_ECONFLICT) {
				atomic_fetch_add(&c->status_conflicts, 1);
				a->res->status_conflict = 1;
				return rc;
			}
			if (rc) {
				tfj_log_warn("status write failed", "job", a->key,
					     "error", tfj_err_detail());
				return rc; /* plan.h: stop here, retry from fresh state */
			}
			tfj_expect_status(c->exp, a->key, rv);
			snprintf(a->rv, sizeof(a->rv), "%s", rv);
			a->status = act->body;
			count_transitions(c, a->job, act->body);
			break;
		case TFJ_ACT_EVENT:
			if (act->ev_once) {
				struct tfj_events_ref ref = { a->job->ns, a->job->name, a->job->uid };

				tfj_events_post_once(c->events, &ref, act->ev_type, act->ev_reason,
						     act->ev_message);
				break;
			}
			tfj_apply_event(c, a->job, act->ev_type, act->ev_reason, act->ev_message);
			break;
		case TFJ_ACT_DELETE_POD:
			rc = do_delete(a, act, "pod", "pods");
			break;
		case TFJ_ACT_DELETE_SERVICE:
			rc = do_delete(a, act, "service", "services");
			break;
		case TFJ_ACT_CREATE_NETPOL:
		case TFJ_ACT_UPDATE_NETPOL:
			rc = do_netpol(a, act);
			break;
		case TFJ_ACT_CREATE_SECRET:
			/* The pods mount it: none is created without it. */
			if ((rc = ensure_job_secret(a)))
				a->create_failed = 1;
			/* As a failed status write: replan from a fresh read. */
			if (rc == TFJ_ECONFLICT && a->res->status_conflict)
				return rc;
			break;
		case TFJ_ACT_DELETE_PODGROUP:
		case TFJ_ACT_CREATE_PODGROUP:
		case TFJ_ACT_UPDATE_PODGROUP:
			/* No pod of a gang without its group. */
			rc = tfj_gang_apply(&a->create_failed, c, a->job, a->key, act,
					    a->res->create_failure, a->now_ms);
			break;
		case TFJ_ACT_PUBLISH_CA:
			/* The pods mount the CA: none is created without it. */
			if (c->capub && (rc = tfj_capublish_ensure(c->capub, a->job->ns))) {
				tfj_log_warn("report CA not published; pods wait", "job", a->key,
					     "error", tfj_err_detail());
				a->create_failed = 1;
			}
			break;
		case TFJ_ACT_CREATE_SERVICE:
		case TFJ_ACT_CREATE_POD:
			/* When one create fails (quota, admission, a namespace being
			 * deleted) the rest of the batch almost always fails the same
			 * way: stop creating and let the key's backoff pace retries,
			 * instead of one request and one event per child. */
			a->creates_seen++;
			if (a->create_failed)
				break;
			if (a->res->create_failure) {
				/* Permanent failures before (createfail.h): not before the
				 * backoff has passed; the REQUEUE brings the key back. */
				int64_t wait = tfj_createfail_wait_ms(a->res->create_failure,
								      a->now_ms);

				if (wait > 0) {
					a->create_failed = 1;
					a->res->creates_delayed = 1;
					if (a->res->requeue_ms == 0 ||
					    (uint64_t)wait < a->res->requeue_ms)
						a->res->requeue_ms = (uint64_t)wait;
					break;
				}
			}
			if (act->kind == TFJ_ACT_CREATE_POD)
				rc = do_create(a, act, "pod", "pods");
			else
				rc = do_create(a, act, "service", "services");
			if (rc)
				a->create_failed = 1;
			break;
		case TFJ_ACT_DELETE_JOB:
			if ((rc = tfj_apipath_obj(path, sizeof(path), TFJ_TFJOB_API_PATH, a->job->ns, "tfjobs",
					   a->job->name, NULL)))
				break;
			rc = tfj_kube_delete(c->k, path, a->job->uid, "Background");
			/* Counted when this call deleted it, as Kubeflow counts its own deletes. */
			if (rc == 0)
				tfj_jobmetrics_inc(c->jm, a->job->ns, TFJ_JM_DELETED);
			if (rc == TFJ_ENOTFOUND || rc == TFJ_ECONFLICT)
				rc = 0;
			if (rc == 0) {
				tfj_log_info("TFJob deleted after its TTL", "job", a->key);
				tfj_apply_event(c, a->job, act->ev_type, act->ev_reason, act->ev_message);
			}
			break;
		case TFJ_ACT_RELEASE_POD:
			rc = do_release(a, act);
			break;
		case TFJ_ACT_REQUEUE:
			if (act->after_ms > 0 && (a->res->requeue_ms == 0 ||
						  (uint64_t)act->after_ms < a->res->requeue_ms))
				a->res->requeue_ms = (uint64_t)act->after_ms;
			break;
		}
		/* Keep going after a failed child write: the others are independent,
		 * and the key is retried with backoff afterwards. */
		if (rc && !a->err)
			a->err = rc;
	}
	/* Nothing (left) to create: whatever failed before no longer matters. */
	if (!a->creates_seen)
		creates_work(a);
	return a->err;
}

int tfj_apply_plan(struct tfj_apply *ap, const struct tfj_tfjob *job, const char *key,
		   const struct tfj_plan *plan, struct tfj_apply_result *res)
{
	struct apply_ctx a;
	struct tfj_createfail *cf = res->create_failure;

	memset(res, 0, sizeof(*res));
	res->create_failure = cf;
	memset(&a, 0, sizeof(a));
	snprintf(a.rv, sizeof(a.rv), "%s", job->resource_version);
	a.status = job->status_json;
	a.now_ms = tfj_clock_unix_ms();
	a.c = ap;
	a.plan = plan;
	a.job = job;
	a.key = key;
	a.res = res;
	return apply(&a, plan);
}

#define LD(x) ((unsigned long long)atomic_load(&(x)))

int tfj_apply_metrics(struct tfj_apply *c, struct tfj_buf *out)
{
	int rc = 0;

	rc |= tfj_buf_printf(out,
		"# HELP tfjob_operator_jobs_created_total TFJobs that got their Created condition.\n"
		"# TYPE tfjob_operator_jobs_created_total counter\n"
		"tfjob_operator_jobs_created_total %llu\n"
		"# HELP tfjob_operator_jobs_succeeded_total TFJobs that succeeded.\n"
		"# TYPE tfjob_operator_jobs_succeeded_total counter\n"
		"tfjob_operator_jobs_succeeded_total %llu\n"
		"# HELP tfjob_operator_jobs_failed_total TFJobs that failed.\n"
		"# TYPE tfjob_operator_jobs_failed_total counter\n"
		"tfjob_operator_jobs_failed_total %llu\n"
		"# HELP tfjob_operator_jobs_restarted_total Replica pods deleted to be restarted.\n"
		"# TYPE tfjob_operator_jobs_restarted_total counter\n"
		"tfjob_operator_jobs_restarted_total %llu\n",
		LD(c->jobs_created), LD(c->jobs_succeeded), LD(c->jobs_failed),
		LD(c->jobs_restarted));
	rc |= tfj_buf_printf(out,
		"# HELP tfjob_operator_child_writes_total Pod/service creates and deletes.\n"
		"# TYPE tfjob_operator_child_writes_total counter\n"
		"tfjob_operator_child_writes_total{op=\"create\",result=\"success\"} %llu\n"
		"tfjob_operator_child_writes_total{op=\"create\",result=\"error\"} %llu\n"
		"tfjob_operator_child_writes_total{op=\"delete\",result=\"success\"} %llu\n"
		"tfjob_operator_child_writes_total{op=\"delete\",result=\"error\"} %llu\n"
		"# HELP tfjob_operator_status_writes_total Status writes and conflicts.\n"
		"# TYPE tfjob_operator_status_writes_total counter\n"
		"tfjob_operator_status_writes_total{result=\"success\"} %llu\n"
		"tfjob_operator_status_writes_total{result=\"conflict\"} %llu\n"
		"# HELP tfjob_operator_name_conflicts_total Creates that found the name taken "
		"(409), and the orphans among them adopted.\n"
		"# TYPE tfjob_operator_name_conflicts_total counter\n"
		"tfjob_operator_name_conflicts_total{result=\"conflict\"} %llu\n"
		"tfjob_operator_name_conflicts_total{result=\"adopted\"} %llu\n"
		"# HELP tfjob_operator_pods_force_deleted_total Terminating pods force-deleted "
		"because their node was presumed lost (--lost-pod-timeout).\n"
		"# TYPE tfjob_operator_pods_force_deleted_total counter\n"
		"tfjob_operator_pods_force_deleted_total %llu\n",
		LD(c->creates), LD(c->create_errors), LD(c->deletes), LD(c->delete_errors),
		LD(c->status_writes), LD(c->status_conflicts), LD(c->name_conflicts),
		LD(c->adoptions), LD(c->pods_force_deleted));
	rc |= tfj_jobmetrics_render(c->jm, out);
	rc |= tfj_events_metrics(c->events, out);
	rc |= tfj_buf_printf(out,
		"# HELP tfjob_operator_job_guards_known Running TFJobs whose ps Secret "
		"this process noted (a restart does not post it).\n"
		"# TYPE tfjob_operator_job_guards_known gauge\n"
		"tfjob_operator_job_guards_known %zu\n", tfj_guardmemo_size(c->guards));
	return rc ? TFJ_ETOOBIG : 0;
}
