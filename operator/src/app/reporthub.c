/*
 * reporthub.c - authenticating and applying reports (see reporthub.h).
 */
#include "app/reporthub.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tfj/clock.h>
#include <tfj/err.h>
#include <tfj/json.h>
#include <tfj/log.h>

#include "app/jobpeek.h"
#include "kube/objmeta.h"
#include "tfjob/jobstatus.h"
#include "tfjob/stoprule.h"

#define PROGRESS_DELAY_MS 1000

enum tfj_report_code tfj_reporthub_auth(void *ud, const struct tfj_reportmsg *m,
					const char *token, char *subject, size_t subject_len,
					const char **reason)
{
	struct tfj_reporthub *h = ud;
	struct tfj_tokenreview tr;
	enum tfj_authz az;
	cJSON *pod;

	/*
	 * A standby replica (leader election) has no caches to check against;
	 * the agent retries later and may reach the leader.
	 */
	if (!tfj_controller_ready(h->ctl)) {
		*reason = "unavailable";
		return TFJ_REPORT_UNAVAILABLE;
	}
	/* The cached pod first: a token claiming a pod we do not know costs no TokenReview. */
	pod = tfj_controller_get_pod(h->ctl, m->ref.ns, m->ref.pod);
	if (tfj_tokenreviewer_check(h->tr, &tr, &az, token, pod, &m->ref, tfj_clock_unix_ms())) {
		/* Once a minute at most: a missing RBAC rule fails every call. */
		static _Atomic int64_t last_warn;
		int64_t now = tfj_clock_unix_ms(), prev = atomic_load(&last_warn);

		cJSON_Delete(pod);
		if (now - prev >= 60000 && atomic_compare_exchange_strong(&last_warn, &prev, now))
			tfj_log_warn("report: TokenReview failed (is tokenreviews create allowed?)",
				     "detail", tfj_err_detail());
		*reason = "unavailable";
		return TFJ_REPORT_UNAVAILABLE;
	}
	if (az == TFJ_AUTHZ_OK)
		az = tr.authenticated ? tfj_tokenreview_authorize(&tr, pod, &m->ref)
				      : TFJ_AUTHZ_INVALID_TOKEN;
	cJSON_Delete(pod);
	if (az != TFJ_AUTHZ_OK) {
		*reason = tfj_tokenreview_reason(az);
		if (az == TFJ_AUTHZ_REVIEW_LIMITED)
			return TFJ_REPORT_UNAVAILABLE;
		return az == TFJ_AUTHZ_INVALID_TOKEN || az == TFJ_AUTHZ_NO_TOKEN
			       ? TFJ_REPORT_UNAUTHENTICATED : TFJ_REPORT_PERMISSION_DENIED;
	}
	snprintf(subject, subject_len, "%s", tr.pod_uid);
	return TFJ_REPORT_OK;
}

void tfj_reporthub_wire(struct tfj_report_opts *o, struct tfj_reporthub *hub)
{
	o->auth = tfj_reporthub_auth;
	o->deliver = tfj_reporthub_deliver;
	o->advise = tfj_reporthub_advise;
	o->ack = tfj_reporthub_ack;
	o->known = tfj_reporthub_known;
	o->ud = hub;
}

int tfj_reporthub_known(void *ud, const char *token)
{
	struct tfj_reporthub *h = ud;

	return tfj_tokenreviewer_known(h->tr, token, tfj_clock_unix_ms());
}

/* 1 when the pod the report names is cached with the uid its token had. */
static int pod_cached(struct tfj_reporthub *h, const struct tfj_reportmsg *m,
		      const char *pod_uid)
{
	cJSON *pod = tfj_controller_get_pod(h->ctl, m->ref.ns, m->ref.pod);
	const char *uid = pod ? tfj_objmeta_str(pod, "uid") : NULL;
	int same = uid && !strcmp(uid, pod_uid);

	cJSON_Delete(pod);
	return same;
}

