/*
 * test_podspec.c - pod and service bodies: names, labels, owner, port,
 * restart policy and TF_CONFIG (with the evaluator rule).
 */
#include <tfj/names.h>
#include <tfj/tfconfig.h>

#include "plan_fixtures.h"

static int decode(struct tfj_tfjob *job, cJSON *j)
{
	int rc = tfj_tfjob_from_json(job, j);

	cJSON_Delete(j);
	return rc;
}

static cJSON *tf_container(cJSON *pod)
{
	cJSON *c, *ctrs = cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "containers");

	cJSON_ArrayForEach(c, ctrs)
		if (!strcmp(cJSON_GetObjectItem(c, "name")->valuestring, "tensorflow"))
			return c;
	return NULL;
}

static const char *env_value(cJSON *ctr, const char *name, int *count)
{
	cJSON *e;
	const char *v = NULL;

	*count = 0;
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(ctr, "env")) {
		if (!strcmp(cJSON_GetObjectItem(e, "name")->valuestring, name)) {
			(*count)++;
			v = cJSON_GetObjectItem(e, "value")->valuestring;
		}
	}
	return v;
}

static const char *label(cJSON *obj, const char *key)
{
	cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "metadata"),
							   "labels"), key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void test_pod_identity_and_owner(void)
{
	struct tfj_tfjob job;
	cJSON *j = fx_job("mnist"), *pod = NULL, *ref;

	fx_replica(j, "PS", 1, NULL);
	fx_replica(j, "Worker", 2, "ExitCode");
	TFJ_CHECK_INT(decode(&job, j), 0);
	TFJ_CHECK_INT(tfj_podspec_pod(&pod, &job, TFJ_RT_WORKER, 1, NULL), 0);
	TFJ_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "metadata"), "name")->valuestring,
		      "mnist-worker-1");
	TFJ_CHECK_STR(label(pod, TFJ_LABEL_JOB_NAME), "mnist");
	TFJ_CHECK_STR(label(pod, TFJ_LABEL_REPLICA_TYPE), "worker");
	TFJ_CHECK_STR(label(pod, TFJ_LABEL_REPLICA_INDEX), "1");
	TFJ_CHECK_STR(label(pod, TFJ_LABEL_OPERATOR), "tfjob-controller");
	TFJ_CHECK_STR(label(pod, "app"), "mnist"); /* template labels kept */
	TFJ_CHECK(label(pod, TFJ_LABEL_JOB_ROLE) == NULL);
	TFJ_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "metadata"),
				"annotations"), "note")->valuestring, "kept");
	ref = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "metadata"),
						     "ownerReferences"), 0);
	TFJ_CHECK_STR(cJSON_GetObjectItem(ref, "kind")->valuestring, "TFJob");
	TFJ_CHECK_STR(cJSON_GetObjectItem(ref, "uid")->valuestring, "job-uid-1");
	TFJ_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(ref, "controller")));
	TFJ_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(ref, "blockOwnerDeletion")));
	/* ExitCode is the operator's policy: kubelet must not restart. */
	TFJ_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"),
					  "restartPolicy")->valuestring, "Never");
	cJSON_Delete(pod);
	/* Worker 0 is the master role when there is no chief. */
	TFJ_CHECK_INT(tfj_podspec_pod(&pod, &job, TFJ_RT_WORKER, 0, NULL), 0);
	TFJ_CHECK_STR(label(pod, TFJ_LABEL_JOB_ROLE), "master");
	cJSON_Delete(pod);
	TFJ_CHECK(tfj_podspec_pod(&pod, &job, TFJ_RT_WORKER, 2, NULL) == TFJ_EINVAL);
	TFJ_CHECK(tfj_podspec_pod(&pod, &job, TFJ_RT_CHIEF, 0, NULL) == TFJ_EINVAL);
	tfj_tfjob_free(&job);
}

