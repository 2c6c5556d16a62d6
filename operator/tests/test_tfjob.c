/*
 * test_tfjob.c - the TFJob decoder: normalisation, defaults, spec errors
 * that fail the job visibly, and hostile input that is rejected outright.
 */
#include <tfj/err.h>
#include <tfj/json.h>

#include "plan_fixtures.h"

static int decode_text(struct tfj_tfjob *job, const char *text)
{
	return tfj_tfjob_decode(job, text, strlen(text));
}

static int decode_obj(struct tfj_tfjob *job, cJSON *j)
{
	char *s = cJSON_PrintUnformatted(j);
	int rc = tfj_tfjob_decode(job, s, strlen(s));

	free(s);
	cJSON_Delete(j);
	return rc;
}

static void test_normalises_and_defaults(void)
{
	struct tfj_tfjob job;
	cJSON *j = fx_job("mnist"), *r;

	fx_replica(j, "ps", 2, "OnFailure");
	r = fx_replica(j, "wOrKeR", 3, NULL);
	cJSON_DeleteItemFromObject(r, "replicas"); /* default 1 */
	fx_replica(j, "MASTER", 1, "ExitCode");
	TFJ_CHECK_INT(decode_obj(&job, j), 0);
	TFJ_CHECK(job.spec_valid);
	TFJ_CHECK_STR(job.name, "mnist");
	TFJ_CHECK_STR(job.ns, "default");
	TFJ_CHECK_STR(job.uid, "job-uid-1");
	TFJ_CHECK_INT(job.generation, 1);
	TFJ_CHECK(job.rs[TFJ_RT_PS].present && job.rs[TFJ_RT_PS].replicas == 2);
	TFJ_CHECK_INT(job.rs[TFJ_RT_PS].restart, TFJ_RESTART_ONFAILURE);
	TFJ_CHECK(job.rs[TFJ_RT_WORKER].present && job.rs[TFJ_RT_WORKER].replicas == 1);
	TFJ_CHECK_INT(job.rs[TFJ_RT_WORKER].restart, TFJ_RESTART_NEVER);
	TFJ_CHECK_INT(job.rs[TFJ_RT_MASTER].restart, TFJ_RESTART_EXITCODE);
	TFJ_CHECK_INT(tfj_tfjob_chief_type(&job), TFJ_RT_MASTER);
	TFJ_CHECK_INT(job.total_replicas, 4);
	TFJ_CHECK_INT(job.run.clean_pod, TFJ_CLEAN_NONE); /* Kubeflow v1.9's TFJob default */
	TFJ_CHECK(!job.run.has_ttl && !job.run.has_deadline && !job.run.has_backoff);
	TFJ_CHECK(!job.run.suspend && !job.deleting);
	TFJ_CHECK_INT(job.success_policy, TFJ_SUCCESS_DEFAULT);
	tfj_tfjob_free(&job);
}

static void test_run_policy(void)
{
	struct tfj_tfjob job;
	cJSON *j = fx_job("mnist"), *rp, *sp;

	fx_replica(j, "Worker", 2, NULL);
	rp = fx_run_policy(j);
	cJSON_AddStringToObject(rp, "cleanPodPolicy", "All");
	cJSON_AddNumberToObject(rp, "ttlSecondsAfterFinished", 0);
	cJSON_AddNumberToObject(rp, "activeDeadlineSeconds", 600);
	cJSON_AddNumberToObject(rp, "backoffLimit", 3);
	cJSON_AddTrueToObject(rp, "suspend");
	cJSON_AddStringToObject(rp, "managedBy", "kubeflow.org/training-operator");
	sp = cJSON_AddObjectToObject(rp, "schedulingPolicy");
	cJSON_AddStringToObject(sp, "priorityClass", "high");
	cJSON_AddStringToObject(cJSON_GetObjectItem(j, "spec"), "successPolicy", "AllWorkers");
	TFJ_CHECK_INT(decode_obj(&job, j), 0);
	TFJ_CHECK(job.spec_valid);
	TFJ_CHECK_INT(job.run.clean_pod, TFJ_CLEAN_ALL);
	TFJ_CHECK(job.run.has_ttl && job.run.ttl_seconds == 0);
	TFJ_CHECK(job.run.has_deadline && job.run.active_deadline_seconds == 600);
	TFJ_CHECK(job.run.has_backoff && job.run.backoff_limit == 3);
	TFJ_CHECK(job.run.suspend);
	TFJ_CHECK_STR(job.run.managed_by, "kubeflow.org/training-operator");
	TFJ_CHECK_STR(job.run.priority_class, "high");
	TFJ_CHECK_INT(job.success_policy, TFJ_SUCCESS_ALLWORKERS);
	tfj_tfjob_free(&job);
}

