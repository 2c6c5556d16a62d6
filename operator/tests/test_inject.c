/*
 * test_inject.c - the injected agent (tfjob/inject.c): annotation and
 * default, the init container, the wrapped command, and the decoder's
 * refusals (inject without a command, unknown annotation values).
 */
#include "plan_fixtures.h"
#include "tfjob/inject.h"

static cJSON *spec_of(cJSON *pod)
{
	return cJSON_GetObjectItem(pod, "spec");
}

static cJSON *tf_ctr(cJSON *pod)
{
	return fx_named(cJSON_GetObjectItem(spec_of(pod), "containers"), "tensorflow");
}

/* A job whose replicas' tensorflow containers run `cmd` (JSON array or NULL) with `args`. */
static cJSON *job_with(const char *agent, const char *cmd, const char *args)
{
	cJSON *j = fx_job("tf"), *r, *c, *meta, *ann;
	const char *types[] = { "Chief", "PS", "Worker" };
	size_t i;

	for (i = 0; i < 3; i++) {
		r = fx_replica(j, types[i], 1, NULL);
		c = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
			cJSON_GetObjectItem(r, "template"), "spec"), "containers"), 0);
		if (cmd)
			cJSON_AddItemToObject(c, "command", cJSON_Parse(cmd));
		if (args)
			cJSON_AddItemToObject(c, "args", cJSON_Parse(args));
	}
	if (agent) {
		meta = cJSON_GetObjectItem(j, "metadata");
		ann = cJSON_AddObjectToObject(meta, "annotations");
		cJSON_AddStringToObject(ann, TFJ_TFJOB_ANN_AGENT, agent);
	}
	return j;
}

static int decode(struct tfj_tfjob *job, cJSON *j)
{
	int rc = tfj_tfjob_from_json(job, j);

	cJSON_Delete(j);
	return rc;
}

static char *joined(const cJSON *arr)
{
	char *s = cJSON_PrintUnformatted(arr);

	TFJ_CHECK(s != NULL);
	return s;
}

static void test_annotation_wraps_command_and_args(void)
{
	struct tfj_podspec_opts o = { 0 };
	struct tfj_tfjob job;
	cJSON *j = job_with("inject", "[\"python\",\"/opt/train.py\"]", "[\"--steps\",\"30\"]");
	cJSON *pod = NULL, *c, *init, *vol, *m, *sc;
	char *s;

	cJSON_AddStringToObject(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "metadata"),
						    "annotations"),
				TFJ_TFJOB_ANN_PROGRESS_REGEX, "step (?<step>\\d+)");
	TFJ_CHECK_INT(decode(&job, j), 0);
	TFJ_CHECK_INT(job.spec_valid, 1);
	TFJ_CHECK_INT(job.agent, TFJ_AGENT_INJECT);
	o.agent_image = "localhost/tfjob-agent:dev";
	TFJ_CHECK_INT(tfj_podspec_pod(&pod, &job, TFJ_RT_WORKER, 0, &o), 0);
	c = tf_ctr(pod);
	s = joined(cJSON_GetObjectItem(c, "command"));
	TFJ_CHECK_STR(s, "[\"/tfj-agent/ld.so\",\"--library-path\",\"/tfj-agent/lib\","
		      "\"/tfj-agent/tfjob-agent\",\"--progress-regex\",\"step (?<step>\\\\d+)\","
		      "\"--\",\"python\",\"/opt/train.py\",\"--steps\",\"30\"]");
	free(s);
	TFJ_CHECK(cJSON_GetObjectItem(c, "args") == NULL);
	m = fx_named(cJSON_GetObjectItem(c, "volumeMounts"), TFJ_INJECT_VOLUME);
	TFJ_CHECK(m != NULL);
	TFJ_CHECK_STR(cJSON_GetObjectItem(m, "mountPath")->valuestring, "/tfj-agent");
	TFJ_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(m, "readOnly")));
	vol = fx_named(cJSON_GetObjectItem(spec_of(pod), "volumes"), TFJ_INJECT_VOLUME);
	TFJ_CHECK(cJSON_IsObject(cJSON_GetObjectItem(vol, "emptyDir")));
	/* Bounded: the copy cannot fill the node's disk. */
	TFJ_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(vol, "emptyDir"),
							       "sizeLimit")), "64Mi");
	init = cJSON_GetArrayItem(cJSON_GetObjectItem(spec_of(pod), "initContainers"), 0);
	TFJ_CHECK_STR(cJSON_GetObjectItem(init, "name")->valuestring, TFJ_INJECT_INIT);
	TFJ_CHECK_STR(cJSON_GetObjectItem(init, "image")->valuestring, "localhost/tfjob-agent:dev");
	s = joined(cJSON_GetObjectItem(init, "command"));
	TFJ_CHECK_STR(s, "[\"/usr/bin/tfjob-agent\",\"--install\",\"/tfj-agent\"]");
	free(s);
	m = fx_named(cJSON_GetObjectItem(init, "volumeMounts"), TFJ_INJECT_VOLUME);
	TFJ_CHECK(m != NULL && cJSON_GetObjectItem(m, "readOnly") == NULL);
	/* Pod Security "restricted": every field it checks on a container. */
	sc = cJSON_GetObjectItem(init, "securityContext");
	TFJ_CHECK(cJSON_IsFalse(cJSON_GetObjectItem(sc, "allowPrivilegeEscalation")));
	TFJ_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(sc, "runAsNonRoot")));
	TFJ_CHECK_INT(cJSON_GetObjectItem(sc, "runAsUser")->valueint, 65532);
	s = joined(cJSON_GetObjectItem(cJSON_GetObjectItem(sc, "capabilities"), "drop"));
	TFJ_CHECK_STR(s, "[\"ALL\"]");
	free(s);
	TFJ_CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(sc, "seccompProfile"),
					  "type")->valuestring, "RuntimeDefault");
	cJSON_Delete(pod);
	/* No agent image configured: the pod cannot be built, and says why. */
	o.agent_image = NULL;
	TFJ_CHECK_INT(tfj_podspec_pod(&pod, &job, TFJ_RT_PS, 0, &o), TFJ_EINVAL);
	TFJ_CHECK(pod == NULL);
	TFJ_CHECK(strstr(tfj_err_detail(), "--agent-image") != NULL);
	tfj_tfjob_free(&job);
}