static void test_chief_role_and_restart_policy(void)
{
	struct tfj_tfjob job;
	cJSON *j = fx_job("mnist"), *pod = NULL;

	fx_replica(j, "Chief", 1, "OnFailure");
	fx_replica(j, "Worker", 1, "Always");
	TFJ_CHECK_INT(decode(&job, j), 0);
	TFJ_CHECK_INT(tfj_podspec_pod(&pod, &job, TFJ_RT_CHIEF, 0, NULL), 0);
	TFJ_CHECK_STR(label(pod, TFJ_LABEL_JOB_ROLE), "master");
	TFJ_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"),
					  "restartPolicy")->valuestring, "OnFailure");
	cJSON_Delete(pod);
	TFJ_CHECK_INT(tfj_podspec_pod(&pod, &job, TFJ_RT_WORKER, 0, NULL), 0);
	TFJ_CHECK(label(pod, TFJ_LABEL_JOB_ROLE) == NULL);
	TFJ_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"),
					  "restartPolicy")->valuestring, "Always");
	cJSON_Delete(pod);
	tfj_tfjob_free(&job);
}

static void test_port_default_and_kept(void)
{
	struct tfj_tfjob job;
	cJSON *j = fx_job("mnist"), *pod = NULL, *ports, *ctr, *r, *p;

	fx_replica(j, "PS", 1, NULL);
	r = fx_replica(j, "Worker", 1, NULL);
	ctr = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r,
		"template"), "spec"), "containers"), 0);
	ports = cJSON_AddArrayToObject(ctr, "ports");
	p = cJSON_CreateObject();
	cJSON_AddItemToArray(ports, p);
	cJSON_AddStringToObject(p, "name", "tfjob-port");
	cJSON_AddNumberToObject(p, "containerPort", 3333);
	TFJ_CHECK_INT(decode(&job, j), 0);
	TFJ_CHECK_INT(tfj_podspec_port(&job, TFJ_RT_WORKER, NULL), 3333);
	TFJ_CHECK_INT(tfj_podspec_port(&job, TFJ_RT_PS, NULL), 2222);
	TFJ_CHECK_INT(tfj_podspec_pod(&pod, &job, TFJ_RT_WORKER, 0, NULL), 0);
	TFJ_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(tf_container(pod), "ports")), 1);
	cJSON_Delete(pod);
	TFJ_CHECK_INT(tfj_podspec_pod(&pod, &job, TFJ_RT_PS, 0, NULL), 0);
	p = cJSON_GetArrayItem(cJSON_GetObjectItem(tf_container(pod), "ports"), 0);
	TFJ_CHECK_STR(cJSON_GetObjectItem(p, "name")->valuestring, "tfjob-port");
	TFJ_CHECK_INT(cJSON_GetObjectItem(p, "containerPort")->valueint, 2222);
	cJSON_Delete(pod);
	tfj_tfjob_free(&job);
}

static void test_tfconfig_training_and_evaluator(void)
{
	struct tfj_podspec_opts o = { .cluster_domain = "cluster.local" };
	struct tfj_tfjob job;
	struct tfj_tfconfig cfg;
	cJSON *j = fx_job("mnist"), *pod = NULL;
	const char *v;
	char *s = NULL;
	int n;

	fx_replica(j, "Chief", 1, NULL);
	fx_replica(j, "PS", 2, NULL);
	fx_replica(j, "Worker", 2, NULL);
	fx_replica(j, "Evaluator", 1, NULL);
	TFJ_CHECK_INT(decode(&job, j), 0);
	/* A worker's cluster has no evaluator. */
	TFJ_CHECK_INT(tfj_podspec_pod(&pod, &job, TFJ_RT_WORKER, 1, &o), 0);
	v = env_value(tf_container(pod), "TF_CONFIG", &n);
	TFJ_CHECK_INT(n, 1);
	memset(&cfg, 0, sizeof(cfg));
	TFJ_CHECK_INT(tfj_tfconfig_decode(&cfg, v, strlen(v)), 0);
	TFJ_CHECK(tfj_tfconfig_find_job(&cfg, "evaluator") == NULL);
	TFJ_CHECK(tfj_tfconfig_find_job(&cfg, "chief")->nhosts == 1);
	TFJ_CHECK(tfj_tfconfig_find_job(&cfg, "ps")->nhosts == 2);
	TFJ_CHECK_STR(tfj_tfconfig_find_job(&cfg, "worker")->hosts[1],
		      "mnist-worker-1.default.svc.cluster.local:2222");
	TFJ_CHECK_STR(cfg.task_type, "worker");
	TFJ_CHECK_INT(cfg.task_index, 1);
	TFJ_CHECK_STR(cfg.environment, "cloud");
	tfj_tfconfig_free(&cfg);
	cJSON_Delete(pod);
	/* The evaluator sees the training cluster plus itself. */
	TFJ_CHECK_INT(tfj_podspec_tfconfig(&s, &job, TFJ_RT_EVALUATOR, 0, NULL), 0);
	TFJ_CHECK_INT(tfj_tfconfig_decode(&cfg, s, strlen(s)), 0);
	TFJ_CHECK(tfj_tfconfig_find_job(&cfg, "evaluator")->nhosts == 1);
	TFJ_CHECK_STR(tfj_tfconfig_find_job(&cfg, "evaluator")->hosts[0],
		      "mnist-evaluator-0.default.svc:2222");
	TFJ_CHECK(tfj_tfconfig_find_job(&cfg, "ps") != NULL);
	TFJ_CHECK_STR(cfg.task_type, "evaluator");
	tfj_tfconfig_free(&cfg);
	free(s);
	tfj_tfjob_free(&job);
}