/* The cleanPodPolicy a one-worker job decodes to, given its value (NULL: absent). */
static int clean_policy_of(const char *value)
{
	struct tfj_tfjob job;
	cJSON *j = fx_job("mnist");
	int policy = -1;

	fx_replica(j, "Worker", 1, NULL);
	if (value)
		cJSON_AddStringToObject(fx_run_policy(j), "cleanPodPolicy", value);
	if (decode_obj(&job, j) == 0 && job.spec_valid)
		policy = (int)job.run.clean_pod;
	tfj_tfjob_free(&job);
	return policy;
}

/* Kubeflow accepts "" for both enums and reads it as the default. */
static void test_empty_strings_mean_default(void)
{
	struct tfj_tfjob job;
	cJSON *j = fx_job("mnist");

	fx_replica(j, "Worker", 2, "");
	fx_replica(j, "PS", 1, "OnFailure");
	TFJ_CHECK_INT(decode_obj(&job, j), 0);
	TFJ_CHECK(job.spec_valid);
	TFJ_CHECK_INT(job.rs[TFJ_RT_WORKER].restart, TFJ_RESTART_NEVER);
	TFJ_CHECK_INT(job.rs[TFJ_RT_PS].restart, TFJ_RESTART_ONFAILURE);
	tfj_tfjob_free(&job);

	TFJ_CHECK_INT(clean_policy_of(NULL), TFJ_CLEAN_NONE); /* Kubeflow v1.9's TFJob default */
	TFJ_CHECK_INT(clean_policy_of(""), TFJ_CLEAN_NONE);
	TFJ_CHECK_INT(clean_policy_of("None"), TFJ_CLEAN_NONE);
	TFJ_CHECK_INT(clean_policy_of("Running"), TFJ_CLEAN_RUNNING);
	TFJ_CHECK_INT(clean_policy_of("All"), TFJ_CLEAN_ALL);
	TFJ_CHECK_INT(clean_policy_of("Some"), -1);
}

/* Builds a job, lets `mutate` break it, and expects a spec error containing `want`. */
static void expect_spec_error(void (*mutate)(cJSON *), const char *want)
{
	struct tfj_tfjob job;
	cJSON *j = fx_job("mnist");

	fx_replica(j, "Worker", 2, NULL);
	mutate(j);
	TFJ_CHECK_INT(decode_obj(&job, j), 0);
	TFJ_CHECK(!job.spec_valid);
	if (!strstr(job.spec_error, want))
		tfj_test_fail(__FILE__, __LINE__, "spec error '%s' lacks '%s'", job.spec_error, want);
	tfj_tfjob_free(&job);
}

static cJSON *specs_of(cJSON *j)
{
	return cJSON_GetObjectItem(cJSON_GetObjectItem(j, "spec"), "tfReplicaSpecs");
}

