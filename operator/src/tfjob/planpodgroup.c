/*
 * planpodgroup.c - the planner's rules for the job's PodGroup
 * (planpodgroup.h).
 */
#include "tfjob/planpodgroup.h"

#include <string.h>

#include <tfj/err.h>
#include <tfj/json.h>

#include "kube/objmeta.h"
#include "tfjob/createfail.h"
#include "tfjob/jobstatus.h"
#include "tfjob/podgroup.h"

static const struct tfj_gang *gang(const struct tfj_planctx *c)
{
	const struct tfj_gang *g = c->in->cfg ? c->in->cfg->gang : NULL;

	return g && g->api != TFJ_PODGROUP_OFF ? g : NULL;
}

/* The job runs: it wants its PodGroup (podgroup.h, with this plan's status). */
static int wanted(const struct tfj_planctx *c)
{
	return c->job->spec_valid && !c->job->run.suspend && !tfj_jobstatus_finished(&c->st);
}

/* The uid of the observed PodGroup's controller, NULL when it has none. */
static const char *owner_uid(const cJSON *pg)
{
	const cJSON *r = tfj_objmeta_controller_ref(pg);
	const char *u = NULL;

	if (r && tfj_json_get_string(&u, r, "uid"))
		u = "";
	return r ? u : NULL;
}

int tfj_planpodgroup_block(struct tfj_planctx *c)
{
	const struct tfj_gang *g = gang(c);
	const struct tfj_createfail *cf = c->in->create_failure;
	const char *owner;
	cJSON *body = NULL;
	int rc;

	if (!g || !wanted(c))
		return 0;
	rc = tfj_podgroup_body(&body, c->job, g);
	cJSON_Delete(body);
	if (rc == TFJ_EINVAL) {
		c->gang_reason = TFJ_PLAN_GANG_REASON_INVALID;
		tfj_planact_fmt(c->gang_message, sizeof(c->gang_message),
				"runPolicy.schedulingPolicy: %s; no PodGroup, no pods", tfj_err_detail());
		return 0;
	}
	if (rc)
		return rc;
	if (c->in->podgroup_api_absent || (cf && cf->podgroup_unavailable)) {
		const char *api = tfj_podgroup_api_path(g->api);

		c->gang_reason = TFJ_PLAN_GANG_REASON_UNAVAILABLE;
		tfj_planact_fmt(c->gang_message, sizeof(c->gang_message),
				"gang scheduling (%s) needs the PodGroup API %s, which this cluster "
				"does not serve: install its PodGroup CRD or turn --gang-scheduler-name "
				"off; no pods are created until then",
				tfj_podgroup_api_name(g->api), api + strlen("/apis/"));
		return 0;
	}
	owner = c->in->podgroup ? owner_uid(c->in->podgroup) : NULL;
	if (owner && strcmp(owner, c->job->uid))
		c->gang_hold = 1;
	return 0;
}

/*
 * A block the status did not show before gets a Warning event (kubectl
 * describe); one it shows already is not told again on every look. While
 * the API is not served, the job is looked at again after
 * TFJ_CREATEFAIL_PODGROUP_MS (no object event will say it is served now).
 * Returns 1 when this plan also retries the create (the last 404 is old).
 */
static int plan_block(struct tfj_planctx *c)
{
	const struct tfj_condition *was = &c->job->status.cond[TFJ_COND_REPLICA_FAILURE];
	const struct tfj_createfail *cf = c->in->create_failure;
	int unavailable = !strcmp(c->gang_reason, TFJ_PLAN_GANG_REASON_UNAVAILABLE);
	int64_t at_ms;
	int rc;

	if (!(was->present && was->status && !strcmp(was->reason, c->gang_reason)) &&
	    (!unavailable || c->in->podgroup_api_absent) &&
	    (rc = tfj_planact_event(c, "Warning", c->gang_reason, c->gang_message)))
		return rc;
	if (!unavailable)
		return 0; /* an edit of the job's spec brings it back */
	at_ms = c->in->now_ms + TFJ_CREATEFAIL_PODGROUP_MS;
	if (!c->in->podgroup_api_absent && cf && cf->podgroup_unavailable) {
		if (c->in->now_ms >= cf->podgroup_retry_at_ms)
			return 1;
		at_ms = cf->podgroup_retry_at_ms;
	}
	tfj_planact_requeue_at(c, (at_ms + 999) / 1000);
	return 0;
}

/* The action for op with its name, uid, body (taken) and event. */
static int push(struct tfj_planctx *c, enum tfj_podgroup_op op, cJSON *body)
{
	static const struct {
		enum tfj_action_kind kind;
		const char *reason, *verb;
	} map[] = {
		[TFJ_PODGROUP_CREATE] = { TFJ_ACT_CREATE_PODGROUP, "SuccessfulCreatePodGroup", "Created" },
		[TFJ_PODGROUP_UPDATE] = { TFJ_ACT_UPDATE_PODGROUP, "SuccessfulUpdatePodGroup", "Updated" },
		[TFJ_PODGROUP_DELETE] = { TFJ_ACT_DELETE_PODGROUP, "SuccessfulDeletePodGroup", "Deleted" },
	};
	const char *uid = c->in->podgroup ? tfj_objmeta_str(c->in->podgroup, "uid") : NULL;
	struct tfj_action *a;
	char msg[128];

	if (!(a = tfj_planact_push(c, map[op].kind))) {
		cJSON_Delete(body);
		return TFJ_ENOMEM;
	}
	a->body = body;
	tfj_planact_fmt(a->name, sizeof(a->name), "%s", c->job->name);
	if (op != TFJ_PODGROUP_CREATE)
		tfj_planact_fmt(a->uid, sizeof(a->uid), "%s", uid ? uid : "");
	tfj_planact_fmt(msg, sizeof(msg), "%s PodGroup: %s", map[op].verb, c->job->name);
	return tfj_planact_set_event(a, "Normal", map[op].reason, msg);
}

int tfj_planpodgroup_plan(struct tfj_planctx *c)
{
	const struct tfj_gang *g = gang(c);
	const cJSON *obs = c->in->podgroup;
	enum tfj_podgroup_op op = TFJ_PODGROUP_NOOP;
	cJSON *body = NULL, *spec;
	const char *owner;
	int rc;

	if (!g)
		return 0;
	if (!wanted(c)) {
		/* Ours (or an orphan) goes; another controller's is left alone. */
		owner = obs ? owner_uid(obs) : NULL;
		if (obs && (!owner || !strcmp(owner, c->job->uid)))
			return push(c, TFJ_PODGROUP_DELETE, NULL);
		return 0;
	}
	if (c->gang_reason && (rc = plan_block(c)) <= 0)
		return rc;
	if ((rc = tfj_podgroup_plan(&op, &body, c->job, obs, g)))
		return rc;
	if (op == TFJ_PODGROUP_NOOP)
		return 0;
	if (op == TFJ_PODGROUP_UPDATE) {
		/* Only the spec is sent (apply replaces it): the cached copy is slim. */
		spec = cJSON_DetachItemFromObjectCaseSensitive(body, "spec");
		cJSON_Delete(body);
		if (!(body = spec))
			return tfj_err_set(TFJ_EINVAL, "PodGroup update without a spec");
	}
	if (op == TFJ_PODGROUP_DELETE) {
		cJSON_Delete(body);
		body = NULL;
	}
	return push(c, op, body);
}
