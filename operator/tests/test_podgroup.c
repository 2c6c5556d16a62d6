/*
 * test_podgroup.c - gang scheduling: the PodGroup bodies built from
 * runPolicy.schedulingPolicy for scheduler-plugins and Volcano (Volcano is
 * covered only here: its scheduler is not part of the test bed), the
 * create/update/delete decision, and what the planner's pods carry.
 */
#include "tfjob/podgroup.h"
#include "kube/objmeta.h"
#include "plan_fixtures.h"

static const struct tfj_gang sp = { TFJ_PODGROUP_SCHEDULER_PLUGINS, "scheduler-plugins" };
static const struct tfj_gang volcano = { TFJ_PODGROUP_VOLCANO, "volcano" };

/* PS x1 (cpu 1, memory 1Gi) and Worker x3 (cpu 500m + a sidecar with limits only). */
static cJSON *gang_job(void)
{
	cJSON *j = fx_job("mnist"), *r, *ctrs, *c;

	cJSON_AddStringToObject(cJSON_AddObjectToObject(cJSON_GetObjectItem(j, "metadata"),
							"annotations"),
				"team", "vision");
	cJSON_AddStringToObject(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "metadata"), "annotations"),
				"kubectl.kubernetes.io/last-applied-configuration", "{...}");
	r = fx_replica(j, "PS", 1, NULL);
	c = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "template"),
								       "spec"), "containers"), 0);
	cJSON_AddItemToObject(c, "resources",
			      cJSON_Parse("{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"},"
					  "\"limits\":{\"cpu\":\"4\"}}"));
	r = fx_replica(j, "Worker", 3, NULL);
	ctrs = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "template"), "spec"),
				   "containers");
	cJSON_AddItemToObject(cJSON_GetArrayItem(ctrs, 0), "resources",
			      cJSON_Parse("{\"requests\":{\"cpu\":\"500m\"}}"));
	cJSON_AddItemToArray(ctrs, cJSON_Parse("{\"name\":\"sidecar\",\"image\":\"s\","
					       "\"resources\":{\"limits\":{\"memory\":\"64Mi\"}}}"));
	return j;
}

static void set_policy(cJSON *j, const char *policy_json)
{
	cJSON_AddItemToObject(fx_run_policy(j), "schedulingPolicy", cJSON_Parse(policy_json));
}

/* Builds the body of job j (consumed) with g and compares it with want. */
static void check_body(cJSON *j, const struct tfj_gang *g, const char *want_json)
{
	struct tfj_tfjob job;
	cJSON *body = NULL, *want = cJSON_Parse(want_json);
	char *got;

	TFJ_CHECK_NOT_NULL(want);
	TFJ_CHECK_OK(tfj_tfjob_from_json(&job, j));
	cJSON_Delete(j);
	TFJ_CHECK_OK(tfj_podgroup_body(&body, &job, g));
	TFJ_CHECK(cJSON_Compare(body, want, 1));
	if (body && want && !cJSON_Compare(body, want, 1)) {
		got = cJSON_PrintUnformatted(body);
		tfj_test_fail(__FILE__, __LINE__, "body %s", got);
		free(got);
	}
	cJSON_Delete(body);
	cJSON_Delete(want);
	tfj_tfjob_free(&job);
}

#define META                                                                           \
	"\"metadata\":{\"name\":\"mnist\",\"namespace\":\"default\","                  \
	"\"annotations\":{\"team\":\"vision\"},"                                       \
	"\"ownerReferences\":[{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","  \
	"\"name\":\"mnist\",\"uid\":\"job-uid-1\",\"controller\":true,"                \
	"\"blockOwnerDeletion\":true}]}"

static void test_scheduler_plugins_defaults(void)
{
	/* minMember: every replica; minResources: all four pods' requests
	 * (the sidecar counts its limits, having no requests). */
	check_body(gang_job(), &sp,
		   "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\"," META
		   ",\"spec\":{\"minMember\":4,\"minResources\":{\"cpu\":\"2500m\","
		   "\"memory\":\"1275068416\"}}}");
}