static void m_unknown_type(cJSON *j) { fx_replica(j, "Launcher", 1, NULL); }
static void m_chief_and_master(cJSON *j)
{
	fx_replica(j, "Chief", 1, NULL);
	fx_replica(j, "Master", 1, NULL);
}
static void m_two_chiefs(cJSON *j) { fx_replica(j, "Chief", 2, NULL); }
static void m_dup_type(cJSON *j) { fx_replica(j, "worker", 1, NULL); }
static void m_too_many(cJSON *j)
{
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(specs_of(j), "Worker"), "replicas",
				  cJSON_CreateNumber(TFJ_TFJOB_MAX_REPLICAS + 1));
}
static void m_total_too_many(cJSON *j)
{
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(specs_of(j), "Worker"), "replicas",
				  cJSON_CreateNumber(TFJ_TFJOB_MAX_REPLICAS));
	fx_replica(j, "PS", 1, NULL);
}
static void m_negative(cJSON *j)
{
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(specs_of(j), "Worker"), "replicas",
				  cJSON_CreateNumber(-1));
}
static void m_fraction(cJSON *j)
{
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(specs_of(j), "Worker"), "replicas",
				  cJSON_CreateNumber(1.5));
}
static void m_bad_policy(cJSON *j)
{
	cJSON_AddStringToObject(cJSON_GetObjectItem(specs_of(j), "Worker"), "restartPolicy",
				"Sometimes");
}
static void m_no_tensorflow(cJSON *j)
{
	cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
		cJSON_GetObjectItem(specs_of(j), "Worker"), "template"), "spec"), "containers"), 0);

	cJSON_ReplaceItemInObject(c, "name", cJSON_CreateString("trainer"));
}
static void m_no_containers(cJSON *j)
{
	cJSON *s = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(specs_of(j),
							   "Worker"), "template"), "spec");

	cJSON_ReplaceItemInObject(s, "containers", cJSON_CreateArray());
}
static void m_only_ps(cJSON *j)
{
	cJSON_DeleteItemFromObject(specs_of(j), "Worker");
	fx_replica(j, "PS", 1, NULL);
}
static void m_bad_clean(cJSON *j) { cJSON_AddStringToObject(fx_run_policy(j), "cleanPodPolicy", "Some"); }
static void m_bad_success(cJSON *j)
{
	cJSON_AddStringToObject(cJSON_GetObjectItem(j, "spec"), "successPolicy", "AnyWorker");
}
static void m_bad_dynamic(cJSON *j)
{
	cJSON_AddStringToObject(cJSON_GetObjectItem(j, "spec"), "enableDynamicWorker", "yes");
}
static void m_bad_backoff(cJSON *j) { cJSON_AddNumberToObject(fx_run_policy(j), "backoffLimit", -1); }
static void m_bad_suspend(cJSON *j) { cJSON_AddStringToObject(fx_run_policy(j), "suspend", "yes"); }
static void m_bad_port(cJSON *j)
{
	cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
		cJSON_GetObjectItem(specs_of(j), "Worker"), "template"), "spec"), "containers"), 0);
	cJSON *p = cJSON_CreateObject();

	cJSON_AddStringToObject(p, "name", "tfjob-port");
	cJSON_AddNumberToObject(p, "containerPort", 70000);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(c, "ports"), p);
}
static void m_long_name(cJSON *j)
{
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, "metadata"), "name",
				  cJSON_CreateString("x1234567890123456789012345678901234567890"
						     "12345678901234567890123"));
}
static void m_no_spec(cJSON *j) { cJSON_DeleteItemFromObject(j, "spec"); }
static cJSON *worker_container(cJSON *j)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
		cJSON_GetObjectItem(specs_of(j), "Worker"), "template"), "spec"), "containers"), 0);
}
static void m_no_image(cJSON *j) { cJSON_DeleteItemFromObject(worker_container(j), "image"); }
static void m_empty_image(cJSON *j)
{
	cJSON_ReplaceItemInObject(worker_container(j), "image", cJSON_CreateString(""));
}
static void m_two_evaluators(cJSON *j) { fx_replica(j, "Evaluator", 2, NULL); }

static void test_spec_errors(void)
{
	expect_spec_error(m_unknown_type, "unknown replica type 'Launcher'");
	expect_spec_error(m_chief_and_master, "Chief and Master");
	expect_spec_error(m_two_chiefs, "Chief.replicas is 2; at most 1");
	expect_spec_error(m_dup_type, "given twice");
	expect_spec_error(m_too_many, "replicas must be 0..4096");
	expect_spec_error(m_total_too_many, "in all; at most 4096");
	expect_spec_error(m_negative, "replicas");
	expect_spec_error(m_fraction, "replicas");
	expect_spec_error(m_bad_policy, "restartPolicy 'Sometimes'");
	expect_spec_error(m_no_tensorflow, "no container is named 'tensorflow'");
	expect_spec_error(m_no_containers, "no containers");
	expect_spec_error(m_only_ps, "can never succeed");
	expect_spec_error(m_bad_clean, "cleanPodPolicy 'Some'");
	expect_spec_error(m_bad_success, "successPolicy 'AnyWorker'");
	expect_spec_error(m_bad_dynamic, "enableDynamicWorker");
	expect_spec_error(m_bad_backoff, "backoffLimit");
	expect_spec_error(m_bad_suspend, "suspend");
	expect_spec_error(m_bad_port, "tfjob-port");
	expect_spec_error(m_long_name, "metadata.name");
	expect_spec_error(m_no_spec, "spec");
	expect_spec_error(m_no_image, "container 'tensorflow' has no image");
	expect_spec_error(m_empty_image, "container 'tensorflow' has no image");
	expect_spec_error(m_two_evaluators, "Evaluator.replicas is 2; at most 1");
}

