/*
 * test_jobguard.c - the per-job ps Secret (tfjob/pssecret.c) and
 * NetworkPolicy (tfjob/netpol.c): bodies, owner, labels, the pod wiring,
 * and the policy's ports (training ports fenced, the rest left open).
 */
#include "plan_fixtures.h"
#include "tfjob/netpol.h"
#include "tfjob/pssecret.h"

static const char *str_at(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int num_at(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valueint : -1;
}

/* A job with chief, ps and two workers; the ps listens on ps_port (0: default). */
static int make_job(struct tfj_tfjob *job, int ps_port)
{
	cJSON *j = fx_job("mnist"), *r, *c, *ports, *p;
	int rc;

	fx_replica(j, "Chief", 1, NULL);
	r = fx_replica(j, "PS", 1, NULL);
	fx_replica(j, "Worker", 2, NULL);
	if (ps_port) {
		c = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
			cJSON_GetObjectItem(r, "template"), "spec"), "containers"), 0);
		ports = cJSON_AddArrayToObject(c, "ports");
		p = cJSON_CreateObject();
		cJSON_AddItemToArray(ports, p);
		cJSON_AddStringToObject(p, "name", "tfjob-port");
		cJSON_AddNumberToObject(p, "containerPort", ps_port);
	}
	rc = tfj_tfjob_from_json(job, j);
	cJSON_Delete(j);
	return rc;
}

static void check_owner(const cJSON *meta)
{
	const cJSON *ref = cJSON_GetArrayItem(cJSON_GetObjectItem(meta, "ownerReferences"), 0);

	TFJ_CHECK_STR(str_at(ref, "kind"), "TFJob");
	TFJ_CHECK_STR(str_at(ref, "name"), "mnist");
	TFJ_CHECK_STR(str_at(ref, "uid"), "job-uid-1");
	TFJ_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(ref, "controller")));
}

static void test_secret_body(void)
{
	struct tfj_tfjob job;
	uint8_t rnd[TFJ_PSSECRET_BYTES];
	cJSON *s = NULL, *meta;
	const char *tok;
	size_t i;

	for (i = 0; i < sizeof(rnd); i++)
		rnd[i] = (uint8_t)(i * 37 + 5);
	TFJ_CHECK_OK(make_job(&job, 0));
	TFJ_CHECK_OK(tfj_pssecret_body(&s, &job, "op-x", rnd));
	TFJ_CHECK_NOT_NULL(s);
	meta = cJSON_GetObjectItem(s, "metadata");
	TFJ_CHECK_STR(str_at(s, "kind"), "Secret");
	TFJ_CHECK_STR(str_at(s, "type"), "Opaque");
	TFJ_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(s, "immutable")));
	TFJ_CHECK_STR(str_at(meta, "name"), "mnist-ps-secret");
	TFJ_CHECK_STR(str_at(meta, "namespace"), "default");
	TFJ_CHECK_STR(str_at(cJSON_GetObjectItem(meta, "labels"), TFJ_LABEL_JOB_NAME), "mnist");
	TFJ_CHECK_STR(str_at(cJSON_GetObjectItem(meta, "labels"), TFJ_LABEL_OPERATOR), "op-x");
	check_owner(meta);
	/* 32 bytes as 64 lowercase hex digits: a valid header value for the runtime. */
	tok = str_at(cJSON_GetObjectItem(s, "stringData"), "token");
	TFJ_CHECK_NOT_NULL(tok);
	if (tok) {
		TFJ_CHECK_INT(strlen(tok), 64);
		TFJ_CHECK(strncmp(tok, "052a4f74", 8) == 0);
		TFJ_CHECK_INT(strspn(tok, "0123456789abcdef"), 64);
	}
	tfj_pssecret_body_free(s);
	tfj_pssecret_body_free(NULL);
	tfj_tfjob_free(&job);
}

