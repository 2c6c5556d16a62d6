/*
 * plankueue.c - the planner's rules for Kueue's pod-group mode
 * (plankueue.h).
 */
#include "tfjob/plankueue.h"

#include <string.h>

#include <tfj/err.h>

#include "tfjob/kueue.h"

int tfj_plankueue_queued(const struct tfj_planctx *c)
{
	const char *queue;
	int gated = 0;
	size_t i;

	if (tfj_kueue_queue(&queue, c->job, c->opts.kueue_pod_groups) || !queue)
		return 0;
	for (i = 0; i < c->npods; i++) {
		const struct tfj_podstate *ps = &c->pods[i];

		if (ps->deleting || c->pod_gone[i] || !c->pod_used[i])
			continue;
		if (ps->scheduled || ps->phase == TFJ_POD_RUNNING)
			return 0; /* admitted: a gated pod is a replacement on its way */
		gated |= ps->gated;
	}
	return gated;
}

int tfj_plankueue_check(char *msg, size_t n, const struct tfj_planctx *c)
{
	const char *queue;

	if (!tfj_kueue_queue(&queue, c->job, c->opts.kueue_pod_groups))
		return 0;
	tfj_planact_fmt(msg, n, "%s", tfj_err_detail());
	return TFJ_EINVAL;
}

int tfj_plankueue_warn_keys(struct tfj_planctx *c)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(c->job->doc, "metadata");
	const cJSON *labels = cJSON_GetObjectItemCaseSensitive(meta, "labels");
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(c->job->doc, "spec");
	const cJSON *it;
	enum tfj_rtype t;
	char msg[256];

	if (!cJSON_IsObject(labels) || !cJSON_GetObjectItemCaseSensitive(labels, TFJ_KUEUE_LABEL_QUEUE))
		return 0;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(spec, "tfReplicaSpecs")) {
		if (!it->string || tfj_tfjob_type_parse(&t, it->string) ||
		    !strcmp(it->string, tfj_tfjob_type_name(t)))
			continue;
		tfj_planact_fmt(msg, sizeof(msg), "Kueue admits TFJobs by Kubeflow's replica type "
				"keys: spell tfReplicaSpecs key '%.16s' as '%s', or Kueue never "
				"admits this job", it->string, tfj_tfjob_type_name(t));
		return tfj_planact_event(c, "Warning", "KueueReplicaTypeCase", msg);
	}
	return 0;
}

int tfj_plankueue_release(struct tfj_planctx *c)
{
	struct tfj_action *a;
	size_t i;

	if (!c->opts.kueue_pod_groups)
		return 0;
	for (i = 0; i < c->npods; i++) {
		const struct tfj_podstate *ps = &c->pods[i];
		int settled = ps->phase == TFJ_POD_SUCCEEDED || ps->phase == TFJ_POD_FAILED ||
			      !ps->scheduled;

		if (!ps->deleting || !ps->kueue_finalizer || !settled || !ps->uid[0])
			continue;
		if (!(a = tfj_planact_push(c, TFJ_ACT_RELEASE_POD)))
			return TFJ_ENOMEM;
		tfj_planact_fmt(a->name, sizeof(a->name), "%s", ps->name);
		tfj_planact_fmt(a->uid, sizeof(a->uid), "%s", ps->uid);
		a->index = ps->kueue_finalizer - 1;
	}
	return 0;
}