static void test_hostile_input_rejected(void)
{
	struct tfj_tfjob job;
	char *deep;
	size_t i, n = 200;

	TFJ_CHECK(decode_text(&job, "") == TFJ_EPARSE);
	TFJ_CHECK(decode_text(&job, "{\"kind\":") == TFJ_EPARSE);
	TFJ_CHECK(decode_text(&job, "[1,2]") == TFJ_ETYPE);
	TFJ_CHECK(decode_text(&job, "{\"kind\":\"TFJob\"}") == TFJ_ENOTFOUND);
	TFJ_CHECK(decode_text(&job, "{\"kind\":\"PyTorchJob\",\"metadata\":{}}") == TFJ_EINVAL);
	TFJ_CHECK(decode_text(&job, "{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\"}}") ==
		  TFJ_ENOTFOUND);
	TFJ_CHECK(decode_text(&job, "{\"metadata\":{\"name\":\"\",\"namespace\":\"b\","
				    "\"uid\":\"u\"}}") == TFJ_EINVAL);
	TFJ_CHECK(decode_text(&job, "{\"metadata\":{\"name\":7,\"namespace\":\"b\","
				    "\"uid\":\"u\"}}") == TFJ_ETYPE);
	TFJ_CHECK(job.doc == NULL); /* zeroed on failure */
	deep = malloc(2 * n + 1);
	for (i = 0; i < n; i++) {
		deep[i] = '[';
		deep[n + i] = ']';
	}
	deep[2 * n] = '\0';
	TFJ_CHECK(decode_text(&job, deep) == TFJ_ERANGE);
	free(deep);
	TFJ_CHECK(tfj_tfjob_decode(&job, "{}", TFJ_TFJOB_MAX_BYTES + 1) == TFJ_ETOOBIG);
	TFJ_CHECK(tfj_tfjob_from_json(&job, NULL) == TFJ_EINVAL);
	tfj_tfjob_free(&job);
	tfj_tfjob_free(NULL);
}

static void test_status_and_deletion_read(void)
{
	struct tfj_tfjob job;
	const char *text =
		"{\"kind\":\"TFJob\",\"metadata\":{\"name\":\"m\",\"namespace\":\"ns\",\"uid\":\"u\","
		"\"deletionTimestamp\":\"2024-01-01T00:00:00Z\"},"
		"\"spec\":{\"tfReplicaSpecs\":{\"Worker\":{\"template\":{\"spec\":{\"containers\":"
		"[{\"name\":\"tensorflow\",\"image\":\"i\"}]}}}}},"
		"\"status\":{\"conditions\":[{\"type\":\"Running\",\"status\":\"True\","
		"\"reason\":\"TFJobRunning\",\"lastTransitionTime\":\"2024-01-01T00:00:00Z\"}],"
		"\"replicaStatuses\":{\"Worker\":{\"active\":1,\"restarts\":2,"
		"\"completedIndexes\":\"0\"}},\"startTime\":\"2024-01-01T00:00:00Z\"}}";

	TFJ_CHECK_INT(decode_text(&job, text), 0);
	TFJ_CHECK(job.deleting);
	TFJ_CHECK(job.spec_valid);
	TFJ_CHECK(tfj_jobstatus_is(&job.status, TFJ_COND_RUNNING));
	TFJ_CHECK_INT(job.status.rs[TFJ_RT_WORKER].restarts, 2);
	TFJ_CHECK(tfj_jobstatus_completed(&job.status.rs[TFJ_RT_WORKER], 0));
	TFJ_CHECK_INT(job.status.start_time, 1704067200);
	tfj_tfjob_free(&job);
}