static void test_scheduler_plugins_policy(void)
{
	cJSON *j = gang_job();

	/* minAvailable 2: the PS and the first worker; queue and priorityClass
	 * are Volcano's (scheduler-plugins has no such fields). */
	set_policy(j, "{\"minAvailable\":2,\"queue\":\"q1\",\"priorityClass\":\"high\","
		      "\"scheduleTimeoutSeconds\":120}");
	check_body(j, &sp,
		   "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\"," META
		   ",\"spec\":{\"minMember\":2,\"minResources\":{\"cpu\":\"1500m\","
		   "\"memory\":\"1140850688\"},\"scheduleTimeoutSeconds\":120}}");
	j = gang_job();
	set_policy(j, "{\"minResources\":{\"cpu\":3,\"nvidia.com/gpu\":\"2\",\"memory\":\"0.5Gi\"}}");
	check_body(j, &sp,
		   "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\"," META
		   ",\"spec\":{\"minMember\":4,\"minResources\":{\"cpu\":\"3\","
		   "\"nvidia.com/gpu\":\"2\",\"memory\":\"536870912\"}}}");
}

static void test_volcano(void)
{
	cJSON *j = gang_job();

	check_body(j, &volcano,
		   "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\"," META
		   ",\"spec\":{\"minMember\":4,\"queue\":\"default\",\"minResources\":{"
		   "\"cpu\":\"2500m\",\"memory\":\"1275068416\"}}}");
	j = gang_job();
	set_policy(j, "{\"minAvailable\":1,\"queue\":\"research\",\"priorityClass\":\"high\","
		      "\"scheduleTimeoutSeconds\":60}");
	/* scheduleTimeoutSeconds is scheduler-plugins' (Kubeflow drops it for Volcano). */
	check_body(j, &volcano,
		   "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\"," META
		   ",\"spec\":{\"minMember\":1,\"queue\":\"research\",\"priorityClassName\":\"high\","
		   "\"minResources\":{\"cpu\":\"1\",\"memory\":\"1073741824\"}}}");
}

static void test_no_requests_no_min_resources(void)
{
	cJSON *j = fx_job("plain");

	fx_replica(j, "Worker", 2, NULL);
	check_body(j, &sp,
		   "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\","
		   "\"metadata\":{\"name\":\"plain\",\"namespace\":\"default\","
		   "\"ownerReferences\":[{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
		   "\"name\":\"plain\",\"uid\":\"job-uid-1\",\"controller\":true,"
		   "\"blockOwnerDeletion\":true}]},\"spec\":{\"minMember\":2}}");
}

static void test_bad_policy(void)
{
	static const char *const bad[] = {
		"{\"minAvailable\":-1}", "{\"minAvailable\":\"two\"}",
		"{\"minResources\":{\"cpu\":\"lots\"}}", "{\"minResources\":[1]}",
		"{\"scheduleTimeoutSeconds\":1.5}", "{\"queue\":7}",
	};
	struct tfj_tfjob job;
	cJSON *body, *j;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		j = gang_job();
		set_policy(j, bad[i]);
		TFJ_CHECK_OK(tfj_tfjob_from_json(&job, j));
		cJSON_Delete(j);
		body = NULL;
		TFJ_CHECK_LT(tfj_podgroup_body(&body, &job, &sp), 0);
		TFJ_CHECK_NULL(body);
		tfj_tfjob_free(&job);
	}
}

