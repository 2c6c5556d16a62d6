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

#include <tfj/err.h>
#include <tfj/json.h>
#include <tfj/log.h>

#include "kube/apipath.h"
#include "kube/objmeta.h"
#include "tfjob/jobstatus.h"

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

/* PUTs job->doc with .status replaced; *new_rv (size RV) gets the result's version. */
static int write_status(struct tfj_apply *c, const struct tfj_tfjob *job,
			const cJSON *status, char *new_rv, size_t rvlen)
{
	char path[PATH_MAX_];
	cJSON *doc = NULL, *st = NULL, *res = NULL;
	const char *rv;
	int rc;

	new_rv[0] = '\0';
	if ((rc = tfj_apipath_obj(path, sizeof(path), TFJ_TFJOB_API_PATH, job->ns, "tfjobs",
				  job->name, "status")))
		return rc;
	doc = cJSON_Duplicate(job->doc, 1);
	st = cJSON_Duplicate(status, 1);
	if (!doc || !st) {
		rc = tfj_err_set(TFJ_ENOMEM, "status copy");
		goto out;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(doc, "status");
	if (!cJSON_AddItemToObject(doc, "status", st)) {
		rc = tfj_err_set(TFJ_ENOMEM, "status copy");
		goto out;
	}
	st = NULL;
	rc = tfj_kube_replace(c->k, &res, path, doc);
	if (rc == 0) {
		atomic_fetch_add(&c->status_writes, 1);
		rv = tfj_objmeta_str(res, "resourceVersion");
		if (rv)
			snprintf(new_rv, rvlen, "%s", rv);
	}
out:
	cJSON_Delete(doc);
	cJSON_Delete(st);
	cJSON_Delete(res);
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
		if (!tfj_jobstatus_is(ost, TFJ_COND_CREATED) && tfj_jobstatus_is(nst, TFJ_COND_CREATED))
			atomic_fetch_add(&c->jobs_created, 1);
		if (!tfj_jobstatus_is(ost, TFJ_COND_SUCCEEDED) &&
		    tfj_jobstatus_is(nst, TFJ_COND_SUCCEEDED))
			atomic_fetch_add(&c->jobs_succeeded, 1);
		if (!tfj_jobstatus_is(ost, TFJ_COND_FAILED) && tfj_jobstatus_is(nst, TFJ_COND_FAILED))
			atomic_fetch_add(&c->jobs_failed, 1);
	}
	free(nst);
}

/* ---- applying a plan ---- */

struct apply_ctx {
	struct tfj_apply *c;
	const struct tfj_tfjob *job;
	const char *key;
	struct tfj_apply_result *res;
	int err;             /* first failure of a child write (retry with backoff) */
	int create_failed;   /* a create failed: skip the plan's remaining creates */
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

static int do_create(struct apply_ctx *a, const struct tfj_action *act, const char *kind,
		     const char *res)
{
	struct tfj_apply *c = a->c;
	char path[PATH_MAX_];
	int rc;

	if ((rc = tfj_apipath_coll(path, sizeof(path), TFJ_APIPATH_CORE, a->job->ns, res)))
		return rc;
	if ((rc = tfj_expect_create(c->exp, a->key, kind, act->name)))
		return rc;
	rc = tfj_kube_create(c->k, NULL, path, act->body);
	if (rc == TFJ_EEXIST) {
		/* Nothing was created, so no ADD event will come for us. */
		tfj_expect_cancel_create(c->exp, a->key, kind, act->name);
		return 0;
	}
	if (rc) {
		tfj_expect_cancel_create(c->exp, a->key, kind, act->name);
		atomic_fetch_add(&c->create_errors, 1);
		write_failed(a, act, kind, 0);
		return rc;
	}
	atomic_fetch_add(&c->creates, 1);
	tfj_apply_event(c, a->job, act->ev_type, act->ev_reason, act->ev_message);
	return 0;
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
	rc = tfj_kube_delete(c->k, path, act->uid[0] ? act->uid : NULL, "Background");
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
	if (strcmp(kind, "pod") == 0 && act->reason == TFJ_DEL_RESTART)
		atomic_fetch_add(&c->jobs_restarted, 1);
	tfj_apply_event(c, a->job, act->ev_type, act->ev_reason, act->ev_message);
	return 0;
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
			rc = write_status(c, a->job, act->body, rv, sizeof(rv));
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
			count_transitions(c, a->job, act->body);
			break;
		case TFJ_ACT_EVENT:
			tfj_apply_event(c, a->job, act->ev_type, act->ev_reason, act->ev_message);
			break;
		case TFJ_ACT_DELETE_POD:
			rc = do_delete(a, act, "pod", "pods");
			break;
		case TFJ_ACT_DELETE_SERVICE:
			rc = do_delete(a, act, "service", "services");
			break;
		case TFJ_ACT_CREATE_SERVICE:
		case TFJ_ACT_CREATE_POD:
			/* When one create fails (quota, admission, a namespace being
			 * deleted) the rest of the batch almost always fails the same
			 * way: stop creating and let the key's backoff pace retries,
			 * instead of one request and one event per child. */
			if (a->create_failed)
				break;
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
			if (rc == TFJ_ENOTFOUND || rc == TFJ_ECONFLICT)
				rc = 0;
			if (rc == 0) {
				tfj_log_info("TFJob deleted after its TTL", "job", a->key);
				tfj_apply_event(c, a->job, act->ev_type, act->ev_reason, act->ev_message);
			}
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
	return a->err;
}

int tfj_apply_plan(struct tfj_apply *ap, const struct tfj_tfjob *job, const char *key,
		   const struct tfj_plan *plan, struct tfj_apply_result *res)
{
	struct apply_ctx a;

	memset(res, 0, sizeof(*res));
	memset(&a, 0, sizeof(a));
	a.c = ap;
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
		"tfjob_operator_status_writes_total{result=\"conflict\"} %llu\n",
		LD(c->creates), LD(c->create_errors), LD(c->deletes), LD(c->delete_errors),
		LD(c->status_writes), LD(c->status_conflicts));
	rc |= tfj_events_metrics(c->events, out);
	return rc ? TFJ_ETOOBIG : 0;
}
