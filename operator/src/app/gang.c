/*
 * gang.c - the planner's PodGroup actions carried out (gang.h).
 */
#include "app/gang.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/json.h>
#include <tfj/log.h>

#include "kube/apipath.h"
#include "kube/expect.h"
#include "kube/kube.h"

#define PATH_LEN 1024
#define MSG_LEN 600
#define KIND "podgroup"

static void event(struct tfj_apply *ap, const struct tfj_tfjob *job, const char *type,
		  const char *reason, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void event(struct tfj_apply *ap, const struct tfj_tfjob *job, const char *type,
		  const char *reason, const char *fmt, ...)
{
	char msg[MSG_LEN];
	va_list va;

	va_start(va, fmt);
	vsnprintf(msg, sizeof(msg), fmt, va);
	va_end(va);
	tfj_apply_event(ap, job, type, reason, msg);
}

static int create(int *hold, struct tfj_apply *ap, const struct tfj_tfjob *job, const char *key,
		  const struct tfj_action *act, struct tfj_createfail *cf, int64_t now_ms,
		  const char *api)
{
	char coll[PATH_LEN];
	int rc;

	if ((rc = tfj_apipath_coll(coll, sizeof(coll), api, job->ns, "podgroups")) ||
	    (rc = tfj_expect_create(ap->exp, key, KIND, act->name)))
		goto held;
	rc = tfj_kube_create(ap->k, NULL, coll, act->body);
	if (rc == 0) {
		if (cf)
			tfj_createfail_podgroup(cf, 0, now_ms);
		tfj_apply_event(ap, job, act->ev_type, act->ev_reason, act->ev_message);
		return 0;
	}
	/* No ADD event comes for an object this POST did not make. */
	tfj_expect_cancel_create(ap->exp, key, KIND, act->name);
	if (rc == TFJ_EEXIST)
		return 0; /* the cache shows whose it is; the next plan acts on that */
	if (rc == TFJ_ENOTFOUND) {
		/* The collection itself is unknown: the CRD is not installed. */
		if (cf)
			tfj_createfail_podgroup(cf, 1, now_ms);
		event(ap, job, "Warning", TFJ_PLAN_GANG_REASON_UNAVAILABLE,
		      "gang scheduling (%s) needs the PodGroup API %s, which this cluster does not "
		      "serve: install its PodGroup CRD or turn --gang-scheduler-name off; no pods "
		      "are created until then", tfj_podgroup_api_name(ap->gang->api),
		      api + strlen("/apis/"));
		tfj_log_warn("PodGroup API not served", "job", key, "api", api);
		*hold = 1;
		return 0;
	}
	event(ap, job, "Warning", "FailedCreatePodGroup", "Error creating: %.500s",
	      tfj_err_detail());
held:
	*hold = 1;
	return rc;
}

/* JSON patch: the same object (uid), the spec replaced whole. */
static int update(struct tfj_apply *ap, const struct tfj_tfjob *job,
		  const struct tfj_action *act, const char *path)
{
	cJSON *ops = cJSON_CreateArray(), *t, *r;
	char *text = NULL;
	int rc;

	if (!ops || !(t = cJSON_CreateObject()) || !cJSON_AddItemToArray(ops, t) ||
	    !cJSON_AddStringToObject(t, "op", "test") ||
	    !cJSON_AddStringToObject(t, "path", "/metadata/uid") ||
	    !cJSON_AddStringToObject(t, "value", act->uid) ||
	    !(r = cJSON_CreateObject()) || !cJSON_AddItemToArray(ops, r) ||
	    !cJSON_AddStringToObject(r, "op", "replace") ||
	    !cJSON_AddStringToObject(r, "path", "/spec") ||
	    !cJSON_AddItemReferenceToObject(r, "value", act->body) || tfj_json_print(&text, ops)) {
		rc = tfj_err_set(TFJ_ENOMEM, "PodGroup patch");
		goto out;
	}
	rc = tfj_kube_patch(ap->k, NULL, path, TFJ_KUBE_PATCH_JSON, text);
	/* Gone since the plan: the cache will show it and the next plan
	 * creates it again. */
	if (rc == TFJ_ENOTFOUND || rc == TFJ_ECONFLICT) {
		rc = 0;
		goto out;
	}
	if (rc)
		event(ap, job, "Warning", "FailedUpdatePodGroup", "Error updating: %.500s",
		      tfj_err_detail());
	else
		tfj_apply_event(ap, job, act->ev_type, act->ev_reason, act->ev_message);
out:
	free(text);
	cJSON_Delete(ops);
	return rc;
}

static int delete(struct tfj_apply *ap, const struct tfj_tfjob *job, const char *key,
		  const struct tfj_action *act, const char *path)
{
	int rc;

	if ((rc = tfj_expect_delete(ap->exp, key, KIND, act->name)))
		return rc;
	rc = tfj_kube_delete(ap->k, path, act->uid[0] ? act->uid : NULL, "Background");
	if (rc == 0) {
		tfj_apply_event(ap, job, act->ev_type, act->ev_reason, act->ev_message);
		return 0;
	}
	tfj_expect_cancel_delete(ap->exp, key, KIND, act->name);
	if (rc == TFJ_ENOTFOUND || rc == TFJ_ECONFLICT)
		return 0; /* gone already, or a newer one this plan did not see */
	event(ap, job, "Warning", "FailedDeletePodGroup", "Error deleting: %.500s",
	      tfj_err_detail());
	return rc;
}

int tfj_gang_apply(int *hold, struct tfj_apply *ap, const struct tfj_tfjob *job, const char *key,
		   const struct tfj_action *act, struct tfj_createfail *cf, int64_t now_ms)
{
	const char *api = tfj_podgroup_api_path(ap->gang ? ap->gang->api : TFJ_PODGROUP_OFF);
	char path[PATH_LEN];
	int rc;

	if (!api)
		return tfj_err_set(TFJ_EINVAL, "PodGroup action without gang scheduling");
	if (act->kind == TFJ_ACT_CREATE_PODGROUP)
		rc = create(hold, ap, job, key, act, cf, now_ms, api);
	else
		rc = tfj_apipath_obj(path, sizeof(path), api, job->ns, "podgroups", act->name,
				     NULL);
	if (!rc && act->kind == TFJ_ACT_UPDATE_PODGROUP)
		rc = update(ap, job, act, path);
	else if (!rc && act->kind == TFJ_ACT_DELETE_PODGROUP)
		rc = delete(ap, job, key, act, path);
	if (rc)
		tfj_log_warn("PodGroup write failed", "job", key, "action",
			     tfj_plan_kind_name(act->kind), "error", tfj_err_detail());
	else
		tfj_log_info("PodGroup", "job", key, "action", tfj_plan_kind_name(act->kind));
	return rc;
}
