/*
 * test_plannetpol.c - the planner keeps the job's NetworkPolicy
 * (plannetpol.h): created before the pods, updated when the job's training
 * ports change, its failures shown as NetworkPolicyFailure without holding
 * the pods back, and left alone where the job is not running. And the
 * other per-job writes it decides besides pods and services: PUBLISH_CA,
 * and the ps Secret (CREATE_SECRET, status.psSecretName): a new job's
 * pods wait for its name, pods mount the recorded name, an older
 * operator's `<job>-ps-secret` is recorded for a job with pods, and a
 * recorded name that cannot be the job's is ignored.
 */
#include <tfj/json.h>

#include "plan_fixtures.h"
#include "tfjob/createfail.h"

static cJSON *np_job(void)
{
	cJSON *j = fx_job("mnist");

	fx_replica(j, "PS", 1, NULL);
	fx_replica(j, "Worker", 2, NULL);
	return j;
}

static void np_world(struct fx_world *w)
{
	fx_world_init(w, np_job());
	w->cfg.netpol = 1;
}

/* Sets the tfjob-port of replica type `type`'s first container in the job. */
static void set_port(cJSON *job, const char *type, int port)
{
	cJSON *specs = cJSON_GetObjectItem(cJSON_GetObjectItem(job, "spec"), "tfReplicaSpecs");
	cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
		cJSON_GetObjectItem(specs, type), "template"), "spec"), "containers"), 0);
	cJSON *ports = cJSON_CreateArray(), *p = cJSON_CreateObject();

	cJSON_AddStringToObject(p, "name", "tfjob-port");
	cJSON_AddNumberToObject(p, "containerPort", port);
	cJSON_AddItemToArray(ports, p);
	cJSON_DeleteItemFromObject(c, "ports");
	cJSON_AddItemToObject(c, "ports", ports);
}

/* The port of the training rule's port i in the world's policy, or -1. */
static int np_port(struct fx_world *w, int i)
{
	const cJSON *rule, *p;

	if (w->nnetpols != 1)
		return -1;
	rule = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(w->netpols[0], "spec"),
						      "ingress"), 0);
	p = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(rule, "ports"), i), "port");
	return cJSON_IsNumber(p) ? p->valueint : -1;
}

static void test_created_before_pods(void)
{
	struct fx_world w;
	const struct tfj_action *a;
	size_t i, at = 0;

	np_world(&w);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_NETPOL), 1);
	TFJ_CHECK((a = fx_action(&w.plan, TFJ_ACT_CREATE_NETPOL, "mnist-training")) != NULL);
	TFJ_CHECK_STR(a->ev_reason, "CreatedNetworkPolicy");
	/* Before every service and pod: no pod runs unfenced when it can be helped. */
	for (i = 0; i < w.plan.n; i++)
		if (w.plan.actions[i].kind == TFJ_ACT_CREATE_NETPOL)
			at = i;
	for (i = 0; i < at; i++)
		TFJ_CHECK(w.plan.actions[i].kind != TFJ_ACT_CREATE_POD &&
			  w.plan.actions[i].kind != TFJ_ACT_CREATE_SERVICE);
	fx_apply(&w);
	TFJ_CHECK_INT(np_port(&w, 0), 2222);
	/* Seen current: nothing more to do for it. */
	fx_all_pods(&w, "Running");
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_NETPOL), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_UPDATE_NETPOL), 0);
	fx_apply(&w);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(w.plan.n, 0);
	fx_world_free(&w);
}