static void test_tfconfig_single_replica_and_replace(void)
{
	struct tfj_tfjob job;
	cJSON *j = fx_job("solo"), *pod = NULL, *r, *ctr, *env, *e;
	int n;

	r = fx_replica(j, "Worker", 1, NULL);
	TFJ_CHECK_INT(decode(&job, j), 0);
	TFJ_CHECK_INT(tfj_podspec_pod(&pod, &job, TFJ_RT_WORKER, 0, NULL), 0);
	TFJ_CHECK(env_value(tf_container(pod), "TF_CONFIG", &n) == NULL);
	cJSON_Delete(pod);
	tfj_tfjob_free(&job);

	/* A TF_CONFIG in the template is replaced, never duplicated. */
	j = fx_job("pair");
	r = fx_replica(j, "Worker", 2, NULL);
	ctr = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r,
		"template"), "spec"), "containers"), 0);
	env = cJSON_AddArrayToObject(ctr, "env");
	e = cJSON_CreateObject();
	cJSON_AddItemToArray(env, e);
	cJSON_AddStringToObject(e, "name", "TF_CONFIG");
	cJSON_AddStringToObject(e, "value", "{}");
	/*
	 * The CRD accepts repeated env names, as a Pod does (env is an atomic
	 * list there), so the template may hold several TF_CONFIG entries, not
	 * next to each other: every one goes, other entries stay.
	 */
	e = cJSON_CreateObject();
	cJSON_AddItemToArray(env, e);
	cJSON_AddStringToObject(e, "name", "LOG_LEVEL");
	cJSON_AddStringToObject(e, "value", "debug");
	e = cJSON_CreateObject();
	cJSON_AddItemToArray(env, e);
	cJSON_AddStringToObject(e, "name", "TF_CONFIG");
	cJSON_AddStringToObject(e, "value", "{\"cluster\":{}}");
	TFJ_CHECK_INT(decode(&job, j), 0);
	TFJ_CHECK_INT(tfj_podspec_pod(&pod, &job, TFJ_RT_WORKER, 0, NULL), 0);
	TFJ_CHECK(env_value(tf_container(pod), "TF_CONFIG", &n) != NULL);
	TFJ_CHECK_INT(n, 1);
	TFJ_CHECK(strstr(env_value(tf_container(pod), "TF_CONFIG", &n), "pair-worker-1") != NULL);
	TFJ_CHECK_STR(env_value(tf_container(pod), "LOG_LEVEL", &n), "debug");
	TFJ_CHECK_INT(n, 1);
	cJSON_Delete(pod);
	tfj_tfjob_free(&job);
}