static void test_secret_in_pod(void)
{
	struct tfj_tfjob job;
	cJSON *pod = NULL, *spec, *ctr, *vol, *m, *e;

	TFJ_CHECK_OK(make_job(&job, 0));
	TFJ_CHECK_OK(tfj_podspec_pod(&pod, &job, TFJ_RT_WORKER, 1, NULL));
	spec = cJSON_GetObjectItem(pod, "spec");
	ctr = fx_named(cJSON_GetObjectItem(spec, "containers"), "tensorflow");
	vol = fx_named(cJSON_GetObjectItem(spec, "volumes"), TFJ_PSSECRET_VOLUME);
	TFJ_CHECK_NOT_NULL(vol);
	TFJ_CHECK_STR(str_at(cJSON_GetObjectItem(vol, "secret"), "secretName"), "mnist-ps-secret");
	TFJ_CHECK_INT(num_at(cJSON_GetObjectItem(vol, "secret"), "defaultMode"), 0444);
	m = fx_named(cJSON_GetObjectItem(ctr, "volumeMounts"), TFJ_PSSECRET_VOLUME);
	TFJ_CHECK_NOT_NULL(m);
	TFJ_CHECK_STR(str_at(m, "mountPath"), TFJ_PSSECRET_DIR);
	TFJ_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(m, "readOnly")));
	e = fx_named(cJSON_GetObjectItem(ctr, "env"), TFJ_PSSECRET_ENV);
	TFJ_CHECK_STR(str_at(e, "value"), "/var/run/secrets/tfjob-ps/token");
	cJSON_Delete(pod);
	tfj_tfjob_free(&job);
}

/* The policy's two ingress rules: [0] training ports from the job, [1] the rest. */
static cJSON *rule(cJSON *np, int i)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(np, "spec"), "ingress"), i);
}

static void check_job_selector(const cJSON *sel)
{
	const cJSON *ml = cJSON_GetObjectItem(sel, "matchLabels");

	TFJ_CHECK_STR(str_at(ml, TFJ_LABEL_JOB_NAME), "mnist");
	TFJ_CHECK_STR(str_at(ml, TFJ_LABEL_OPERATOR), "tfjob-controller");
	TFJ_CHECK_INT(cJSON_GetArraySize(ml), 2);
}

static void test_policy_default_port(void)
{
	struct tfj_tfjob job;
	cJSON *np = NULL, *spec, *from, *ports, *p;

	TFJ_CHECK_OK(make_job(&job, 0));
	TFJ_CHECK_OK(tfj_netpol_body(&np, &job, NULL));
	TFJ_CHECK_NOT_NULL(np);
	TFJ_CHECK_STR(str_at(np, "apiVersion"), "networking.k8s.io/v1");
	TFJ_CHECK_STR(str_at(np, "kind"), "NetworkPolicy");
	TFJ_CHECK_STR(str_at(cJSON_GetObjectItem(np, "metadata"), "name"), "mnist-training");
	check_owner(cJSON_GetObjectItem(np, "metadata"));
	spec = cJSON_GetObjectItem(np, "spec");
	check_job_selector(cJSON_GetObjectItem(spec, "podSelector"));
	TFJ_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(spec, "policyTypes")), 1);
	TFJ_CHECK_STR(cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "policyTypes"), 0)->valuestring,
		      "Ingress");
	TFJ_CHECK_NULL(cJSON_GetObjectItem(spec, "egress"));
	TFJ_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(spec, "ingress")), 2);
	/* 2222 only from the job's own pods (no namespaceSelector: same namespace). */
	from = cJSON_GetObjectItem(rule(np, 0), "from");
	TFJ_CHECK_INT(cJSON_GetArraySize(from), 1);
	check_job_selector(cJSON_GetObjectItem(cJSON_GetArrayItem(from, 0), "podSelector"));
	TFJ_CHECK_NULL(cJSON_GetObjectItem(cJSON_GetArrayItem(from, 0), "namespaceSelector"));
	ports = cJSON_GetObjectItem(rule(np, 0), "ports");
	TFJ_CHECK_INT(cJSON_GetArraySize(ports), 1);
	TFJ_CHECK_STR(str_at(cJSON_GetArrayItem(ports, 0), "protocol"), "TCP");
	TFJ_CHECK_INT(num_at(cJSON_GetArrayItem(ports, 0), "port"), 2222);
	/* Everything else from anywhere: TCP 1-2221, 2223-65535, all of UDP. */
	TFJ_CHECK_NULL(cJSON_GetObjectItem(rule(np, 1), "from"));
	ports = cJSON_GetObjectItem(rule(np, 1), "ports");
	TFJ_CHECK_INT(cJSON_GetArraySize(ports), 3);
	p = cJSON_GetArrayItem(ports, 0);
	TFJ_CHECK_INT(num_at(p, "port"), 1);
	TFJ_CHECK_INT(num_at(p, "endPort"), 2221);
	p = cJSON_GetArrayItem(ports, 1);
	TFJ_CHECK_INT(num_at(p, "port"), 2223);
	TFJ_CHECK_INT(num_at(p, "endPort"), 65535);
	p = cJSON_GetArrayItem(ports, 2);
	TFJ_CHECK_STR(str_at(p, "protocol"), "UDP");
	TFJ_CHECK_INT(num_at(p, "port"), -1);
	cJSON_Delete(np);
	tfj_tfjob_free(&job);
}

