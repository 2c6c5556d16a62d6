/*
 * test_jobguard.c - the per-job ps Secret (tfjob/pssecret.c) and
 * NetworkPolicy (tfjob/netpol.c): bodies, owner, labels, the pod wiring,
 * the Secret's names (generateName, cut as the API server cuts it; which
 * recorded names are the job's), and the policy's ports (training ports fenced, the rest left open). The
 * Secret's ps certificate: made for the ps hosts of TF_CONFIG (every one
 * verifies, another job's does not), a wildcard past the name cap, and the
 * Secret within a few KiB either way.
 */
#include <tfj/certgen.h>
#include <tfj/tfconfig.h>

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

/* A job "mnist" with one chief, nps ps and two workers. */
static int make_ps_job(struct tfj_tfjob *job, int nps)
{
	cJSON *j = fx_job("mnist");
	int rc;

	fx_replica(j, "Chief", 1, NULL);
	fx_replica(j, "PS", nps, NULL);
	fx_replica(j, "Worker", 2, NULL);
	rc = tfj_tfjob_from_json(job, j);
	cJSON_Delete(j);
	return rc;
}

/* A CA and a leaf for tfj_pssecret_tls_names(job, domain), as app/apply.c makes them. */
static void make_cert(struct tfj_certgen_pair *ca, struct tfj_certgen_pair *leaf,
		      const struct tfj_tfjob *job, const char *domain)
{
	char names[TFJ_PSSECRET_MAX_SANS][TFJ_PSSECRET_SAN_MAX];
	const char *ptrs[TFJ_PSSECRET_MAX_SANS];
	size_t n = 0, i;

	TFJ_CHECK_OK(tfj_pssecret_tls_names(names, &n, job, domain));
	for (i = 0; i < n; i++)
		ptrs[i] = names[i];
	TFJ_CHECK_OK(tfj_certgen_ca(ca, "tfjob-ps-ca", 1800000000LL, TFJ_PSSECRET_CERT_LIFE_S));
	TFJ_CHECK_OK(tfj_certgen_leaf(leaf, ca, ptrs, n, 1800000000LL, TFJ_PSSECRET_CERT_LIFE_S));
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
	static const struct tfj_pssecret_tls tls = { "CA", "CERT", "KEY" };
	struct tfj_tfjob job;
	uint8_t rnd[TFJ_PSSECRET_BYTES];
	cJSON *s = NULL, *meta;
	const char *tok;
	size_t i;

	for (i = 0; i < sizeof(rnd); i++)
		rnd[i] = (uint8_t)(i * 37 + 5);
	TFJ_CHECK_OK(make_job(&job, 0));
	TFJ_CHECK_INT(tfj_pssecret_body(&s, &job, "op-x", NULL, rnd, NULL), TFJ_EINVAL);
	/* A recorded name made again: named so. */
	TFJ_CHECK_OK(tfj_pssecret_body(&s, &job, "op-x", "mnist-ps-x1y2z", rnd, &tls));
	meta = cJSON_GetObjectItem(s, "metadata");
	TFJ_CHECK_STR(str_at(meta, "name"), "mnist-ps-x1y2z");
	TFJ_CHECK(cJSON_GetObjectItem(meta, "generateName") == NULL);
	tfj_pssecret_body_free(s);
	/* A new one: the API server picks the name. */
	TFJ_CHECK_OK(tfj_pssecret_body(&s, &job, "op-x", "", rnd, &tls));
	TFJ_CHECK_NOT_NULL(s);
	meta = cJSON_GetObjectItem(s, "metadata");
	TFJ_CHECK_STR(str_at(s, "kind"), "Secret");
	TFJ_CHECK_STR(str_at(s, "type"), "Opaque");
	TFJ_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(s, "immutable")));
	TFJ_CHECK(cJSON_GetObjectItem(meta, "name") == NULL);
	TFJ_CHECK_STR(str_at(meta, "generateName"), "mnist-ps-");
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
	TFJ_CHECK_STR(str_at(cJSON_GetObjectItem(s, "stringData"), "ca.crt"), "CA");
	TFJ_CHECK_STR(str_at(cJSON_GetObjectItem(s, "stringData"), "tls.crt"), "CERT");
	TFJ_CHECK_STR(str_at(cJSON_GetObjectItem(s, "stringData"), "tls.key"), "KEY");
	TFJ_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(s, "stringData")), 4);
	tfj_pssecret_body_free(s);
	tfj_pssecret_body_free(NULL);
	tfj_tfjob_free(&job);
}