static void test_service(void)
{
	struct tfj_tfjob job;
	cJSON *j = fx_job("mnist"), *svc = NULL, *spec, *p;

	fx_replica(j, "PS", 1, NULL);
	fx_replica(j, "Worker", 1, NULL);
	TFJ_CHECK_INT(decode(&job, j), 0);
	TFJ_CHECK_INT(tfj_podspec_service(&svc, &job, TFJ_RT_PS, 0, NULL), 0);
	TFJ_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(svc, "metadata"), "name")->valuestring,
		      "mnist-ps-0");
	spec = cJSON_GetObjectItem(svc, "spec");
	TFJ_CHECK_STR(cJSON_GetObjectItem(spec, "clusterIP")->valuestring, "None");
	TFJ_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(spec, "publishNotReadyAddresses")));
	TFJ_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(spec, "selector"),
					  TFJ_LABEL_REPLICA_TYPE)->valuestring, "ps");
	TFJ_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(spec, "selector"),
					  TFJ_LABEL_REPLICA_INDEX)->valuestring, "0");
	p = cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "ports"), 0);
	TFJ_CHECK_INT(cJSON_GetObjectItem(p, "port")->valueint, 2222);
	TFJ_CHECK_STR(label(svc, TFJ_LABEL_JOB_NAME), "mnist");
	cJSON_Delete(svc);
	/* Worker 0's pod has job-role; its service, as Kubeflow's, does not. */
	TFJ_CHECK_INT(tfj_podspec_service(&svc, &job, TFJ_RT_WORKER, 0, NULL), 0);
	TFJ_CHECK(label(svc, TFJ_LABEL_JOB_ROLE) == NULL);
	TFJ_CHECK_STR(label(svc, TFJ_LABEL_OPERATOR), "tfjob-controller");
	cJSON_Delete(svc);
	tfj_tfjob_free(&job);
}

static void test_long_name_gets_valid_child_names(void)
{
	struct tfj_tfjob job;
	cJSON *j = fx_job("a-very-long-training-job-name-that-is-fifty-five-chars"), *pod = NULL;
	const char *name;

	fx_replica(j, "Evaluator", 1, NULL);
	fx_replica(j, "Worker", 1, NULL);
	TFJ_CHECK_INT(decode(&job, j), 0);
	TFJ_CHECK(job.spec_valid);
	TFJ_CHECK_INT(tfj_podspec_pod(&pod, &job, TFJ_RT_EVALUATOR, 0, NULL), 0);
	name = cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "metadata"), "name")->valuestring;
	TFJ_CHECK(tfj_names_is_dns1035(name));
	cJSON_Delete(pod);
	tfj_tfjob_free(&job);
}

static cJSON *named(cJSON *arr, const char *name)
{
	cJSON *it;

	cJSON_ArrayForEach(it, arr)
		if (!strcmp(cJSON_GetObjectItem(it, "name")->valuestring, name))
			return it;
	return NULL;
}