static void test_parse(void)
{
	struct tfj_gang g;

	TFJ_CHECK_OK(tfj_podgroup_parse(&g, ""));
	TFJ_CHECK_INT(g.api, TFJ_PODGROUP_OFF);
	TFJ_CHECK_OK(tfj_podgroup_parse(&g, "none"));
	TFJ_CHECK_INT(g.api, TFJ_PODGROUP_OFF);
	TFJ_CHECK_OK(tfj_podgroup_parse(&g, "volcano"));
	TFJ_CHECK_INT(g.api, TFJ_PODGROUP_VOLCANO);
	TFJ_CHECK_STR(g.scheduler, "volcano");
	TFJ_CHECK_STR(tfj_podgroup_api_path(g.api), "/apis/scheduling.volcano.sh/v1beta1");
	TFJ_CHECK_OK(tfj_podgroup_parse(&g, "scheduler-plugins"));
	TFJ_CHECK_INT(g.api, TFJ_PODGROUP_SCHEDULER_PLUGINS);
	TFJ_CHECK_STR(g.scheduler, "scheduler-plugins");
	TFJ_CHECK_STR(tfj_podgroup_api_path(g.api), "/apis/scheduling.x-k8s.io/v1alpha1");
	/* As in Kubeflow, another name is the scheduler-plugins scheduler's name. */
	TFJ_CHECK_OK(tfj_podgroup_parse(&g, "scheduler-plugins-scheduler"));
	TFJ_CHECK_INT(g.api, TFJ_PODGROUP_SCHEDULER_PLUGINS);
	TFJ_CHECK_INT(tfj_podgroup_parse(&g, "Bad_Name"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_podgroup_parse(&g, "-x"), TFJ_EINVAL);
	TFJ_CHECK_NULL(tfj_podgroup_api_path(TFJ_PODGROUP_OFF));
}

/* Plans against an observed PodGroup (JSON or NULL) for job j (consumed). */
static enum tfj_podgroup_op plan_op(cJSON *j, const char *observed_json, cJSON **body)
{
	struct tfj_tfjob job;
	enum tfj_podgroup_op op = TFJ_PODGROUP_NOOP;
	cJSON *obs = observed_json ? cJSON_Parse(observed_json) : NULL;

	TFJ_CHECK_OK(tfj_tfjob_from_json(&job, j));
	cJSON_Delete(j);
	TFJ_CHECK_OK(tfj_podgroup_plan(&op, body, &job, obs, &sp));
	cJSON_Delete(obs);
	tfj_tfjob_free(&job);
	return op;
}

#define OBSERVED(uid, spec)                                                             \
	"{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\","       \
	"\"metadata\":{\"name\":\"mnist\",\"namespace\":\"default\",\"uid\":\"pg-1\","  \
	"\"resourceVersion\":\"42\",\"ownerReferences\":[{\"apiVersion\":"              \
	"\"kubeflow.org/v1\",\"kind\":\"TFJob\",\"name\":\"mnist\",\"uid\":\"" uid "\"," \
	"\"controller\":true}]},\"spec\":" spec ",\"status\":{\"phase\":\"Pending\"}}"
#define SPEC4 "{\"minMember\":4,\"minResources\":{\"cpu\":\"2500m\",\"memory\":\"1275068416\"}}"

static void test_plan_create_noop_update(void)
{
	cJSON *body = NULL, *j;

	TFJ_CHECK_INT(plan_op(gang_job(), NULL, &body), TFJ_PODGROUP_CREATE);
	TFJ_CHECK_NOT_NULL(body);
	cJSON_Delete(body);
	TFJ_CHECK_INT(plan_op(gang_job(), OBSERVED("job-uid-1", SPEC4), &body), TFJ_PODGROUP_NOOP);
	TFJ_CHECK_NULL(body);
	/* minAvailable changed: PUT the observed object with the new spec. */
	j = gang_job();
	set_policy(j, "{\"minAvailable\":2}");
	TFJ_CHECK_INT(plan_op(j, OBSERVED("job-uid-1", SPEC4), &body), TFJ_PODGROUP_UPDATE);
	TFJ_CHECK_STR(tfj_objmeta_str(body, "resourceVersion"), "42");
	TFJ_CHECK_INT(cJSON_GetObjectItem(cJSON_GetObjectItem(body, "spec"), "minMember")->valueint, 2);
	TFJ_CHECK_NULL(cJSON_GetObjectItem(body, "status"));
	cJSON_Delete(body);
	/* A timeout the policy no longer has is removed. */
	TFJ_CHECK_INT(plan_op(gang_job(), OBSERVED("job-uid-1",
		"{\"minMember\":4,\"minResources\":{\"cpu\":\"2500m\",\"memory\":\"1275068416\"},"
		"\"scheduleTimeoutSeconds\":9}"), &body), TFJ_PODGROUP_UPDATE);
	TFJ_CHECK_NULL(cJSON_GetObjectItem(cJSON_GetObjectItem(body, "spec"), "scheduleTimeoutSeconds"));
	cJSON_Delete(body);
}

static void test_plan_suspend_finish_stale(void)
{
	cJSON *body = NULL, *j;

	/* Suspended: the PodGroup goes (as in Kubeflow); resumed, it comes back. */
	j = gang_job();
	cJSON_AddTrueToObject(fx_run_policy(j), "suspend");
	TFJ_CHECK_INT(plan_op(j, OBSERVED("job-uid-1", SPEC4), &body), TFJ_PODGROUP_DELETE);
	j = gang_job();
	cJSON_AddTrueToObject(fx_run_policy(j), "suspend");
	TFJ_CHECK_INT(plan_op(j, NULL, &body), TFJ_PODGROUP_NOOP);
	/* Finished: it goes too. */
	j = gang_job();
	cJSON_AddItemToObject(j, "status", cJSON_Parse(
		"{\"conditions\":[{\"type\":\"Succeeded\",\"status\":\"True\"}]}"));
	TFJ_CHECK_INT(plan_op(j, OBSERVED("job-uid-1", SPEC4), &body), TFJ_PODGROUP_DELETE);
	/* One left by an earlier job of this name is removed before ours is made. */
	TFJ_CHECK_INT(plan_op(gang_job(), OBSERVED("old-uid", SPEC4), &body), TFJ_PODGROUP_DELETE);
	/* Another controller's PodGroup is not ours to delete. */
	j = gang_job();
	cJSON_AddTrueToObject(fx_run_policy(j), "suspend");
	TFJ_CHECK_INT(plan_op(j, OBSERVED("other", SPEC4), &body), TFJ_PODGROUP_NOOP);
	TFJ_CHECK_NULL(body);
}

static const char *str_at(cJSON *pod, const char *obj, const char *key)
{
	cJSON *o = cJSON_GetObjectItem(cJSON_GetObjectItem(pod, obj), key);

	return cJSON_IsString(o) ? o->valuestring : NULL;
}

static const char *meta_at(cJSON *pod, const char *map, const char *key)
{
	cJSON *m = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "metadata"), map), key);

	return cJSON_IsString(m) ? m->valuestring : NULL;
}