/* The job "mnist" with status.psSecretName `v` (NULL: none), decoded. */
static int decode_ps_secret(struct tfj_tfjob *job, cJSON *v)
{
	cJSON *j = fx_job("mnist");

	fx_replica(j, "Worker", 1, NULL);
	if (v)
		cJSON_AddItemToObject(cJSON_AddObjectToObject(j, "status"), "psSecretName", v);
	return decode_obj(job, j);
}

/*
 * status.psSecretName is used only when it can be the job's Secret (a
 * DNS-1123 subdomain that starts with "<job>-ps-"); anything else is left
 * out with a reason, and the rest of the status is read all the same.
 * The status encoding writes it back, so every status write keeps it.
 */
static void test_ps_secret_name_read(void)
{
	struct tfj_tfjob job;
	char long_name[300];
	cJSON *enc = NULL;

	TFJ_CHECK_INT(decode_ps_secret(&job, NULL), 0);
	TFJ_CHECK_STR(job.status.ps_secret, "");
	TFJ_CHECK_STR(job.ps_secret_ignored, "");
	tfj_tfjob_free(&job);

	TFJ_CHECK_INT(decode_ps_secret(&job, cJSON_CreateString("mnist-ps-q8z4r")), 0);
	TFJ_CHECK_STR(job.status.ps_secret, "mnist-ps-q8z4r");
	TFJ_CHECK_STR(job.ps_secret_ignored, "");
	TFJ_CHECK_INT(tfj_jobstatus_encode(&enc, &job.status), 0);
	TFJ_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(enc, "psSecretName")),
		      "mnist-ps-q8z4r");
	cJSON_Delete(enc);
	tfj_tfjob_free(&job);

	/* The fixed name an older operator used is the job's too. */
	TFJ_CHECK_INT(decode_ps_secret(&job, cJSON_CreateString("mnist-ps-secret")), 0);
	TFJ_CHECK_STR(job.status.ps_secret, "mnist-ps-secret");
	tfj_tfjob_free(&job);

	TFJ_CHECK_INT(decode_ps_secret(&job, cJSON_CreateString("")), 0);
	TFJ_CHECK_STR(job.status.ps_secret, "");
	TFJ_CHECK_STR(job.ps_secret_ignored, "");
	tfj_tfjob_free(&job);

	TFJ_CHECK_INT(decode_ps_secret(&job, cJSON_CreateString("cifar-ps-q8z4r")), 0);
	TFJ_CHECK_STR(job.status.ps_secret, "");
	TFJ_CHECK(strstr(job.ps_secret_ignored, "does not start with mnist-ps-") != NULL);
	TFJ_CHECK(job.spec_valid);
	tfj_tfjob_free(&job);

	TFJ_CHECK_INT(decode_ps_secret(&job, cJSON_CreateString("mnist-ps-/../x")), 0);
	TFJ_CHECK_STR(job.status.ps_secret, "");
	TFJ_CHECK(strstr(job.ps_secret_ignored, "not a DNS-1123 subdomain") != NULL);
	tfj_tfjob_free(&job);

	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	memcpy(long_name, "mnist-ps-", 9);
	TFJ_CHECK_INT(decode_ps_secret(&job, cJSON_CreateString(long_name)), 0);
	TFJ_CHECK_STR(job.status.ps_secret, "");
	TFJ_CHECK(strstr(job.ps_secret_ignored, "not a DNS-1123 subdomain") != NULL);
	tfj_tfjob_free(&job);

	TFJ_CHECK_INT(decode_ps_secret(&job, cJSON_CreateNumber(3)), 0);
	TFJ_CHECK_STR(job.status.ps_secret, "");
	TFJ_CHECK(strstr(job.ps_secret_ignored, "not a string") != NULL);
	tfj_tfjob_free(&job);
}

