/*
 * test_planpodgroup.c - the job's PodGroup decided by the planner
 * (tfjob/planpodgroup.h, plan.h) from the job and the observed PodGroup,
 * applied to a tiny world (plan_fixtures.h):
 *
 *  - CREATE_PODGROUP (with its body) comes before the first pod in the
 *    plan; planned again with it there, nothing;
 *  - an edited schedulingPolicy: UPDATE_PODGROUP with only the spec;
 *  - suspended or finished: DELETE_PODGROUP of ours, another controller's
 *    left alone; resumed: made again before the pods;
 *  - one left by an earlier job of the name: deleted, and no pod (and no
 *    condition) until it is gone;
 *  - the API not served: ReplicaFailure PodGroupUnavailable, one event,
 *    no pods, a requeue; the last create found it so (createfail): no
 *    create before the retry time, then one, still no pods;
 *  - a schedulingPolicy that gives no PodGroup: InvalidSchedulingPolicy;
 *  - gang scheduling off: no PodGroup action whatever is observed.
 */
#include <string.h>

#include "kube/objmeta.h"
#include "plan_fixtures.h"
#include "tfjob/createfail.h"
#include "tfjob/podgroup.h"

static const struct tfj_gang sp = { TFJ_PODGROUP_SCHEDULER_PLUGINS, "scheduler-plugins" };

/* A job of a PS and two workers under gang scheduling. */
static void world(struct fx_world *w)
{
	cJSON *j = fx_job("g");

	fx_replica(j, "PS", 1, NULL);
	fx_replica(j, "Worker", 2, NULL);
	fx_world_init(w, j);
	w->cfg.gang = &sp;
}

/* Index of the first action of kind k in the plan, -1 when none. */
static int first(const struct tfj_plan *p, enum tfj_action_kind k)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->actions[i].kind == k)
			return (int)i;
	return -1;
}

static void test_create_before_pods(void)
{
	struct fx_world w;
	const struct tfj_action *a;

	world(&w);
	TFJ_CHECK_OK(fx_plan(&w));
	a = fx_action(&w.plan, TFJ_ACT_CREATE_PODGROUP, "g");
	TFJ_CHECK_NOT_NULL(a);
	if (!a)
		goto out;
	TFJ_CHECK_INT(first(&w.plan, TFJ_ACT_CREATE_POD) > first(&w.plan, TFJ_ACT_CREATE_PODGROUP), 1);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 3);
	TFJ_CHECK_STR(tfj_objmeta_str(a->body, "name"), "g");
	TFJ_CHECK_INT(cJSON_GetObjectItem(cJSON_GetObjectItem(a->body, "spec"), "minMember")->valueint,
		      3);
	TFJ_CHECK_STR(a->ev_reason, "SuccessfulCreatePodGroup");
	fx_apply(&w);
	TFJ_CHECK_NOT_NULL(w.podgroup);
	/* Observed as wanted: nothing more. */
	TFJ_CHECK_OK(fx_plan(&w));
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_PODGROUP), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_UPDATE_PODGROUP), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_PODGROUP), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 0);
out:
	fx_world_free(&w);
}

static void test_update_spec_only(void)
{
	struct fx_world w;
	const struct tfj_action *a;

	world(&w);
	TFJ_CHECK_OK(fx_plan(&w));
	fx_apply(&w);
	cJSON_AddItemToObject(fx_run_policy(w.job), "schedulingPolicy",
			      cJSON_Parse("{\"minAvailable\":2}"));
	TFJ_CHECK_OK(fx_plan(&w));
	a = fx_action(&w.plan, TFJ_ACT_UPDATE_PODGROUP, "g");
	TFJ_CHECK_NOT_NULL(a);
	if (a) {
		/* The spec alone (apply replaces it), for the observed object. */
		TFJ_CHECK_NULL(cJSON_GetObjectItem(a->body, "metadata"));
		TFJ_CHECK_INT(cJSON_GetObjectItem(a->body, "minMember")->valueint, 2);
		TFJ_CHECK_STR(a->uid, tfj_objmeta_str(w.podgroup, "uid"));
	}
	fx_apply(&w);
	TFJ_CHECK_OK(fx_plan(&w));
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_UPDATE_PODGROUP), 0);
	fx_world_free(&w);
}