static void test_report_injection(void)
{
	struct tfj_podspec_opts o = { .report_addr = "tfjob-operator.ops.svc:9443", .report_audience = "aud-x" };
	struct tfj_tfjob job;
	cJSON *j = fx_job("mnist"), *pod = NULL, *ctr, *vol, *sat, *m, *e, *tmpl_env, *it;
	const char *v;
	int n;

	fx_replica(j, "PS", 1, NULL);
	/* A template that already sets one of our variables. */
	tmpl_env = cJSON_AddArrayToObject(tf_container(cJSON_GetObjectItem(
		fx_replica(j, "Worker", 2, NULL), "template")), "env");
	it = cJSON_CreateObject();
	cJSON_AddStringToObject(it, "name", "TFJOB_REPLICA_INDEX");
	cJSON_AddStringToObject(it, "value", "99");
	cJSON_AddItemToArray(tmpl_env, it);
	TFJ_CHECK_INT(decode(&job, j), 0);
	TFJ_CHECK_INT(tfj_podspec_pod(&pod, &job, TFJ_RT_WORKER, 1, &o), 0);
	ctr = tf_container(pod);
	v = env_value(ctr, "TFJOB_REPORT_ADDR", &n);
	TFJ_CHECK_INT(n, 1);
	TFJ_CHECK_STR(v, "tfjob-operator.ops.svc:9443");
	TFJ_CHECK_STR(env_value(ctr, "TFJOB_REPORT_TOKEN_FILE", &n), "/var/run/secrets/tfjob/token");
	TFJ_CHECK_STR(env_value(ctr, "TFJOB_JOB_NAMESPACE", &n), job.ns);
	TFJ_CHECK_STR(env_value(ctr, "TFJOB_JOB_NAME", &n), "mnist");
	TFJ_CHECK_STR(env_value(ctr, "TFJOB_JOB_UID", &n), job.uid);
	TFJ_CHECK_STR(env_value(ctr, "TFJOB_REPLICA_TYPE", &n), "worker");
	v = env_value(ctr, "TFJOB_REPLICA_INDEX", &n);
	TFJ_CHECK_INT(n, 1); /* the template's value was replaced, not duplicated */
	TFJ_CHECK_STR(v, "1");
	e = named(cJSON_GetObjectItem(ctr, "env"), "POD_NAME");
	TFJ_CHECK(e != NULL);
	TFJ_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "valueFrom"),
		      "fieldRef"), "fieldPath")->valuestring, "metadata.name");
	vol = named(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "volumes"),
		    "tfjob-report-token");
	TFJ_CHECK(vol != NULL);
	sat = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(vol,
		  "projected"), "sources"), 0), "serviceAccountToken");
	TFJ_CHECK_STR(cJSON_GetObjectItem(sat, "audience")->valuestring, "aud-x");
	TFJ_CHECK_INT(cJSON_GetObjectItem(sat, "expirationSeconds")->valueint, 3600);
	TFJ_CHECK_STR(cJSON_GetObjectItem(sat, "path")->valuestring, "token");
	/* TLS by default: the namespace's CA ConfigMap in the same volume. */
	{
		const cJSON *cm = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
			cJSON_GetObjectItem(vol, "projected"), "sources"), 1), "configMap");
		const cJSON *item = cJSON_GetArrayItem(cJSON_GetObjectItem(cm, "items"), 0);

		TFJ_CHECK_NOT_NULL(cm);
		TFJ_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cm, "name")), "tfjob-controller-report-ca");
		TFJ_CHECK_NULL(cJSON_GetObjectItem(cm, "optional"));
		TFJ_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(item, "key")), "ca.crt");
		TFJ_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(item, "path")), "ca.crt");
	}
	TFJ_CHECK_STR(env_value(ctr, "TFJOB_REPORT_CA_FILE", &n), "/var/run/secrets/tfjob/ca.crt");
	TFJ_CHECK(env_value(ctr, "TFJOB_REPORT_INSECURE", &n) == NULL && n == 0);
	m = named(cJSON_GetObjectItem(ctr, "volumeMounts"), "tfjob-report-token");
	TFJ_CHECK(m != NULL);
	TFJ_CHECK_STR(cJSON_GetObjectItem(m, "mountPath")->valuestring, "/var/run/secrets/tfjob");
	TFJ_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(m, "readOnly")));
	cJSON_Delete(pod);

	/* Default audience; and no address means nothing is injected. */
	o.report_audience = NULL;
	TFJ_CHECK_INT(tfj_podspec_pod(&pod, &job, TFJ_RT_PS, 0, &o), 0);
	vol = named(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "volumes"),
		    "tfjob-report-token");
	sat = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(vol,
		  "projected"), "sources"), 0), "serviceAccountToken");
	TFJ_CHECK_STR(cJSON_GetObjectItem(sat, "audience")->valuestring, "tfjob-report");
	cJSON_Delete(pod);
	/* --report-insecure: no CA, and the agent is told plaintext is meant. */
	o.report_insecure = 1;
	TFJ_CHECK_INT(tfj_podspec_pod(&pod, &job, TFJ_RT_PS, 0, &o), 0);
	vol = named(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "volumes"),
		    "tfjob-report-token");
	TFJ_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(vol, "projected"),
							     "sources")), 1);
	TFJ_CHECK_STR(env_value(tf_container(pod), "TFJOB_REPORT_INSECURE", &n), "true");
	TFJ_CHECK(env_value(tf_container(pod), "TFJOB_REPORT_CA_FILE", &n) == NULL && n == 0);
	cJSON_Delete(pod);
	o.report_insecure = 0;
	o.report_addr = NULL;
	TFJ_CHECK_INT(tfj_podspec_pod(&pod, &job, TFJ_RT_PS, 0, &o), 0);
	TFJ_CHECK_NULL(named(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "volumes"),
			     "tfjob-report-token"));
	TFJ_CHECK(env_value(tf_container(pod), "TFJOB_REPORT_ADDR", &n) == NULL && n == 0);
	cJSON_Delete(pod);
	tfj_tfjob_free(&job);
}

static cJSON *add_port(cJSON *ctr, const char *name, int num, const char *proto)
{
	cJSON *ports = cJSON_GetObjectItem(ctr, "ports"), *p = cJSON_CreateObject();

	if (!ports)
		ports = cJSON_AddArrayToObject(ctr, "ports");
	cJSON_AddItemToArray(ports, p);
	if (name)
		cJSON_AddStringToObject(p, "name", name);
	cJSON_AddNumberToObject(p, "containerPort", num);
	if (proto)
		cJSON_AddStringToObject(p, "protocol", proto);
	return p;
}