static void test_port_change_updates(void)
{
	struct fx_world w;
	const struct tfj_action *a;
	char uid[128];

	np_world(&w);
	fx_step(&w);
	fx_all_pods(&w, "Running");
	fx_step(&w);
	TFJ_CHECK_INT(np_port(&w, 0), 2222);
	snprintf(uid, sizeof(uid), "%s", cJSON_GetObjectItem(cJSON_GetObjectItem(
		w.netpols[0], "metadata"), "uid")->valuestring);
	/* The ps moves to 3333; the workers stay on 2222. */
	set_port(w.job, "PS", 3333);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_NETPOL), 0);
	TFJ_CHECK((a = fx_action(&w.plan, TFJ_ACT_UPDATE_NETPOL, "mnist-training")) != NULL);
	TFJ_CHECK_STR(a->uid, uid);
	TFJ_CHECK_STR(a->ev_reason, "UpdatedNetworkPolicy");
	fx_apply(&w);
	TFJ_CHECK_INT(np_port(&w, 0), 2222);
	TFJ_CHECK_INT(np_port(&w, 1), 3333);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_UPDATE_NETPOL), 0);
	/* Someone edits the policy: it is put back. */
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(w.netpols[0], "spec"), "ingress");
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_UPDATE_NETPOL), 1);
	fx_apply(&w);
	TFJ_CHECK_INT(np_port(&w, 1), 3333);
	/* A policy cached without its spec (over the slim cap) is replaced too. */
	cJSON_DeleteItemFromObject(w.netpols[0], "spec");
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_UPDATE_NETPOL), 1);
	fx_world_free(&w);
}

static void test_failure_visible_pods_go_ahead(void)
{
	struct fx_world w;
	struct tfj_createfail cf;

	np_world(&w);
	memset(&cf, 0, sizeof(cf));
	tfj_createfail_netpol(&cf, "FailedCreateNetworkPolicy",
			      "Error creating networkpolicy mnist-training: forbidden");
	w.create_failure = &cf;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	/* Tried again, and the pods do not wait for it. */
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_NETPOL), 1);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 3);
	/* The apply failed again: nothing made it to the cluster. */
	for (size_t i = 0; i < w.plan.n; i++)
		if (w.plan.actions[i].kind == TFJ_ACT_CREATE_NETPOL)
			w.plan.actions[i].kind = TFJ_ACT_EVENT;
	fx_apply(&w);
	TFJ_CHECK_STR(fx_cond(&w, "NetworkPolicyFailure"), "True");
	TFJ_CHECK_STR(fx_cond_field(&w, "NetworkPolicyFailure", "reason"),
		      "FailedCreateNetworkPolicy");
	TFJ_CHECK_STR(fx_cond_field(&w, "NetworkPolicyFailure", "message"),
		      "Error creating networkpolicy mnist-training: forbidden");
	/* The phase is the pods' business, not the policy's. */
	TFJ_CHECK_STR(fx_status_str(&w, "phase"), "Created");
	/* A later create works (the record is cleared), and once the policy is
	 * seen current the condition goes. */
	tfj_createfail_netpol(&cf, NULL, NULL);
	fx_step(&w);
	TFJ_CHECK_INT((int)w.nnetpols, 1);
	TFJ_CHECK_STR(fx_cond(&w, "NetworkPolicyFailure"), "True");
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "NetworkPolicyFailure"), "");
	fx_world_free(&w);
}

static void test_not_wanted(void)
{
	struct fx_world w;

	/* The caller does not watch NetworkPolicies: the planner leaves them out. */
	fx_world_init(&w, np_job());
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_NETPOL), 0);
	fx_world_free(&w);

	/* Another controller's job: no plan at all. */
	np_world(&w);
	cJSON_AddStringToObject(fx_run_policy(w.job), "managedBy", "example.com/other");
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(w.plan.n, 0);
	fx_world_free(&w);

	/* Suspended: no pods, no policy made for them. */
	np_world(&w);
	cJSON_AddTrueToObject(fx_run_policy(w.job), "suspend");
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_NETPOL), 0);
	fx_world_free(&w);

	/* Finished: the policy stays as it is (pods may linger), even when the
	 * spec's ports changed since. */
	np_world(&w);
	fx_step(&w);
	fx_all_pods(&w, "Succeeded");
	fx_step(&w);
	TFJ_CHECK_STR(fx_status_str(&w, "phase"), "Succeeded");
	set_port(w.job, "PS", 3333);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_UPDATE_NETPOL), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_NETPOL), 0);
	fx_world_free(&w);
}