static void test_suspend_resume_finish(void)
{
	struct fx_world w;
	cJSON *other;
	const struct tfj_action *a;

	world(&w);
	TFJ_CHECK_OK(fx_plan(&w));
	fx_apply(&w);
	cJSON_AddTrueToObject(fx_run_policy(w.job), "suspend");
	TFJ_CHECK_OK(fx_plan(&w));
	a = fx_action(&w.plan, TFJ_ACT_DELETE_PODGROUP, "g");
	TFJ_CHECK_NOT_NULL(a);
	if (a)
		TFJ_CHECK_STR(a->uid, tfj_objmeta_str(w.podgroup, "uid"));
	fx_apply(&w);
	TFJ_CHECK_NULL(w.podgroup);
	TFJ_CHECK_OK(fx_plan(&w));
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_PODGROUP), 0);
	/* Resumed: made again, before the pods. */
	cJSON_DeleteItemFromObject(fx_run_policy(w.job), "suspend");
	TFJ_CHECK_OK(fx_plan(&w));
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_PODGROUP), 1);
	TFJ_CHECK_INT(first(&w.plan, TFJ_ACT_CREATE_POD) > first(&w.plan, TFJ_ACT_CREATE_PODGROUP), 1);
	fx_apply(&w);
	/* Succeeded: ours goes. */
	fx_all_pods(&w, "Succeeded");
	TFJ_CHECK_OK(fx_plan(&w));
	TFJ_CHECK_STR(w.plan.phase, "Succeeded");
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_PODGROUP), 1);
	fx_apply(&w);
	/* Another controller's PodGroup of the name is not the finished job's to delete. */
	other = cJSON_Parse("{\"metadata\":{\"name\":\"g\",\"uid\":\"pg-x\",\"ownerReferences\":"
			    "[{\"kind\":\"Other\",\"uid\":\"x\",\"controller\":true}]},\"spec\":{}}");
	w.podgroup = other;
	TFJ_CHECK_OK(fx_plan(&w));
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_PODGROUP), 0);
	fx_world_free(&w);
}

static void test_stale_goes_first(void)
{
	struct fx_world w;

	world(&w);
	w.podgroup = cJSON_Parse("{\"metadata\":{\"name\":\"g\",\"uid\":\"pg-old\",\"ownerReferences\":"
				 "[{\"kind\":\"TFJob\",\"uid\":\"old-job\",\"controller\":true}]},"
				 "\"spec\":{\"minMember\":3}}");
	TFJ_CHECK_OK(fx_plan(&w));
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_DELETE_PODGROUP), 1);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_PODGROUP), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 0);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "ReplicaFailure"), ""); /* nothing the user must fix */
	TFJ_CHECK_OK(fx_plan(&w));
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_PODGROUP), 1);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 3);
	fx_world_free(&w);
}

static void test_api_absent(void)
{
	struct fx_world w;
	const struct tfj_action *rq;

	world(&w);
	w.podgroup_api_absent = 1;
	TFJ_CHECK_OK(fx_plan(&w));
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_PODGROUP), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 0);
	TFJ_CHECK_NOT_NULL(fx_event(&w.plan, "PodGroupUnavailable"));
	rq = fx_action(&w.plan, TFJ_ACT_REQUEUE, NULL);
	TFJ_CHECK_NOT_NULL(rq);
	if (rq)
		TFJ_CHECK_INT((int)rq->after_ms, TFJ_CREATEFAIL_PODGROUP_MS);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond_field(&w, "ReplicaFailure", "reason"), "PodGroupUnavailable");
	/* Shown already: not told again on the next look. */
	TFJ_CHECK_OK(fx_plan(&w));
	TFJ_CHECK_NULL(fx_event(&w.plan, "PodGroupUnavailable"));
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 0);
	fx_world_free(&w);
}