static void test_secret_in_pod(void)
{
	struct tfj_podspec_opts o;
	struct tfj_tfjob job;
	cJSON *pod = NULL, *spec, *ctr, *vol, *m, *e;

	TFJ_CHECK_OK(make_job(&job, 0));
	/* No name given (a caller that keeps no Secret): no wiring at all. */
	TFJ_CHECK_OK(tfj_podspec_pod(&pod, &job, TFJ_RT_WORKER, 1, NULL));
	spec = cJSON_GetObjectItem(pod, "spec");
	TFJ_CHECK(fx_named(cJSON_GetObjectItem(spec, "volumes"), TFJ_PSSECRET_VOLUME) == NULL);
	ctr = fx_named(cJSON_GetObjectItem(spec, "containers"), "tensorflow");
	TFJ_CHECK(fx_named(cJSON_GetObjectItem(ctr, "env"), TFJ_PSSECRET_ENV) == NULL);
	cJSON_Delete(pod);
	pod = NULL;
	memset(&o, 0, sizeof(o));
	o.ps_secret_name = "mnist-ps-k7q2w";
	TFJ_CHECK_OK(tfj_podspec_pod(&pod, &job, TFJ_RT_WORKER, 1, &o));
	spec = cJSON_GetObjectItem(pod, "spec");
	ctr = fx_named(cJSON_GetObjectItem(spec, "containers"), "tensorflow");
	vol = fx_named(cJSON_GetObjectItem(spec, "volumes"), TFJ_PSSECRET_VOLUME);
	TFJ_CHECK_NOT_NULL(vol);
	TFJ_CHECK_STR(str_at(cJSON_GetObjectItem(vol, "secret"), "secretName"), "mnist-ps-k7q2w");
	TFJ_CHECK_INT(num_at(cJSON_GetObjectItem(vol, "secret"), "defaultMode"), 0444);
	m = fx_named(cJSON_GetObjectItem(ctr, "volumeMounts"), TFJ_PSSECRET_VOLUME);
	TFJ_CHECK_NOT_NULL(m);
	TFJ_CHECK_STR(str_at(m, "mountPath"), TFJ_PSSECRET_DIR);
	TFJ_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(m, "readOnly")));
	e = fx_named(cJSON_GetObjectItem(ctr, "env"), TFJ_PSSECRET_ENV);
	TFJ_CHECK_STR(str_at(e, "value"), "/var/run/secrets/tfjob-ps/token");
	e = fx_named(cJSON_GetObjectItem(ctr, "env"), TFJ_PSSECRET_TLS_ENV);
	TFJ_CHECK_STR(str_at(e, "value"), "/var/run/secrets/tfjob-ps");
	cJSON_Delete(pod);
	tfj_tfjob_free(&job);
}

/* The ps hosts a worker dials, from its TF_CONFIG, without the port, into hosts (8 at most). */
static size_t dialled_ps(char hosts[8][TFJ_PSSECRET_SAN_MAX], const struct tfj_tfjob *job,
			 const struct tfj_podspec_opts *o)
{
	struct tfj_tfconfig cfg;
	const struct tfj_tfconfig_job *ps;
	const char *tf;
	cJSON *pod = NULL, *ctr;
	size_t i, n = 0;

	memset(&cfg, 0, sizeof(cfg));
	TFJ_CHECK_OK(tfj_podspec_pod(&pod, job, TFJ_RT_WORKER, 0, o));
	ctr = fx_named(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "containers"),
		       "tensorflow");
	tf = str_at(fx_named(cJSON_GetObjectItem(ctr, "env"), "TF_CONFIG"), "value");
	TFJ_CHECK_NOT_NULL(tf);
	if (tf && tfj_tfconfig_decode(&cfg, tf, strlen(tf)) == 0 &&
	    (ps = tfj_tfconfig_find_job(&cfg, "ps")))
		for (i = 0; i < ps->nhosts && i < 8; i++, n++) {
			snprintf(hosts[i], TFJ_PSSECRET_SAN_MAX, "%s", ps->hosts[i]);
			*strrchr(hosts[i], ':') = '\0';
		}
	tfj_tfconfig_free(&cfg);
	cJSON_Delete(pod);
	return n;
}