static cJSON *first_container(cJSON *replica)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
		replica, "template"), "spec"), "containers"), 0);
}

/* "name:port/proto,..." of a service's ports, for one exact comparison. */
static void svc_ports(char *buf, size_t cap, cJSON *svc)
{
	cJSON *p;
	size_t n = 0;

	buf[0] = 0;
	cJSON_ArrayForEach(p, cJSON_GetObjectItem(cJSON_GetObjectItem(svc, "spec"), "ports")) {
		TFJ_CHECK_INT(cJSON_GetObjectItem(p, "targetPort")->valueint,
			      cJSON_GetObjectItem(p, "port")->valueint);
		n += (size_t)snprintf(buf + n, cap - n, "%s%s:%d/%s", n ? "," : "",
				      cJSON_GetObjectItem(p, "name")->valuestring,
				      cJSON_GetObjectItem(p, "port")->valueint,
				      cJSON_GetObjectItem(p, "protocol")->valuestring);
	}
}

/* Every named port of the tensorflow container (Kubeflow's service.go L237-241). */
static void test_service_publishes_container_ports(void)
{
	struct tfj_tfjob job;
	cJSON *j = fx_job("mnist"), *svc = NULL, *r, *ctr, *side, *ctrs;
	char buf[256];

	r = fx_replica(j, "PS", 1, NULL);
	ctr = first_container(r);
	add_port(ctr, "metrics", 9090, NULL);
	add_port(ctr, NULL, 7000, NULL); /* unnamed: left out */
	add_port(ctr, "dns", 5353, "UDP");
	/* Another container's ports are not the replica's. */
	ctrs = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "template"), "spec"),
				   "containers");
	side = cJSON_CreateObject();
	cJSON_AddItemToArray(ctrs, side);
	cJSON_AddStringToObject(side, "name", "sidecar");
	cJSON_AddStringToObject(side, "image", "busybox");
	add_port(side, "admin", 8081, NULL);
	r = fx_replica(j, "Worker", 2, NULL);
	add_port(first_container(r), "metrics", 9090, NULL);
	add_port(first_container(r), "tfjob-port", 3333, NULL);
	add_port(first_container(r), "debug", 5005, NULL);
	TFJ_CHECK_INT(decode(&job, j), 0);
	TFJ_CHECK_INT(tfj_podspec_service(&svc, &job, TFJ_RT_PS, 0, NULL), 0);
	svc_ports(buf, sizeof(buf), svc);
	TFJ_CHECK_STR(buf, "metrics:9090/TCP,dns:5353/UDP,tfjob-port:2222/TCP");
	cJSON_Delete(svc);
	/* tfjob-port where the template put it, not added twice. */
	TFJ_CHECK_INT(tfj_podspec_service(&svc, &job, TFJ_RT_WORKER, 1, NULL), 0);
	svc_ports(buf, sizeof(buf), svc);
	TFJ_CHECK_STR(buf, "metrics:9090/TCP,tfjob-port:3333/TCP,debug:5005/TCP");
	cJSON_Delete(svc);
	tfj_tfjob_free(&job);
}

/* schedulingPolicy.priorityClass is the PodGroup's, never the pod's. */
static void test_priority_class_not_copied(void)
{
	struct tfj_tfjob job;
	cJSON *j = fx_job("mnist"), *pod = NULL, *sp, *r;

	sp = cJSON_AddObjectToObject(fx_run_policy(j), "schedulingPolicy");
	cJSON_AddStringToObject(sp, "priorityClass", "high");
	fx_replica(j, "PS", 1, NULL);
	r = fx_replica(j, "Worker", 1, NULL);
	cJSON_AddStringToObject(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "template"), "spec"),
				"priorityClassName", "low");
	TFJ_CHECK_INT(decode(&job, j), 0);
	TFJ_CHECK_STR(job.run.priority_class, "high");
	TFJ_CHECK_INT(tfj_podspec_pod(&pod, &job, TFJ_RT_PS, 0, NULL), 0);
	TFJ_CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "priorityClassName") == NULL);
	cJSON_Delete(pod);
	TFJ_CHECK_INT(tfj_podspec_pod(&pod, &job, TFJ_RT_WORKER, 0, NULL), 0);
	TFJ_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"),
					  "priorityClassName")->valuestring, "low");
	cJSON_Delete(pod);
	tfj_tfjob_free(&job);
}