/* The report CA: asked for before the pods while the namespace lacks it. */
static void test_report_ca(void)
{
	struct fx_world w;
	size_t i, at = 0;

	np_world(&w);
	w.cfg.report_ca = 1;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_PUBLISH_CA), 1);
	for (i = 0; i < w.plan.n; i++)
		if (w.plan.actions[i].kind == TFJ_ACT_PUBLISH_CA)
			at = i;
	for (i = 0; i < at; i++)
		TFJ_CHECK(w.plan.actions[i].kind != TFJ_ACT_CREATE_POD);
	/* Published: nothing more. */
	w.report_ca_current = 1;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_PUBLISH_CA), 0);
	/* A rotation makes it stale: a running job asks again, with no pod to make. */
	fx_step(&w);
	fx_all_pods(&w, "Running");
	fx_step(&w);
	w.report_ca_current = 0;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_PUBLISH_CA), 1);
	fx_world_free(&w);

	/* Not for another controller's job, a suspended one or a finished one. */
	np_world(&w);
	w.cfg.report_ca = 1;
	cJSON_AddStringToObject(fx_run_policy(w.job), "managedBy", "example.com/other");
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(w.plan.n, 0);
	fx_world_free(&w);
	np_world(&w);
	w.cfg.report_ca = 1;
	cJSON_AddTrueToObject(fx_run_policy(w.job), "suspend");
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_PUBLISH_CA), 0);
	fx_world_free(&w);
	np_world(&w);
	w.cfg.report_ca = 1;
	w.report_ca_current = 1;
	fx_step(&w);
	fx_all_pods(&w, "Succeeded");
	fx_step(&w);
	w.report_ca_current = 0;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_PUBLISH_CA), 0);
	fx_world_free(&w);
}

/* The ps Secret its pod `name` of the world mounts ("" when none). */
static const char *pod_secret(struct fx_world *w, const char *name)
{
	cJSON *pod = fx_pod_named(w, name);
	cJSON *vol = fx_named(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "volumes"),
			      "tfjob-ps-secret");
	const char *s = cJSON_GetStringValue(
		cJSON_GetObjectItem(cJSON_GetObjectItem(vol, "secret"), "secretName"));

	return s ? s : "";
}

/* The status.psSecretName a plan's WRITE_STATUS writes, "" when none or no write. */
static const char *written_secret(const struct tfj_plan *p)
{
	const struct tfj_action *a = fx_action(p, TFJ_ACT_WRITE_STATUS, NULL);
	const char *s = a ? cJSON_GetStringValue(cJSON_GetObjectItem(a->body, "psSecretName"))
			  : NULL;

	return s ? s : "";
}

static void set_recorded(struct fx_world *w, const char *name)
{
	cJSON *st = cJSON_GetObjectItem(w->job, "status");

	if (!st)
		st = cJSON_AddObjectToObject(w->job, "status");
	cJSON_DeleteItemFromObject(st, "psSecretName");
	cJSON_AddStringToObject(st, "psSecretName", name);
}

/*
 * A new job: no name recorded, so the plan asks for a new Secret, and its
 * pods, in the same plan, mount the name the applier records from the API
 * server's answer (a next plan would put them behind every job queued
 * meanwhile). Later plans make no second Secret and keep the name.
 */