static void test_termination_path_and_existing_init(void)
{
	struct tfj_podspec_opts o = { 0 };
	struct tfj_tfjob job;
	cJSON *j = job_with("inject", "[\"python\"]", NULL), *pod = NULL, *tmpl, *inits;
	char *s;

	/* The worker's template moves the termination message and has an init container. */
	tmpl = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
		cJSON_GetObjectItem(j, "spec"), "tfReplicaSpecs"), "Worker"), "template");
	cJSON_AddStringToObject(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(tmpl,
		"spec"), "containers"), 0), "terminationMessagePath", "/tmp/term");
	cJSON_AddItemToObject(cJSON_GetObjectItem(tmpl, "spec"), "initContainers",
			      cJSON_Parse("[{\"name\":\"fetch\",\"image\":\"busybox\"}]"));
	TFJ_CHECK_INT(decode(&job, j), 0);
	o.agent_image = "agent:1";
	TFJ_CHECK_INT(tfj_podspec_pod(&pod, &job, TFJ_RT_WORKER, 0, &o), 0);
	s = joined(cJSON_GetObjectItem(tf_ctr(pod), "command"));
	TFJ_CHECK_STR(s, "[\"/tfj-agent/ld.so\",\"--library-path\",\"/tfj-agent/lib\","
		      "\"/tfj-agent/tfjob-agent\",\"--termination-log\",\"/tmp/term\",\"--\","
		      "\"python\"]");
	free(s);
	inits = cJSON_GetObjectItem(spec_of(pod), "initContainers");
	TFJ_CHECK_INT(cJSON_GetArraySize(inits), 2);
	TFJ_CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(inits, 0), "name")->valuestring,
		      TFJ_INJECT_INIT);
	TFJ_CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(inits, 1), "name")->valuestring,
		      "fetch");
	cJSON_Delete(pod);
	tfj_tfjob_free(&job);
}