static void check_tfconfig(const struct tfj_tfjob *job, enum tfj_rtype t, int index,
			   const char *want)
{
	struct tfj_tfconfig cfg;
	char *s = NULL;

	TFJ_CHECK_INT(tfj_podspec_tfconfig(&s, job, t, index, NULL), 0);
	TFJ_CHECK_STR(s, want);
	/* What the operator writes, the agent and runtime read back. */
	TFJ_CHECK_INT(s ? tfj_tfconfig_decode(&cfg, s, strlen(s)) : -1, 0);
	tfj_tfconfig_free(&cfg);
	free(s);
}

/*
 * enableDynamicWorker: Kubeflow's sparse form, byte for byte
 * (tensorflow.go L61-83, L125-134), but every ps sees every ps and "ps" is
 * [] rather than null without ps (podspec.c sparse_cluster).
 */
static void test_tfconfig_sparse(void)
{
	struct tfj_tfjob job;
	cJSON *j = fx_job("dyn");

	cJSON_AddTrueToObject(cJSON_GetObjectItem(j, "spec"), "enableDynamicWorker");
	fx_replica(j, "Chief", 1, NULL);
	fx_replica(j, "PS", 2, NULL);
	fx_replica(j, "Worker", 3, NULL);
	fx_replica(j, "Evaluator", 1, NULL);
	TFJ_CHECK_INT(decode(&job, j), 0);
	TFJ_CHECK_INT(job.dynamic_worker, 1);
	check_tfconfig(&job, TFJ_RT_WORKER, 2,
		       "{\"cluster\":{\"worker\":{\"2\":\"dyn-worker-2.default.svc:2222\"},"
		       "\"ps\":[\"dyn-ps-0.default.svc:2222\",\"dyn-ps-1.default.svc:2222\"]},"
		       "\"task\":{\"type\":\"worker\",\"index\":2}}");
	check_tfconfig(&job, TFJ_RT_PS, 1,
		       "{\"cluster\":{\"worker\":{},"
		       "\"ps\":[\"dyn-ps-0.default.svc:2222\",\"dyn-ps-1.default.svc:2222\"]},"
		       "\"task\":{\"type\":\"ps\",\"index\":1}}");
	check_tfconfig(&job, TFJ_RT_CHIEF, 0,
		       "{\"cluster\":{\"worker\":{},\"ps\":[]},\"task\":{\"type\":\"chief\",\"index\":0}}");
	check_tfconfig(&job, TFJ_RT_EVALUATOR, 0,
		       "{\"cluster\":{\"worker\":{},\"ps\":[]},"
		       "\"task\":{\"type\":\"evaluator\",\"index\":0}}");
	tfj_tfjob_free(&job);

	j = fx_job("dyn");
	cJSON_AddTrueToObject(cJSON_GetObjectItem(j, "spec"), "enableDynamicWorker");
	fx_replica(j, "Worker", 2, NULL);
	TFJ_CHECK_INT(decode(&job, j), 0);
	check_tfconfig(&job, TFJ_RT_WORKER, 0,
		       "{\"cluster\":{\"worker\":{\"0\":\"dyn-worker-0.default.svc:2222\"},"
		       "\"ps\":[]},\"task\":{\"type\":\"worker\",\"index\":0}}");
	tfj_tfjob_free(&job);
}

int main(void)
{
	TFJ_RUN(test_report_injection);
	TFJ_RUN(test_pod_identity_and_owner);
	TFJ_RUN(test_chief_role_and_restart_policy);
	TFJ_RUN(test_port_default_and_kept);
	TFJ_RUN(test_tfconfig_training_and_evaluator);
	TFJ_RUN(test_tfconfig_single_replica_and_replace);
	TFJ_RUN(test_service);
	TFJ_RUN(test_service_publishes_container_ports);
	TFJ_RUN(test_priority_class_not_copied);
	TFJ_RUN(test_tfconfig_sparse);
	TFJ_RUN(test_long_name_gets_valid_child_names);
	return tfj_test_finish();
}