static void test_secret_before_pods(void)
{
	struct fx_world w;
	const struct tfj_action *a;
	size_t i;

	np_world(&w);
	w.cfg.ps_secret = 1;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_NOT_NULL(a = fx_action(&w.plan, TFJ_ACT_CREATE_SECRET, NULL));
	TFJ_CHECK_STR(w.plan.ps_secret, "");
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 3);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_SERVICE), 3);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_NETPOL), 1);
	/* Applied in order: the Secret (and its record) before any pod. */
	for (i = 0; i < w.plan.n; i++)
		if (w.plan.actions[i].kind == TFJ_ACT_CREATE_POD)
			TFJ_CHECK(a < &w.plan.actions[i]);
	fx_apply(&w);
	TFJ_CHECK_INT(w.secret_posts, 1);
	TFJ_CHECK_STR(fx_status_str(&w, "psSecretName"), "mnist-ps-g1");
	TFJ_CHECK_INT(w.npods, 3);
	TFJ_CHECK_STR(pod_secret(&w, "mnist-ps-0"), "mnist-ps-g1");
	TFJ_CHECK_STR(pod_secret(&w, "mnist-worker-1"), "mnist-ps-g1");
	/* The name is recorded: no second Secret (this process made it). */
	w.ps_secret_known = 1;
	fx_step(&w);
	TFJ_CHECK_INT(w.npods, 3);
	TFJ_CHECK_INT(w.secret_posts, 1);
	/* Every later status write keeps the name. */
	fx_all_pods(&w, "Running");
	fx_step(&w);
	TFJ_CHECK(w.status_writes >= 2);
	TFJ_CHECK_STR(fx_status_str(&w, "psSecretName"), "mnist-ps-g1");
	fx_world_free(&w);

	/* Suspended: no pod, no Secret. */
	np_world(&w);
	w.cfg.ps_secret = 1;
	cJSON_AddTrueToObject(fx_run_policy(w.job), "suspend");
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_SECRET), 0);
	fx_world_free(&w);
}

/*
 * A recorded name: the Secret is posted under it before the pods when
 * the caller's memo does not know it (a restart of the operator, or the
 * recheck period passed), and not when it does; a plan with no pod to
 * make asks nothing.
 */
static void test_secret_recorded(void)
{
	struct fx_world w;
	size_t i, at = 0;

	np_world(&w);
	w.cfg.ps_secret = 1;
	set_recorded(&w, "mnist-ps-x7k2q");
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_STR(w.plan.ps_secret, "mnist-ps-x7k2q");
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_SECRET), 1);
	for (i = 0; i < w.plan.n; i++)
		if (w.plan.actions[i].kind == TFJ_ACT_CREATE_SECRET)
			at = i;
	for (i = 0; i < at; i++)
		TFJ_CHECK(w.plan.actions[i].kind != TFJ_ACT_CREATE_POD);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 3);
	fx_apply(&w);
	TFJ_CHECK_STR(pod_secret(&w, "mnist-worker-0"), "mnist-ps-x7k2q");
	TFJ_CHECK_STR(fx_status_str(&w, "psSecretName"), "mnist-ps-x7k2q");
	/* Unknown but no pod to make: nothing. */
	fx_all_pods(&w, "Running");
	fx_step(&w);
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_SECRET), 0);
	/* A replica restarts: its pod is made again, after the Secret's check. */
	fx_remove(w.pods, &w.npods, fx_find(w.pods, w.npods, "mnist-worker-1"));
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_SECRET), 1);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 1);
	/* Known to exist: not asked for again. */
	w.ps_secret_known = 1;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_SECRET), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 1);
	fx_world_free(&w);
}

/*
 * A job an older operator started: pods mounting `<job>-ps-secret` and no
 * recorded name. The plan records that name (no new Secret), so a pod
 * made again shares the running pods' token.
 */