static void test_default_and_opt_out(void)
{
	struct tfj_podspec_opts o = { 0 };
	struct tfj_tfjob job;
	cJSON *pod = NULL;

	o.agent_image = "agent:1";
	/* No annotation, default off: untouched. */
	TFJ_CHECK_INT(decode(&job, job_with(NULL, "[\"python\"]", NULL)), 0);
	TFJ_CHECK_INT(tfj_inject_wanted(&job, TFJ_RT_WORKER, &o), 0);
	TFJ_CHECK_INT(tfj_podspec_pod(&pod, &job, TFJ_RT_WORKER, 0, &o), 0);
	TFJ_CHECK(cJSON_GetObjectItem(spec_of(pod), "initContainers") == NULL);
	cJSON_Delete(pod);
	/* Default on: injected. */
	o.agent_inject_default = 1;
	TFJ_CHECK_INT(tfj_podspec_pod(&pod, &job, TFJ_RT_WORKER, 0, &o), 0);
	TFJ_CHECK(fx_named(cJSON_GetObjectItem(spec_of(pod), "initContainers"), TFJ_INJECT_INIT) != NULL);
	cJSON_Delete(pod);
	tfj_tfjob_free(&job);
	/* Default on, annotation none: untouched. */
	TFJ_CHECK_INT(decode(&job, job_with("none", "[\"python\"]", NULL)), 0);
	TFJ_CHECK_INT(job.spec_valid, 1);
	TFJ_CHECK_INT(tfj_inject_wanted(&job, TFJ_RT_WORKER, &o), 0);
	TFJ_CHECK_INT(tfj_podspec_pod(&pod, &job, TFJ_RT_WORKER, 0, &o), 0);
	TFJ_CHECK(cJSON_GetObjectItem(spec_of(pod), "initContainers") == NULL);
	TFJ_CHECK_STR(cJSON_GetArrayItem(cJSON_GetObjectItem(tf_ctr(pod), "command"),
					 0)->valuestring, "python");
	cJSON_Delete(pod);
	tfj_tfjob_free(&job);
	/* Default on, no command (the image's entrypoint): left alone, still valid. */
	TFJ_CHECK_INT(decode(&job, job_with(NULL, NULL, "[\"--steps\",\"3\"]")), 0);
	TFJ_CHECK_INT(job.spec_valid, 1);
	TFJ_CHECK_INT(tfj_inject_wanted(&job, TFJ_RT_WORKER, &o), 0);
	TFJ_CHECK_INT(tfj_podspec_pod(&pod, &job, TFJ_RT_WORKER, 0, &o), 0);
	TFJ_CHECK(cJSON_GetObjectItem(tf_ctr(pod), "command") == NULL);
	cJSON_Delete(pod);
	tfj_tfjob_free(&job);
}

static void test_decoder_refusals(void)
{
	struct tfj_tfjob job;

	/* inject without a command: InvalidSpec naming the replica type. */
	TFJ_CHECK_INT(decode(&job, job_with("inject", NULL, "[\"x\"]")), 0);
	TFJ_CHECK_INT(job.spec_valid, 0);
	TFJ_CHECK(strstr(job.spec_error, "inject needs a command") != NULL);
	TFJ_CHECK(strstr(job.spec_error, "Chief") != NULL);
	tfj_tfjob_free(&job);
	/* An empty command is no command. */
	TFJ_CHECK_INT(decode(&job, job_with("inject", "[]", NULL)), 0);
	TFJ_CHECK_INT(job.spec_valid, 0);
	tfj_tfjob_free(&job);
	/* Unknown value. */
	TFJ_CHECK_INT(decode(&job, job_with("yes", "[\"python\"]", NULL)), 0);
	TFJ_CHECK_INT(job.spec_valid, 0);
	TFJ_CHECK(strstr(job.spec_error, "want inject or none") != NULL);
	tfj_tfjob_free(&job);
	/* none without a command is fine. */
	TFJ_CHECK_INT(decode(&job, job_with("none", NULL, NULL)), 0);
	TFJ_CHECK_INT(job.spec_valid, 1);
	TFJ_CHECK_INT(job.agent, TFJ_AGENT_NONE);
	tfj_tfjob_free(&job);
}

static void test_regex_annotation_bounded(void)
{
	struct tfj_tfjob job;
	cJSON *j = job_with("inject", "[\"python\"]", NULL);
	char big[TFJ_TFJOB_MAX_REGEX + 2];

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	cJSON_AddStringToObject(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "metadata"),
						    "annotations"),
				TFJ_TFJOB_ANN_PROGRESS_REGEX, big);
	TFJ_CHECK_INT(decode(&job, j), 0);
	TFJ_CHECK_INT(job.spec_valid, 0);
	TFJ_CHECK(strstr(job.spec_error, "longer than 1024") != NULL);
	tfj_tfjob_free(&job);
}

int main(void)
{
	TFJ_RUN(test_annotation_wraps_command_and_args);
	TFJ_RUN(test_termination_path_and_existing_init);
	TFJ_RUN(test_default_and_opt_out);
	TFJ_RUN(test_decoder_refusals);
	TFJ_RUN(test_regex_annotation_bounded);
	return tfj_test_finish();
}