static void test_planner_pods_carry_the_marks(void)
{
	struct fx_world w;
	cJSON *pod = NULL, *j = gang_job(), *tmpl;
	struct tfj_tfjob job;
	struct tfj_podspec_opts o = { .gang = &volcano };
	size_t i;
	int n = 0;

	/* scheduler-plugins through the planner: every created pod is marked. */
	fx_world_init(&w, j);
	w.cfg.gang = &sp;
	TFJ_CHECK_OK(fx_plan(&w));
	for (i = 0; i < w.plan.n; i++) {
		if (w.plan.actions[i].kind != TFJ_ACT_CREATE_POD)
			continue;
		n++;
		pod = fx_body(&w, &w.plan.actions[i]);
		TFJ_CHECK_STR(str_at(pod, "spec", "schedulerName"), "scheduler-plugins");
		TFJ_CHECK_STR(meta_at(pod, "labels", TFJ_PODGROUP_SP_LABEL), "mnist");
		cJSON_Delete(pod);
		pod = NULL;
	}
	TFJ_CHECK_INT(n, 4);
	fx_world_free(&w);

	/* Volcano: annotations; a template's own schedulerName is kept. */
	j = gang_job();
	tmpl = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
		cJSON_GetObjectItem(j, "spec"), "tfReplicaSpecs"), "PS"), "template");
	cJSON_AddStringToObject(cJSON_GetObjectItem(tmpl, "spec"), "schedulerName", "mine");
	TFJ_CHECK_OK(tfj_tfjob_from_json(&job, j));
	cJSON_Delete(j);
	TFJ_CHECK_OK(tfj_podspec_pod(&pod, &job, TFJ_RT_WORKER, 2, &o));
	TFJ_CHECK_STR(str_at(pod, "spec", "schedulerName"), "volcano");
	TFJ_CHECK_STR(meta_at(pod, "annotations", TFJ_PODGROUP_VOLCANO_GROUP), "mnist");
	TFJ_CHECK_STR(meta_at(pod, "annotations", TFJ_PODGROUP_VOLCANO_TASK), "worker");
	TFJ_CHECK_STR(meta_at(pod, "annotations", "note"), "kept");
	cJSON_Delete(pod);
	TFJ_CHECK_OK(tfj_podspec_pod(&pod, &job, TFJ_RT_PS, 0, &o));
	TFJ_CHECK_STR(str_at(pod, "spec", "schedulerName"), "mine");
	TFJ_CHECK_STR(meta_at(pod, "annotations", TFJ_PODGROUP_VOLCANO_TASK), "ps");
	cJSON_Delete(pod);
	/* Off: nothing added. */
	o.gang = NULL;
	TFJ_CHECK_OK(tfj_podspec_pod(&pod, &job, TFJ_RT_WORKER, 0, &o));
	TFJ_CHECK_NULL(str_at(pod, "spec", "schedulerName"));
	TFJ_CHECK_NULL(meta_at(pod, "labels", TFJ_PODGROUP_SP_LABEL));
	cJSON_Delete(pod);
	tfj_tfjob_free(&job);
}