static void test_type_names(void)
{
	enum tfj_rtype t;

	TFJ_CHECK_INT(tfj_tfjob_type_parse(&t, "evaluator"), 0);
	TFJ_CHECK_INT(t, TFJ_RT_EVALUATOR);
	TFJ_CHECK_INT(tfj_tfjob_type_parse(&t, "Ps"), 0);
	TFJ_CHECK_INT(t, TFJ_RT_PS);
	TFJ_CHECK(tfj_tfjob_type_parse(&t, "workers") == TFJ_EINVAL);
	TFJ_CHECK_STR(tfj_tfjob_type_name(TFJ_RT_PS), "PS");
	TFJ_CHECK_STR(tfj_tfjob_type_lower(TFJ_RT_MASTER), "master");
	TFJ_CHECK(tfj_tfjob_type_is_chief(TFJ_RT_MASTER) && !tfj_tfjob_type_is_chief(TFJ_RT_PS));
}

/* Adds n env entries {"name": "E<i>", "value": ""} to the worker's first container. */
static void add_env(cJSON *replica, int n)
{
	cJSON *ctr = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
		cJSON_GetObjectItem(replica, "template"), "spec"), "containers"), 0);
	cJSON *env = cJSON_GetObjectItem(ctr, "env"), *e;
	char name[32];

	if (!env)
		env = cJSON_AddArrayToObject(ctr, "env");
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "E%d", i);
		e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "name", name);
		cJSON_AddStringToObject(e, "value", "");
		cJSON_AddItemToArray(env, e);
	}
}

/*
 * Issue 27's job: 64 workers whose template has 12,000 env entries (385 KB).
 * Its spec is over the size the operator serves: decoded from text, the
 * spec is never parsed, the job is invalid with a message that says what to
 * do, and metadata and status are still there for the status write. A spec
 * under the size decodes as usual.
 */
static void test_spec_size_cap(void)
{
	struct tfj_tfjob job;
	cJSON *j = fx_job("fat"), *r;

	r = fx_replica(j, "Worker", 64, NULL);
	add_env(r, 12000);
	cJSON_AddItemToObject(j, "status", cJSON_Parse("{\"conditions\":[{\"type\":\"Created\","
						       "\"status\":\"True\"}]}"));
	TFJ_CHECK_INT(decode_obj(&job, j), 0);
	TFJ_CHECK_INT(job.spec_valid, 0);
	TFJ_CHECK(strstr(job.spec_error, "spec: more than 262144 bytes of JSON") != NULL);
	TFJ_CHECK(strstr(job.spec_error, "envFrom") != NULL);
	TFJ_CHECK(cJSON_GetObjectItem(job.doc, "spec") == NULL);
	TFJ_CHECK(tfj_json_text_size(job.doc, 1 << 20) < 1024);
	TFJ_CHECK_STR(job.uid, "job-uid-1");
	TFJ_CHECK(tfj_jobstatus_is(&job.status, TFJ_COND_CREATED));
	TFJ_CHECK_INT(job.total_replicas, 0);
	tfj_tfjob_free(&job);

	/* 4,000 entries (about 128 KB) are served. */
	j = fx_job("fine");
	r = fx_replica(j, "Worker", 64, NULL);
	add_env(r, 4000);
	TFJ_CHECK_INT(decode_obj(&job, j), 0);
	TFJ_CHECK_INT(job.spec_valid, 1);
	TFJ_CHECK_INT(job.total_replicas, 64);
	tfj_tfjob_free(&job);

	/* The informer's mark alone (no spec) fails the job the same way. */
	TFJ_CHECK_INT(decode_text(&job, "{\"kind\":\"TFJob\",\"metadata\":{\"name\":\"m\","
				  "\"namespace\":\"n\",\"uid\":\"u\"},"
				  "\"" TFJ_TFJOB_OVERSIZE_KEY "\":300000}"), 0);
	TFJ_CHECK_INT(job.spec_valid, 0);
	TFJ_CHECK(strstr(job.spec_error, "more than 262144 bytes") != NULL);
	tfj_tfjob_free(&job);
}

int main(void)
{
	TFJ_RUN(test_normalises_and_defaults);
	TFJ_RUN(test_run_policy);
	TFJ_RUN(test_empty_strings_mean_default);
	TFJ_RUN(test_spec_errors);
	TFJ_RUN(test_hostile_input_rejected);
	TFJ_RUN(test_status_and_deletion_read);
	TFJ_RUN(test_ps_secret_name_read);
	TFJ_RUN(test_type_names);
	TFJ_RUN(test_spec_size_cap);
	return tfj_test_finish();
}