static void test_cert_names(void)
{
	struct tfj_certgen_pair ca, leaf, other_ca, other;
	struct tfj_podspec_opts o;
	struct tfj_tfjob job, job2;
	char hosts[8][TFJ_PSSECRET_SAN_MAX];
	size_t n, i;

	/* Three ps, the cluster domain set: every host a worker dials verifies. */
	memset(&o, 0, sizeof(o));
	o.cluster_domain = "cluster.local";
	TFJ_CHECK_OK(make_ps_job(&job, 3));
	make_cert(&ca, &leaf, &job, "cluster.local");
	n = dialled_ps(hosts, &job, &o);
	TFJ_CHECK_INT(n, 3);
	for (i = 0; i < n; i++)
		TFJ_CHECK_OK(tfj_certgen_verify(ca.cert_pem, leaf.cert_pem, leaf.key_pem, hosts[i],
						1800000000LL + 86400));
	TFJ_CHECK_STR(hosts[2], "mnist-ps-2.default.svc.cluster.local");
	/* Not a worker's name, not the short form, not another job's ps. */
	TFJ_CHECK_INT(tfj_certgen_verify(ca.cert_pem, leaf.cert_pem, leaf.key_pem,
					 "mnist-worker-0.default.svc.cluster.local", 1800000000LL),
		      TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_certgen_verify(ca.cert_pem, leaf.cert_pem, leaf.key_pem,
					 "mnist-ps-0.default.svc", 1800000000LL), TFJ_EINVAL);
	/* Another job's CA does not vouch for this job's ps, nor the reverse. */
	TFJ_CHECK_OK(make_ps_job(&job2, 3));
	make_cert(&other_ca, &other, &job2, "cluster.local");
	TFJ_CHECK_INT(tfj_certgen_verify(other_ca.cert_pem, leaf.cert_pem, leaf.key_pem, hosts[0],
					 1800000000LL), TFJ_EINVAL);
	tfj_certgen_pair_free(&ca);
	tfj_certgen_pair_free(&leaf);
	tfj_certgen_pair_free(&other_ca);
	tfj_certgen_pair_free(&other);
	tfj_tfjob_free(&job);
	tfj_tfjob_free(&job2);

	/* Past the cap: one wildcard for the namespace's services, short form. */
	TFJ_CHECK_OK(make_ps_job(&job, TFJ_PSSECRET_MAX_SANS + 1));
	make_cert(&ca, &leaf, &job, NULL);
	n = dialled_ps(hosts, &job, NULL);
	TFJ_CHECK_INT(n, 8);
	for (i = 0; i < n; i++)
		TFJ_CHECK_OK(tfj_certgen_verify(ca.cert_pem, leaf.cert_pem, leaf.key_pem, hosts[i],
						1800000000LL));
	TFJ_CHECK_INT(tfj_certgen_verify(ca.cert_pem, leaf.cert_pem, leaf.key_pem,
					 "mnist-ps-0.other.svc", 1800000000LL), TFJ_EINVAL);
	tfj_certgen_pair_free(&ca);
	tfj_certgen_pair_free(&leaf);
	tfj_tfjob_free(&job);
}

/*
 * The Secret stays small whatever the job: the largest name set (the cap,
 * the longest job and namespace names, a domain) fits in 16 KiB, far under
 * the API server's 1 MiB and the operator's body caps.
 */
static void test_secret_bounded(void)
{
	char jname[64], ns[64], names[TFJ_PSSECRET_MAX_SANS][TFJ_PSSECRET_SAN_MAX];
	struct tfj_certgen_pair ca, leaf;
	struct tfj_pssecret_tls tls;
	uint8_t rnd[TFJ_PSSECRET_BYTES] = { 0 };
	struct tfj_tfjob job;
	cJSON *j, *s = NULL;
	char *text;
	size_t n;

	memset(jname, 'j', 40);
	jname[40] = '\0';
	memset(ns, 'n', 63);
	ns[63] = '\0';
	j = fx_job(jname);
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, "metadata"), "namespace",
				  cJSON_CreateString(ns));
	fx_replica(j, "PS", TFJ_PSSECRET_MAX_SANS, NULL);
	fx_replica(j, "Worker", 1, NULL);
	TFJ_CHECK_OK(tfj_tfjob_from_json(&job, j));
	cJSON_Delete(j);
	TFJ_CHECK_OK(tfj_pssecret_tls_names(names, &n, &job, "cluster.example.internal"));
	TFJ_CHECK_INT(n, TFJ_PSSECRET_MAX_SANS);
	make_cert(&ca, &leaf, &job, "cluster.example.internal");
	tls.ca_pem = ca.cert_pem;
	tls.cert_pem = leaf.cert_pem;
	tls.key_pem = leaf.key_pem;
	TFJ_CHECK_OK(tfj_pssecret_body(&s, &job, NULL, NULL, rnd, &tls));
	text = cJSON_PrintUnformatted(s);
	TFJ_CHECK_NOT_NULL(text);
	if (text) {
		printf("largest ps Secret: %zu bytes\n", strlen(text));
		TFJ_CHECK(strlen(text) < 16 * 1024);
	}
	free(text);
	tfj_pssecret_body_free(s);
	tfj_certgen_pair_free(&ca);
	tfj_certgen_pair_free(&leaf);
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
	TFJ_CHECK_INT(tfj_pssecret_prefix(small, sizeof(small), "mnist"), TFJ_ETOOBIG);
	TFJ_CHECK_INT(tfj_pssecret_legacy_name(small, sizeof(small), "mnist"), TFJ_ETOOBIG);
	TFJ_CHECK_INT(tfj_netpol_name(small, sizeof(small), &job), TFJ_ETOOBIG);
	tfj_tfjob_free(&job);
}