/*
 * A job gang scheduling cannot start (no PodGroup CRD): the planner creates
 * nothing and says why in ReplicaFailure; once the PodGroup is there the
 * condition goes and the pods come. A ReplicaFailure of another reason
 * (createfail.h) is not the gang's to remove.
 */
static void test_planner_blocked_by_gang(void)
{
	struct fx_world w;

	fx_world_init(&w, gang_job());
	w.cfg.gang = &sp;
	w.podgroup_api_absent = 1;
	TFJ_CHECK_OK(fx_plan(&w));
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_SERVICE), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_WRITE_STATUS), 1);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "ReplicaFailure"), "True");
	TFJ_CHECK_STR(fx_cond_field(&w, "ReplicaFailure", "reason"), "PodGroupUnavailable");
	TFJ_CHECK_NOT_NULL(strstr(fx_cond_field(&w, "ReplicaFailure", "message"),
				  "install its PodGroup CRD"));
	TFJ_CHECK_STR(fx_cond(&w, "Created"), "True");
	TFJ_CHECK_STR(fx_status_str(&w, "startTime"), ""); /* not started */
	/* Planned again while still blocked: still nothing created. */
	TFJ_CHECK_OK(fx_plan(&w));
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 0);
	/* The CRD is installed: the condition goes, the pods come. */
	w.podgroup_api_absent = 0;
	TFJ_CHECK_OK(fx_plan(&w));
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_PODGROUP), 1);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 4);
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "ReplicaFailure"), "");
	fx_world_free(&w);
}

int main(void)
{
	TFJ_RUN(test_scheduler_plugins_defaults);
	TFJ_RUN(test_scheduler_plugins_policy);
	TFJ_RUN(test_volcano);
	TFJ_RUN(test_no_requests_no_min_resources);
	TFJ_RUN(test_bad_policy);
	TFJ_RUN(test_parse);
	TFJ_RUN(test_plan_create_noop_update);
	TFJ_RUN(test_plan_suspend_finish_stale);
	TFJ_RUN(test_planner_pods_carry_the_marks);
	TFJ_RUN(test_planner_blocked_by_gang);
	return tfj_test_finish();
}