static void test_create_found_no_api(void)
{
	struct fx_world w;
	struct tfj_createfail cf;
	const struct tfj_action *rq;

	memset(&cf, 0, sizeof(cf));
	world(&w);
	tfj_createfail_podgroup(&cf, 1, FX_T0_MS - 1000);
	w.create_failure = &cf;
	TFJ_CHECK_OK(fx_plan(&w));
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_PODGROUP), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 0);
	/* apply posted the event with the 404 already. */
	TFJ_CHECK_NULL(fx_event(&w.plan, "PodGroupUnavailable"));
	rq = fx_action(&w.plan, TFJ_ACT_REQUEUE, NULL);
	TFJ_CHECK_NOT_NULL(rq);
	if (rq)
		TFJ_CHECK_INT((int)rq->after_ms, TFJ_CREATEFAIL_PODGROUP_MS - 1000);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond_field(&w, "ReplicaFailure", "reason"), "PodGroupUnavailable");
	/* The retry time came: one create, the pods still wait for it. */
	w.now_ms = cf.podgroup_retry_at_ms;
	TFJ_CHECK_OK(fx_plan(&w));
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_PODGROUP), 1);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 0);
	fx_apply(&w);
	/* It worked: the record is cleared (apply), the condition goes, pods come. */
	tfj_createfail_podgroup(&cf, 0, w.now_ms);
	TFJ_CHECK_OK(fx_plan(&w));
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 3);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "ReplicaFailure"), "");
	fx_world_free(&w);
}

static void test_invalid_policy(void)
{
	struct fx_world w;

	world(&w);
	cJSON_AddItemToObject(fx_run_policy(w.job), "schedulingPolicy",
			      cJSON_Parse("{\"minAvailable\":-2}"));
	TFJ_CHECK_OK(fx_plan(&w));
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_PODGROUP), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 0);
	TFJ_CHECK_NOT_NULL(fx_event(&w.plan, "InvalidSchedulingPolicy"));
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond_field(&w, "ReplicaFailure", "reason"), "InvalidSchedulingPolicy");
	TFJ_CHECK_NOT_NULL(strstr(fx_cond_field(&w, "ReplicaFailure", "message"),
				  "schedulingPolicy"));
	fx_world_free(&w);
}

static void test_gang_off(void)
{
	struct fx_world w;

	world(&w);
	w.cfg.gang = NULL;
	w.podgroup = cJSON_Parse("{\"metadata\":{\"name\":\"g\",\"uid\":\"pg-old\",\"ownerReferences\":"
				 "[{\"kind\":\"TFJob\",\"uid\":\"old-job\",\"controller\":true}]}}");
	w.podgroup_api_absent = 1;
	TFJ_CHECK_OK(fx_plan(&w));
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_PODGROUP) +
		      fx_count(&w.plan, TFJ_ACT_UPDATE_PODGROUP) +
		      fx_count(&w.plan, TFJ_ACT_DELETE_PODGROUP), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 3);
	TFJ_CHECK_STR(tfj_plan_kind_name(TFJ_ACT_CREATE_PODGROUP), "CreatePodGroup");
	TFJ_CHECK_STR(tfj_plan_kind_name(TFJ_ACT_PUBLISH_CA), "PublishReportCA");
	fx_world_free(&w);
}

int main(void)
{
	TFJ_RUN(test_create_before_pods);
	TFJ_RUN(test_update_spec_only);
	TFJ_RUN(test_suspend_resume_finish);
	TFJ_RUN(test_stale_goes_first);
	TFJ_RUN(test_api_absent);
	TFJ_RUN(test_create_found_no_api);
	TFJ_RUN(test_invalid_policy);
	TFJ_RUN(test_gang_off);
	return tfj_test_finish();
}