/*
 * The Secret's names: the prefix is "<job>-ps-" cut to the API server's
 * 58 characters, so a long job's generated names still pass the check;
 * the check takes the generated and the older fixed name of the job, and
 * nothing of another job, nothing outside the prefix, no invalid name.
 */
static void test_secret_names(void)
{
	char p[TFJ_PSSECRET_NAME_MAX], why[160], long_job[64], gen[TFJ_PSSECRET_NAME_MAX + 8];

	TFJ_CHECK_OK(tfj_pssecret_prefix(p, sizeof(p), "mnist"));
	TFJ_CHECK_STR(p, "mnist-ps-");
	TFJ_CHECK_OK(tfj_pssecret_legacy_name(p, sizeof(p), "mnist"));
	TFJ_CHECK_STR(p, "mnist-ps-secret");
	/* 55 characters: "-ps-" is cut to "-ps" at 58. */
	memset(long_job, 'a', 55);
	long_job[55] = '\0';
	TFJ_CHECK_OK(tfj_pssecret_prefix(p, sizeof(p), long_job));
	TFJ_CHECK_INT(strlen(p), TFJ_PSSECRET_GENERATE_MAX);
	TFJ_CHECK(strcmp(p + 55, "-ps") == 0);
	snprintf(gen, sizeof(gen), "%sx7k2q", p);
	TFJ_CHECK_OK(tfj_pssecret_name_check(why, sizeof(why), long_job, gen));
	/* 63 characters: the prefix is the job's first 58. */
	memset(long_job, 'b', 63);
	long_job[63] = '\0';
	TFJ_CHECK_OK(tfj_pssecret_prefix(p, sizeof(p), long_job));
	TFJ_CHECK_INT(strlen(p), TFJ_PSSECRET_GENERATE_MAX);
	TFJ_CHECK_INT(strspn(p, "b"), TFJ_PSSECRET_GENERATE_MAX);

	TFJ_CHECK_OK(tfj_pssecret_name_check(why, sizeof(why), "mnist", "mnist-ps-x7k2q"));
	TFJ_CHECK_OK(tfj_pssecret_name_check(why, sizeof(why), "mnist", "mnist-ps-secret"));
	TFJ_CHECK_OK(tfj_pssecret_name_check(why, sizeof(why), "a.b", "a.b-ps-x7k2q"));
	TFJ_CHECK_INT(tfj_pssecret_name_check(why, sizeof(why), "mnist", "other-ps-x7k2q"),
		      TFJ_EINVAL);
	TFJ_CHECK(strstr(why, "does not start with mnist-ps-") != NULL);
	TFJ_CHECK_INT(tfj_pssecret_name_check(why, sizeof(why), "mnist", "mnist-secret"),
		      TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_pssecret_name_check(why, sizeof(why), "mnist", "mnist-ps-X"),
		      TFJ_EINVAL);
	TFJ_CHECK(strstr(why, "not a DNS-1123 subdomain") != NULL);
	TFJ_CHECK_INT(tfj_pssecret_name_check(why, sizeof(why), "mnist", "mnist-ps-a..b"),
		      TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_pssecret_name_check(why, sizeof(why), "mnist", "mnist-ps-"),
		      TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_pssecret_name_check(why, sizeof(why), "mnist", ""), TFJ_EINVAL);
}

int main(void)
{
	TFJ_RUN(test_secret_body);
	TFJ_RUN(test_secret_in_pod);
	TFJ_RUN(test_cert_names);
	TFJ_RUN(test_secret_bounded);
	TFJ_RUN(test_policy_default_port);
	TFJ_RUN(test_policy_custom_ports);
	TFJ_RUN(test_names_bounded);
	TFJ_RUN(test_secret_names);
	return tfj_test_finish();
}