static void test_secret_legacy_adopted(void)
{
	struct fx_world w;

	np_world(&w);
	fx_step(&w); /* the older operator's pods (no ps Secret wiring here) */
	fx_all_pods(&w, "Running");
	fx_step(&w);
	TFJ_CHECK_INT(w.npods, 3);
	TFJ_CHECK_STR(fx_status_str(&w, "psSecretName"), "");
	w.cfg.ps_secret = 1;
	fx_remove(w.pods, &w.npods, fx_find(w.pods, w.npods, "mnist-worker-1"));
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_STR(written_secret(&w.plan), "mnist-ps-secret");
	TFJ_CHECK_STR(w.plan.ps_secret, "mnist-ps-secret");
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 1);
	fx_apply(&w);
	TFJ_CHECK_STR(pod_secret(&w, "mnist-worker-1"), "mnist-ps-secret");
	TFJ_CHECK_STR(fx_status_str(&w, "psSecretName"), "mnist-ps-secret");
	/* The memo did not know it: posted under that name (a 409 there is
	 * the job's), never a new one. */
	TFJ_CHECK_INT(w.secret_posts, 1);
	fx_world_free(&w);

	/* No pods: nothing to share, a new Secret as for any new job. */
	np_world(&w);
	w.cfg.ps_secret = 1;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_STR(written_secret(&w.plan), "");
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_SECRET), 1);
	fx_world_free(&w);

	/* A finished job is left as it is: no write for a name nobody mounts again. */
	np_world(&w);
	fx_step(&w);
	fx_all_pods(&w, "Succeeded");
	fx_step(&w);
	TFJ_CHECK_STR(fx_cond(&w, "Succeeded"), "True");
	w.cfg.ps_secret = 1;
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_WRITE_STATUS), 0);
	fx_world_free(&w);
}

/*
 * A recorded name that cannot be the job's (another job's prefix, not a
 * DNS name, not a string) is not mounted: the job gets a Secret of its
 * own, a Warning event says why, and the new name replaces the bad one.
 */
static void test_secret_bad_name_ignored(void)
{
	static const char *const bad[] = { "other-ps-x7k2q", "mnist-ps-X!", "kube-root-ca.crt" };
	struct fx_world w;
	const struct tfj_action *ev;
	size_t i, j;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]) + 1; i++) {
		np_world(&w);
		w.cfg.ps_secret = 1;
		if (i < sizeof(bad) / sizeof(bad[0])) {
			set_recorded(&w, bad[i]);
		} else {
			cJSON *st = cJSON_AddObjectToObject(w.job, "status");

			cJSON_AddNumberToObject(st, "psSecretName", 7);
		}
		TFJ_CHECK_INT(fx_plan(&w), 0);
		TFJ_CHECK_STR(w.plan.ps_secret, "");
		TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_POD), 3);
		TFJ_CHECK_INT(fx_count(&w.plan, TFJ_ACT_CREATE_SECRET), 1);
		/* The status write leaves the bad value out. */
		TFJ_CHECK_STR(written_secret(&w.plan), "");
		for (j = 0, ev = NULL; j < w.plan.n && !ev; j++)
			if (w.plan.actions[j].kind == TFJ_ACT_EVENT &&
			    !strcmp(w.plan.actions[j].ev_reason, "PsSecretNameIgnored"))
				ev = &w.plan.actions[j];
		TFJ_CHECK_NOT_NULL(ev);
		if (ev)
			TFJ_CHECK(strstr(ev->ev_message, "status.psSecretName ignored") != NULL);
		fx_apply(&w);
		TFJ_CHECK_STR(fx_status_str(&w, "psSecretName"), "mnist-ps-g1");
		TFJ_CHECK_INT(w.npods, 3);
		TFJ_CHECK_STR(pod_secret(&w, "mnist-ps-0"), "mnist-ps-g1");
		fx_world_free(&w);
	}
}

int main(void)
{
	TFJ_RUN(test_created_before_pods);
	TFJ_RUN(test_port_change_updates);
	TFJ_RUN(test_failure_visible_pods_go_ahead);
	TFJ_RUN(test_not_wanted);
	TFJ_RUN(test_report_ca);
	TFJ_RUN(test_secret_before_pods);
	TFJ_RUN(test_secret_recorded);
	TFJ_RUN(test_secret_legacy_adopted);
	TFJ_RUN(test_secret_bad_name_ignored);
	return tfj_test_finish();
}
