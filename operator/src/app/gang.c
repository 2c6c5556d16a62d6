/*
 * gang.c - the PodGroup of a TFJob, created, updated and deleted.
 */
#include "app/gang.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/log.h>

#include "kube/apipath.h"
#include "kube/kube.h"
#include "kube/objmeta.h"
#include "tfjob/plan.h"

#define PATH_LEN 1024
#define MSG_LEN 512

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

static int create(uint64_t *wait_ms, struct tfj_gang_block *block, struct tfj_apply *ap,
		  const struct tfj_gang *g, const struct tfj_tfjob *job, const char *api,
		  const cJSON *body)
{
	char coll[PATH_LEN];
	int rc;

	if ((rc = tfj_apipath_coll(coll, sizeof(coll), api, job->ns, "podgroups")))
		return rc;
	rc = tfj_kube_create(ap->k, NULL, coll, body);
	if (rc == 0 || rc == TFJ_EEXIST) {
		if (rc == 0)
			event(ap, job, "Normal", "SuccessfulCreatePodGroup", "Created PodGroup: %s",
			      job->name);
		return 0;
	}
	if (rc == TFJ_ENOTFOUND) {
		/* The collection itself is unknown: the CRD is not installed. */
		snprintf(block->message, sizeof(block->message),
			 "gang scheduling (%s) needs the PodGroup API %s, which this cluster "
			 "does not serve: install its PodGroup CRD or turn --gang-scheduler-name "
			 "off; no pods are created until then",
			 tfj_podgroup_api_name(g->api), api + strlen("/apis/"));
		block->reason = TFJ_PLAN_GANG_REASON_UNAVAILABLE;
		tfj_apply_event(ap, job, "Warning", block->reason, block->message);
		tfj_log_warn("PodGroup API not served", "job", job->name, "namespace", job->ns,
			     "api", api);
		*wait_ms = TFJ_GANG_RETRY_MS;
		return 0;
	}
	event(ap, job, "Warning", "FailedCreatePodGroup", "Error creating: %s", tfj_err_detail());
	return rc;
}

int tfj_gang_sync(uint64_t *wait_ms, struct tfj_gang_block *block, struct tfj_apply *ap,
		  const struct tfj_gang *g, const struct tfj_tfjob *job)
{
	const char *api = tfj_podgroup_api_path(g ? g->api : TFJ_PODGROUP_OFF);
	char path[PATH_LEN];
	enum tfj_podgroup_op op;
	cJSON *obs = NULL, *body = NULL;
	int rc, round;

	*wait_ms = 0;
	block->reason = NULL;
	block->message[0] = '\0';
	if (!api)
		return 0;
	if ((rc = tfj_apipath_obj(path, sizeof(path), api, job->ns, "podgroups", job->name, NULL)))
		return rc;
	/* Two rounds: a PodGroup left by an earlier job of this name is deleted
	 * in the first, ours created in the second. */
	for (round = 0; round < 2; round++) {
		rc = tfj_kube_get(ap->k, &obs, path);
		if (rc == TFJ_ENOTFOUND) {
			obs = NULL;
		} else if (rc) {
			tfj_log_warn("reading PodGroup failed", "job", job->name, "namespace", job->ns,
				     "error", tfj_err_detail());
			return rc;
		}
		rc = tfj_podgroup_plan(&op, &body, job, obs, g);
		if (rc) {
			snprintf(block->message, sizeof(block->message),
				 "runPolicy.schedulingPolicy: %s; no PodGroup, no pods",
				 tfj_err_detail());
			block->reason = TFJ_PLAN_GANG_REASON_INVALID;
			tfj_apply_event(ap, job, "Warning", block->reason, block->message);
			*wait_ms = TFJ_GANG_RETRY_MS;
			rc = 0;
			goto out;
		}
		if (op != TFJ_PODGROUP_NOOP)
			tfj_log_info("PodGroup", "job", job->name, "namespace", job->ns, "op",
				     tfj_podgroup_op_name(op));
		switch (op) {
		case TFJ_PODGROUP_CREATE:
			rc = create(wait_ms, block, ap, g, job, api, body);
			goto out;
		case TFJ_PODGROUP_UPDATE:
			rc = tfj_kube_replace(ap->k, NULL, path, body);
			if (rc)
				event(ap, job, "Warning", "FailedUpdatePodGroup", "Error updating: %s",
				      tfj_err_detail());
			else
				event(ap, job, "Normal", "SuccessfulUpdatePodGroup",
				      "Updated PodGroup: %s", job->name);
			goto out;
		case TFJ_PODGROUP_DELETE:
			rc = tfj_kube_delete(ap->k, path, tfj_objmeta_str(obs, "uid"), "Background");
			if (rc == TFJ_ENOTFOUND || rc == TFJ_ECONFLICT)
				rc = 0;
			if (rc) {
				event(ap, job, "Warning", "FailedDeletePodGroup", "Error deleting: %s",
				      tfj_err_detail());
				goto out;
			}
			event(ap, job, "Normal", "SuccessfulDeletePodGroup", "Deleted PodGroup: %s",
			      job->name);
			if (!tfj_podgroup_wanted(job))
				goto out;
			break; /* a stale one: now create ours */
		default:
			goto out;
		}
		cJSON_Delete(obs);
		obs = NULL;
	}
	*wait_ms = TFJ_GANG_RETRY_MS; /* deleted twice: someone races us; look again later */
out:
	cJSON_Delete(obs);
	cJSON_Delete(body);
	return rc;
}