static void test_policy_custom_ports(void)
{
	struct tfj_tfjob job;
	struct tfj_podspec_opts o;
	cJSON *np = NULL, *ports;

	/* The ps on 2223 (next to the others' 2222): both fenced, no empty range between. */
	TFJ_CHECK_OK(make_job(&job, 2223));
	memset(&o, 0, sizeof(o));
	o.operator_name = "tfjob-controller";
	TFJ_CHECK_OK(tfj_netpol_body(&np, &job, &o));
	ports = cJSON_GetObjectItem(rule(np, 0), "ports");
	TFJ_CHECK_INT(cJSON_GetArraySize(ports), 2);
	TFJ_CHECK_INT(num_at(cJSON_GetArrayItem(ports, 0), "port"), 2222);
	TFJ_CHECK_INT(num_at(cJSON_GetArrayItem(ports, 1), "port"), 2223);
	ports = cJSON_GetObjectItem(rule(np, 1), "ports");
	TFJ_CHECK_INT(cJSON_GetArraySize(ports), 3);
	TFJ_CHECK_INT(num_at(cJSON_GetArrayItem(ports, 0), "endPort"), 2221);
	TFJ_CHECK_INT(num_at(cJSON_GetArrayItem(ports, 1), "port"), 2224);
	cJSON_Delete(np);
	tfj_tfjob_free(&job);

	/* Port 1 and a single-port gap: no range below 1, "port" alone for one port. */
	TFJ_CHECK_OK(make_job(&job, 1));
	o.default_port = 3;
	TFJ_CHECK_OK(tfj_netpol_body(&np, &job, &o));
	ports = cJSON_GetObjectItem(rule(np, 1), "ports");
	TFJ_CHECK_INT(cJSON_GetArraySize(ports), 3);
	TFJ_CHECK_INT(num_at(cJSON_GetArrayItem(ports, 0), "port"), 2);
	TFJ_CHECK_INT(num_at(cJSON_GetArrayItem(ports, 0), "endPort"), -1);
	TFJ_CHECK_INT(num_at(cJSON_GetArrayItem(ports, 1), "port"), 4);
	cJSON_Delete(np);
	tfj_tfjob_free(&job);
}

static void test_names_bounded(void)
{
	struct tfj_tfjob job;
	char small[8];

	TFJ_CHECK_OK(make_job(&job, 0));
	TFJ_CHECK_INT(tfj_pssecret_name(small, sizeof(small), &job), TFJ_ETOOBIG);
	TFJ_CHECK_INT(tfj_netpol_name(small, sizeof(small), &job), TFJ_ETOOBIG);
	tfj_tfjob_free(&job);
}

int main(void)
{
	TFJ_RUN(test_secret_body);
	TFJ_RUN(test_secret_in_pod);
	TFJ_RUN(test_policy_default_port);
	TFJ_RUN(test_policy_custom_ports);
	TFJ_RUN(test_names_bounded);
	return tfj_test_finish();
}