enum tfj_report_code tfj_reporthub_deliver(void *ud, const struct tfj_reportmsg *m,
					   const char *subject, const char **reason)
{
	struct tfj_reporthub *h = ud;
	struct tfj_job_status st;
	char key[160], uid[sizeof(m->ref.job_uid)], *text = NULL;
	size_t len = 0;
	int finished, created = 0;

	/*
	 * The job's text, not a tree of it: its templates can be hundreds of
	 * KB, and only the uid and the status are read (jobpeek.h). A uid too
	 * long for the buffer cannot be the one the report names.
	 */
	if (tfj_controller_get_job_text(&text, &len, h->ctl, m->ref.ns, m->ref.job) ||
	    tfj_jobpeek_uid(uid, sizeof(uid), text, len) || strcmp(uid, m->ref.job_uid)) {
		free(text);
		*reason = "job_unknown";
		return TFJ_REPORT_NOT_FOUND;
	}
	/*
	 * An unreadable status is treated as unfinished: the planner decides.
	 * A succeeded job still hears its lingering replicas: their heartbeats
	 * are answered with stop (tfj_reporthub_advise), and the planner sees
	 * which pods have an agent to stop them (tfjob/planprog.h).
	 */
	finished = tfj_jobpeek_status(&st, text, len) == 0 && tfj_jobstatus_finished(&st) &&
		   !tfj_jobstatus_is(&st, TFJ_COND_SUCCEEDED);
	free(text);
	if (finished) {
		*reason = "job_finished";
		return TFJ_REPORT_FAILED_PRECONDITION;
	}
	if (tfj_progress_record(&created, h->prog, m, subject, tfj_clock_unix_ms())) {
		*reason = "unavailable";
		return TFJ_REPORT_UNAVAILABLE;
	}
	/*
	 * The pod was cached when auth looked, but its deletion may have come
	 * since, and forgotten its record before this one was stored (the
	 * controller's pod DELETE, progress.h): a record nobody would forget
	 * again. Looked at only for a pod's first record, so once per pod.
	 */
	if (created && !pod_cached(h, m, subject))
		tfj_progress_forget_pod(h->prog, m->ref.job_uid, subject);
	snprintf(key, sizeof(key), "%s/%s", m->ref.ns, m->ref.job);
	if (m->kind == TFJ_RM_EXIT)
		tfj_controller_enqueue(h->ctl, key, 0);
	else if (m->kind == TFJ_RM_HEARTBEAT)
		tfj_controller_enqueue(h->ctl, key, PROGRESS_DELAY_MS);
	return TFJ_REPORT_OK;
}

void tfj_reporthub_advise(void *ud, const struct tfj_reportmsg *m, int *stop, char *reason,
			  size_t reason_len)
{
	struct tfj_reporthub *h = ud;
	struct tfj_job_status st;
	struct tfj_tfjob job;
	char *text = NULL;
	size_t len = 0;

	*stop = 0;
	/*
	 * Most heartbeats come from running jobs: the status alone says no.
	 * Only a succeeded job is decoded, for stoprule.h's replica types;
	 * from text, so a spec over the size the operator serves is never
	 * parsed (tfjob.h). deliver checked the uid a moment ago; a job
	 * replaced since gets no stop.
	 */
	if (tfj_controller_get_job_text(&text, &len, h->ctl, m->ref.ns, m->ref.job) ||
	    tfj_jobpeek_status(&st, text, len) || !tfj_jobstatus_is(&st, TFJ_COND_SUCCEEDED) ||
	    tfj_tfjob_decode(&job, text, len)) {
		free(text);
		return;
	}
	free(text);
	if (!strcmp(job.uid, m->ref.job_uid) && tfj_stoprule_stop_now(&job, m->ref.type)) {
		*stop = 1;
		snprintf(reason, reason_len, "the job has succeeded");
	}
	tfj_tfjob_free(&job);
}

void tfj_reporthub_ack(void *ud, const struct tfj_reportmsg *m, const char *subject,
		       struct tfj_report_ack *out)
{
	struct tfj_reporthub *h = ud;
	struct tfj_progress_ack a;

	tfj_progress_ack(h->prog, &a, m->ref.job_uid, subject);
	out->progress_ms = a.progress_ms;
	out->exit = a.exit;
}
