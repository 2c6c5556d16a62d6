/*
 * test_servingcert.c - the report channel's serving certificate
 * (report/servingcert.h) against the fake API server (fakeapi.h): the
 * first replica creates the Secrets (the serving one without the CA key,
 * the CA key in <secret>-ca-key) and the next one uses them; an old
 * layout (ca.key in the serving Secret) is moved apart without a new
 * certificate; a CA Secret rotated ahead of the serving one; two replicas
 * racing on the create (409) end up with one certificate; rotation of the
 * serving certificate (same CA) and of the CA (bundle of both); the
 * cert-manager mode only reads and never serves a Secret that does not
 * verify; and the report server over TLS with the fetcher: a client with
 * the CA gets through, a client with another CA or in plaintext does not,
 * and a rotated certificate is served to new connections without a restart.
 */
#include <stdlib.h>
#include <string.h>

#include <tfj/clock.h>
#include <tfj/err.h>
#include <tfj/json.h>

#include "fakeapi.h"
#include <tfj/certgen.h>
#include "report/report.h"
#include "report/servingcert.h"
#include "report_client.h"
#include "tfj_test.h"

#define NS "tfjob-system"
#define NOW 1800000000LL
#define DAY 86400LL

static const char *const names[] = {
	"tfjob-operator", "tfjob-operator.tfjob-system", "tfjob-operator.tfjob-system.svc",
	"tfjob-operator.tfjob-system.svc.cluster.local"
};

static struct tfj_servingcert *manager(struct tfj_kube *k, const char *secret, int external)
{
	struct tfj_servingcert_opts o = { 0 };
	struct tfj_servingcert *s = NULL;

	o.namespace = NS;
	o.secret = secret;
	o.service = "tfjob-operator";
	o.external = external;
	TFJ_CHECK_OK(tfj_servingcert_new(&s, k, &o));
	return s;
}

/* The Secret's material as the API server holds it; fields NULL when absent. */
static void read_secret(struct tfj_servingcert_pem *p, struct tfj_kube *k, const char *name)
{
	char path[256];
	cJSON *obj = NULL;

	memset(p, 0, sizeof(*p));
	snprintf(path, sizeof(path), "/api/v1/namespaces/" NS "/secrets/%s", name);
	TFJ_CHECK_OK(tfj_kube_get(k, &obj, path));
	if (obj)
		TFJ_CHECK_OK(tfj_servingcert_from_secret(p, obj));
	cJSON_Delete(obj);
}

static int count_certs(const char *pem)
{
	int n = 0;

	for (const char *p = pem; p && (p = strstr(p, "BEGIN CERTIFICATE")); p++)
		n++;
	return n;
}

static void test_pure(void)
{
	char n[TFJ_SERVINGCERT_NAMES][256];
	struct tfj_certgen_pair ca, leaf, ca2;
	struct tfj_servingcert_pem p = { 0 }, back;
	cJSON *sec = NULL;
	const char *type;

	TFJ_CHECK_OK(tfj_servingcert_names(n, "tfjob-operator", NS, NULL));
	for (int i = 0; i < 4; i++)
		TFJ_CHECK_STR(n[i], names[i]);
	TFJ_CHECK_OK(tfj_servingcert_names(n, "svc", "ns", "example.org"));
	TFJ_CHECK_STR(n[3], "svc.ns.svc.example.org");
	{
		char svc[64], ns[64], dom[128];

		TFJ_CHECK_OK(tfj_servingcert_service_of(svc, ns, dom,
							"tfjob-operator.tfjob-system.svc:9443"));
		TFJ_CHECK_STR(svc, "tfjob-operator");
		TFJ_CHECK_STR(ns, "tfjob-system");
		TFJ_CHECK_STR(dom, "");
		TFJ_CHECK_OK(tfj_servingcert_service_of(svc, ns, dom, "op.kf:9443"));
		TFJ_CHECK_STR(ns, "kf");
		TFJ_CHECK_OK(tfj_servingcert_service_of(svc, ns, dom, "op.kf.svc.corp.local:9443"));
		TFJ_CHECK_STR(svc, "op");
		TFJ_CHECK_STR(dom, "corp.local");
		TFJ_CHECK_INT(tfj_servingcert_service_of(svc, ns, dom, "10.0.0.1:9443"), TFJ_EINVAL);
		TFJ_CHECK_INT(tfj_servingcert_service_of(svc, ns, dom, "localhost:9443"), TFJ_EINVAL);
		TFJ_CHECK_INT(tfj_servingcert_service_of(svc, ns, dom, "a.b.example.com:1"),
			      TFJ_EINVAL);
		TFJ_CHECK_INT(tfj_servingcert_service_of(svc, ns, dom, ".b:1"), TFJ_EINVAL);
		TFJ_CHECK_INT(tfj_servingcert_service_of(svc, ns, dom, "a.:1"), TFJ_EINVAL);
		TFJ_CHECK_INT(tfj_servingcert_service_of(svc, ns, dom, "[::1]:1"), TFJ_EINVAL);
	}

	TFJ_CHECK_OK(tfj_certgen_ca(&ca, "ca", NOW, 3650 * DAY));
	TFJ_CHECK_OK(tfj_certgen_ca(&ca2, "ca2", NOW, 3650 * DAY));
	TFJ_CHECK_OK(tfj_certgen_leaf(&leaf, &ca, names, 4, NOW, 90 * DAY));
	/* Nothing at all, or no CA key: a new CA. */
	TFJ_CHECK_INT(tfj_servingcert_decide(&p, names, 4, NOW), TFJ_SERVINGCERT_NEW_CA);
	p.ca_crt = ca.cert_pem;
	TFJ_CHECK_INT(tfj_servingcert_decide(&p, names, 4, NOW), TFJ_SERVINGCERT_NEW_CA);
	/* The CA's key must be the CA's. */
	p.ca_key = ca2.key_pem;
	TFJ_CHECK_INT(tfj_servingcert_decide(&p, names, 4, NOW), TFJ_SERVINGCERT_NEW_CA);
	p.ca_key = ca.key_pem;
	TFJ_CHECK_INT(tfj_servingcert_decide(&p, names, 4, NOW), TFJ_SERVINGCERT_NEW_LEAF);
	p.tls_crt = leaf.cert_pem;
	p.tls_key = leaf.key_pem;
	TFJ_CHECK_INT(tfj_servingcert_decide(&p, names, 4, NOW), TFJ_SERVINGCERT_KEEP);
	TFJ_CHECK_INT(tfj_servingcert_decide(&p, names, 4, NOW + 59 * DAY), TFJ_SERVINGCERT_KEEP);
	TFJ_CHECK_INT(tfj_servingcert_decide(&p, names, 4, NOW + 61 * DAY),
		      TFJ_SERVINGCERT_NEW_LEAF);
	TFJ_CHECK_INT(tfj_servingcert_decide(&p, names, 4, NOW + 7 * 365 * DAY),
		      TFJ_SERVINGCERT_NEW_CA);
	/* A certificate for other names (the Service was renamed). */
	{
		const char *other[] = { "renamed.tfjob-system.svc" };

		TFJ_CHECK_INT(tfj_servingcert_decide(&p, other, 1, NOW), TFJ_SERVINGCERT_NEW_LEAF);
	}
	/* Secret round trip (base64 in data, type kubernetes.io/tls). */
	TFJ_CHECK_OK(tfj_servingcert_to_secret(&sec, &p, NS, "s"));
	TFJ_CHECK_OK(tfj_json_get_string(&type, sec, "type"));
	TFJ_CHECK_STR(type, "kubernetes.io/tls");
	TFJ_CHECK_OK(tfj_servingcert_from_secret(&back, sec));
	TFJ_CHECK_STR(back.ca_crt, ca.cert_pem);
	TFJ_CHECK_STR(back.ca_key, ca.key_pem);
	TFJ_CHECK_STR(back.tls_crt, leaf.cert_pem);
	TFJ_CHECK_STR(back.tls_key, leaf.key_pem);
	tfj_servingcert_pem_free(&back);
	cJSON_Delete(sec);
	/* Not base64. */
	sec = cJSON_Parse("{\"data\":{\"tls.crt\":\"@@@\"}}");
	TFJ_CHECK_INT(tfj_servingcert_from_secret(&back, sec), TFJ_EPARSE);
	TFJ_CHECK_NULL(back.tls_crt);
	cJSON_Delete(sec);
	tfj_certgen_pair_free(&ca);
	tfj_certgen_pair_free(&ca2);
	tfj_certgen_pair_free(&leaf);
}

static struct fake F;
static struct tfj_kube *K;

static void test_create_share_rotate(void)
{
	struct fake *f = &F;
	struct tfj_kube *k = K;
	struct tfj_servingcert *a = manager(k, "t1", 0), *b = manager(k, "t1", 0);
	struct tfj_servingcert_pem s1, s2, s3, c1 = { 0 }, c3 = { 0 };
	char *ca_a = NULL, *ca_b = NULL;
	uint64_t gen = 0;
	int posts;

	if (!a || !b)
		goto out;
	TFJ_CHECK_INT(tfj_servingcert_ready(a), 0);
	TFJ_CHECK_INT(tfj_servingcert_ca(&ca_a, &gen, a), TFJ_EUNAVAIL);
	TFJ_CHECK_OK(tfj_servingcert_sync(a, NOW));
	TFJ_CHECK_INT(tfj_servingcert_ready(a), 1);
	read_secret(&s1, k, "t1");
	/* The CA key is not in the serving Secret but in its own. */
	TFJ_CHECK_NULL(s1.ca_key);
	read_secret(&c1, k, "t1-ca-key");
	TFJ_CHECK_NULL(c1.ca_crt);
	TFJ_CHECK_OK(tfj_certgen_key_matches(s1.ca_crt, c1.tls_key));
	TFJ_CHECK_STR(c1.tls_crt, s1.ca_crt);
	TFJ_CHECK_OK(tfj_certgen_verify(s1.ca_crt, s1.tls_crt, s1.tls_key, names[2], NOW));
	/* The other replica uses the same Secret: no second create, same CA. */
	posts = f->posts[0] + f->posts[1] + f->posts[2] + f->posts[3];
	TFJ_CHECK_OK(tfj_servingcert_sync(b, NOW + 10));
	TFJ_CHECK_OK(tfj_servingcert_ca(&ca_a, &gen, a));
	TFJ_CHECK_OK(tfj_servingcert_ca(&ca_b, &gen, b));
	TFJ_CHECK_STR(ca_a, ca_b);
	TFJ_CHECK_STR(ca_a, s1.ca_crt);
	TFJ_CHECK_NULL(strstr(ca_a, "PRIVATE KEY"));
	TFJ_CHECK_INT(f->posts[0] + f->posts[1] + f->posts[2] + f->posts[3], posts);
	TFJ_CHECK_EQ(tfj_servingcert_loads(b), 1);
	{
		struct tfj_buf m = TFJ_BUF_INIT(4096);
		char want[96];

		TFJ_CHECK_OK(tfj_servingcert_metrics(b, &m));
		snprintf(want, sizeof(want), "tfjob_report_tls_cert_expiry_timestamp_seconds %lld\n",
			 NOW + 90 * DAY);
		TFJ_CHECK_NOT_NULL(strstr(tfj_buf_cstr(&m), want));
		TFJ_CHECK_NOT_NULL(strstr(tfj_buf_cstr(&m), "tfjob_report_tls_cert_loads_total 1\n"));
		tfj_buf_free(&m);
		TFJ_CHECK_OK(tfj_servingcert_metrics(NULL, &m));
	}
	/* A sync with nothing due changes nothing. */
	TFJ_CHECK_OK(tfj_servingcert_sync(a, NOW + DAY));
	TFJ_CHECK_EQ(tfj_servingcert_loads(a), 1);

	/* Two thirds into the certificate's life: a new one, same CA. */
	TFJ_CHECK_OK(tfj_servingcert_sync(a, NOW + 61 * DAY));
	read_secret(&s2, k, "t1");
	TFJ_CHECK(strcmp(s2.tls_crt, s1.tls_crt) != 0);
	TFJ_CHECK_STR(s2.ca_crt, s1.ca_crt);
	TFJ_CHECK_OK(tfj_certgen_verify(s1.ca_crt, s2.tls_crt, s2.tls_key, names[3],
					NOW + 61 * DAY));
	TFJ_CHECK_EQ(tfj_servingcert_loads(a), 2);
	/* b finds it rotated already: it loads it and writes nothing. */
	TFJ_CHECK_OK(tfj_servingcert_sync(b, NOW + 61 * DAY + 5));
	TFJ_CHECK_EQ(tfj_servingcert_loads(b), 2);
	read_secret(&s3, k, "t1");
	TFJ_CHECK_STR(s3.tls_crt, s2.tls_crt);
	tfj_servingcert_pem_free(&s3);

	/* Seven years on the CA is due: a new CA, the bundle trusts both. */
	TFJ_CHECK_OK(tfj_servingcert_sync(a, NOW + 7 * 365 * DAY));
	read_secret(&s3, k, "t1");
	TFJ_CHECK_INT(count_certs(s3.ca_crt), 2);
	TFJ_CHECK_NULL(s3.ca_key);
	read_secret(&c3, k, "t1-ca-key");
	TFJ_CHECK(strcmp(c3.tls_key, c1.tls_key) != 0);
	TFJ_CHECK_OK(tfj_certgen_key_matches(s3.ca_crt, c3.tls_key));
	TFJ_CHECK_NOT_NULL(strstr(s3.ca_crt, s1.ca_crt + strlen("-----BEGIN CERTIFICATE-----")));
	TFJ_CHECK_OK(tfj_certgen_verify(s3.ca_crt, s3.tls_crt, s3.tls_key, names[2],
					NOW + 7 * 365 * DAY));
	/* The old CA alone does not verify the new certificate. */
	TFJ_CHECK_INT(tfj_certgen_verify(s1.ca_crt, s3.tls_crt, s3.tls_key, names[2],
					 NOW + 7 * 365 * DAY), TFJ_EINVAL);
	free(ca_a);
	TFJ_CHECK_OK(tfj_servingcert_ca(&ca_a, &gen, a));
	TFJ_CHECK_STR(ca_a, s3.ca_crt);
	tfj_servingcert_pem_free(&s3);
	tfj_servingcert_pem_free(&s1);
	tfj_servingcert_pem_free(&s2);
out:
	tfj_servingcert_pem_free(&c1);
	tfj_servingcert_pem_free(&c3);
	free(ca_a);
	free(ca_b);
	tfj_servingcert_free(a);
	tfj_servingcert_free(b);
}

/* b's GET says 404 (a creates meanwhile): b's POST gets 409, it reads a's Secret. */
static void test_create_race(void)
{
	struct fake *f = &F;
	struct tfj_kube *k = K;
	struct tfj_servingcert *a = manager(k, "t2", 0), *b = manager(k, "t2", 0);
	char *ca_a = NULL, *ca_b = NULL;
	uint64_t gen;

	if (!a || !b)
		goto out;
	TFJ_CHECK_OK(tfj_servingcert_sync(a, NOW));
	fake_inject(f, 1, 404, "/secrets/t2", "GET", NULL);
	TFJ_CHECK_OK(tfj_servingcert_sync(b, NOW));
	fake_inject(f, 0, 0, NULL, NULL, NULL);
	TFJ_CHECK_OK(tfj_servingcert_ca(&ca_a, &gen, a));
	TFJ_CHECK_OK(tfj_servingcert_ca(&ca_b, &gen, b));
	TFJ_CHECK_STR(ca_a, ca_b);
	TFJ_CHECK_INT(fake_count(f, "secrets", NS), 4);
out:
	free(ca_a);
	free(ca_b);
	tfj_servingcert_free(a);
	tfj_servingcert_free(b);
}

/* Writes p as Secret `name` (POST, or PUT over the one there). */
static void put_secret(struct tfj_kube *k, const char *name, const struct tfj_servingcert_pem *p)
{
	char path[256];
	cJSON *obj = NULL, *cur = NULL;

	snprintf(path, sizeof(path), "/api/v1/namespaces/" NS "/secrets/%s", name);
	TFJ_CHECK_OK(tfj_servingcert_to_secret(&obj, p, NS, name));
	if (tfj_kube_get(k, &cur, path) == 0) {
		cJSON_AddStringToObject(cJSON_GetObjectItem(obj, "metadata"), "resourceVersion",
					cJSON_GetStringValue(cJSON_GetObjectItem(
						cJSON_GetObjectItem(cur, "metadata"),
						"resourceVersion")));
		TFJ_CHECK_OK(tfj_kube_replace(k, NULL, path, obj));
	} else {
		TFJ_CHECK_OK(tfj_kube_create(k, NULL, "/api/v1/namespaces/" NS "/secrets", obj));
	}
	cJSON_Delete(cur);
	cJSON_Delete(obj);
}

/* The combined Secret of earlier versions: CA, CA key, certificate, key. */
static void old_layout(struct tfj_servingcert_pem *p, struct tfj_certgen_pair *ca, int64_t now)
{
	struct tfj_certgen_pair leaf = { 0 };

	memset(p, 0, sizeof(*p));
	TFJ_CHECK_OK(tfj_certgen_ca(ca, "old-ca", now, 3650 * DAY));
	TFJ_CHECK_OK(tfj_certgen_leaf(&leaf, ca, names, 4, now, 90 * DAY));
	p->ca_crt = strdup(ca->cert_pem);
	p->ca_key = strdup(ca->key_pem);
	p->tls_crt = leaf.cert_pem;
	p->tls_key = leaf.key_pem;
}

/*
 * Upgrade: an install with the old combined Secret keeps its CA and its
 * certificate (agents notice nothing), the key moves to t5-ca-key and the
 * serving Secret loses it. An earlier version's replica that rotates the CA
 * into the serving Secret again (a rolling upgrade) is moved the same way;
 * a ca.key that is not the bundle's CA's is dropped, not kept.
 */
static void test_old_layout(void)
{
	struct tfj_kube *k = K;
	struct tfj_servingcert *a = manager(k, "t5", 0);
	struct tfj_servingcert_pem old = { 0 }, old2 = { 0 }, sp = { 0 }, cp = { 0 };
	struct tfj_certgen_pair ca = { 0 }, ca2 = { 0 }, stray = { 0 };
	char *pem = NULL;
	uint64_t gen;

	if (!a)
		goto out;
	old_layout(&old, &ca, NOW - DAY);
	put_secret(k, "t5", &old);
	TFJ_CHECK_OK(tfj_servingcert_sync(a, NOW));
	read_secret(&sp, k, "t5");
	read_secret(&cp, k, "t5-ca-key");
	TFJ_CHECK_NULL(sp.ca_key);
	TFJ_CHECK_STR(sp.ca_crt, old.ca_crt);
	TFJ_CHECK_STR(sp.tls_crt, old.tls_crt);
	TFJ_CHECK_STR(cp.tls_crt, old.ca_crt);
	TFJ_CHECK(cp.tls_key && !strcmp(cp.tls_key, old.ca_key));
	TFJ_CHECK_OK(tfj_servingcert_ca(&pem, &gen, a));
	TFJ_CHECK_STR(pem, old.ca_crt);
	TFJ_CHECK_EQ(tfj_servingcert_loads(a), 1);
	tfj_servingcert_pem_free(&sp);
	tfj_servingcert_pem_free(&cp);

	/* An old replica rotates the CA, writing the combined layout again. */
	old_layout(&old2, &ca2, NOW);
	put_secret(k, "t5", &old2);
	TFJ_CHECK_OK(tfj_servingcert_sync(a, NOW + 60));
	read_secret(&sp, k, "t5");
	read_secret(&cp, k, "t5-ca-key");
	TFJ_CHECK_NULL(sp.ca_key);
	TFJ_CHECK_STR(sp.tls_crt, old2.tls_crt);
	TFJ_CHECK(cp.tls_key && !strcmp(cp.tls_key, old2.ca_key));
	tfj_servingcert_pem_free(&sp);
	tfj_servingcert_pem_free(&cp);

	/* A ca.key of some other CA in the serving Secret: dropped, not moved. */
	TFJ_CHECK_OK(tfj_certgen_ca(&stray, "stray", NOW, 3650 * DAY));
	free(old2.ca_key);
	old2.ca_key = strdup(stray.key_pem);
	put_secret(k, "t5", &old2);
	TFJ_CHECK_OK(tfj_servingcert_sync(a, NOW + 120));
	read_secret(&sp, k, "t5");
	read_secret(&cp, k, "t5-ca-key");
	TFJ_CHECK_NULL(sp.ca_key);
	TFJ_CHECK(cp.tls_key && !strcmp(cp.tls_key, ca2.key_pem));
	TFJ_CHECK_STR(sp.tls_crt, old2.tls_crt);
out:
	free(pem);
	tfj_servingcert_pem_free(&old);
	tfj_servingcert_pem_free(&old2);
	tfj_servingcert_pem_free(&sp);
	tfj_servingcert_pem_free(&cp);
	tfj_certgen_pair_free(&ca);
	tfj_certgen_pair_free(&ca2);
	tfj_certgen_pair_free(&stray);
	tfj_servingcert_free(a);
}

/*
 * A replica wrote a new CA into the CA Secret and stopped before the serving
 * Secret: the next sync makes a certificate from that CA and a bundle of it
 * and the previous CA, rather than a CA of its own.
 */
static void test_ca_ahead(void)
{
	struct tfj_kube *k = K;
	struct tfj_servingcert *a = manager(k, "t6", 0);
	struct tfj_servingcert_pem s1 = { 0 }, s2 = { 0 }, c = { 0 }, c2 = { 0 };
	struct tfj_certgen_pair ca = { 0 };

	if (!a)
		goto out;
	TFJ_CHECK_OK(tfj_servingcert_sync(a, NOW));
	read_secret(&s1, k, "t6");
	TFJ_CHECK_OK(tfj_certgen_ca(&ca, "ahead", NOW, 3650 * DAY));
	c.tls_crt = ca.cert_pem;
	c.tls_key = ca.key_pem;
	put_secret(k, "t6-ca-key", &c);
	TFJ_CHECK_OK(tfj_servingcert_sync(a, NOW + 60));
	read_secret(&s2, k, "t6");
	read_secret(&c2, k, "t6-ca-key");
	TFJ_CHECK(c2.tls_key && !strcmp(c2.tls_key, ca.key_pem));
	TFJ_CHECK_INT(count_certs(s2.ca_crt), 2);
	TFJ_CHECK(!strncmp(s2.ca_crt, ca.cert_pem, strlen(ca.cert_pem)));
	TFJ_CHECK_NOT_NULL(strstr(s2.ca_crt, s1.ca_crt));
	TFJ_CHECK_OK(tfj_certgen_verify(ca.cert_pem, s2.tls_crt, s2.tls_key, names[2], NOW + 60));
	TFJ_CHECK_EQ(tfj_servingcert_loads(a), 2);
out:
	tfj_servingcert_pem_free(&s1);
	tfj_servingcert_pem_free(&s2);
	tfj_servingcert_pem_free(&c2);
	tfj_certgen_pair_free(&ca);
	tfj_servingcert_free(a);
}

/* cert-manager's Secret: read only; served only when it verifies. */
static void test_external(void)
{
	struct fake *f = &F;
	struct tfj_kube *k = K;
	struct tfj_servingcert *ext = manager(k, "t3", 1), *maker = manager(k, "t3", 0);
	struct tfj_servingcert_pem good, bad = { 0 };
	struct tfj_certgen_pair ca = { 0 }, leaf = { 0 };
	cJSON *obj = NULL;
	char *pem = NULL;
	uint64_t gen = 0;
	int puts;

	if (!ext || !maker)
		goto out;
	TFJ_CHECK_INT(tfj_servingcert_sync(ext, NOW), TFJ_EUNAVAIL);
	TFJ_CHECK_INT(fake_count(f, "secrets", NS), 4);
	TFJ_CHECK_INT(tfj_servingcert_ready(ext), 0);
	/* Some other writer (here: a self-managed manager) makes it. */
	TFJ_CHECK_OK(tfj_servingcert_sync(maker, NOW));
	read_secret(&good, k, "t3");
	TFJ_CHECK_OK(tfj_servingcert_sync(ext, NOW));
	TFJ_CHECK_INT(tfj_servingcert_ready(ext), 1);
	TFJ_CHECK_OK(tfj_servingcert_ca(&pem, &gen, ext));
	TFJ_CHECK_STR(pem, good.ca_crt);
	/* Even far past expiry the external mode writes nothing: renewing is
	 * cert-manager's job. */
	puts = f->puts;
	TFJ_CHECK_OK(tfj_servingcert_sync(ext, NOW + 100 * DAY));
	TFJ_CHECK_INT(f->puts, puts);
	TFJ_CHECK_INT(tfj_servingcert_ready(ext), 1);
	/* A certificate from an untrusted CA is not served. */
	TFJ_CHECK_OK(tfj_certgen_ca(&ca, "intruder", NOW, 3650 * DAY));
	TFJ_CHECK_OK(tfj_certgen_leaf(&leaf, &ca, names, 4, NOW, 90 * DAY));
	bad.ca_crt = good.ca_crt;
	bad.tls_crt = leaf.cert_pem;
	bad.tls_key = leaf.key_pem;
	TFJ_CHECK_OK(tfj_servingcert_to_secret(&obj, &bad, NS, "t3"));
	{
		char path[128];
		cJSON *cur = NULL, *meta;

		snprintf(path, sizeof(path), "/api/v1/namespaces/" NS "/secrets/t3");
		TFJ_CHECK_OK(tfj_kube_get(k, &cur, path));
		meta = cJSON_GetObjectItem(obj, "metadata");
		cJSON_AddStringToObject(meta, "resourceVersion",
					cJSON_GetStringValue(cJSON_GetObjectItem(
						cJSON_GetObjectItem(cur, "metadata"),
						"resourceVersion")));
		TFJ_CHECK_OK(tfj_kube_replace(k, NULL, path, obj));
		cJSON_Delete(cur);
	}
	TFJ_CHECK_EQ(tfj_servingcert_loads(ext), 1);
	TFJ_CHECK_INT(tfj_servingcert_sync(ext, NOW + DAY), TFJ_EINVAL);
	TFJ_CHECK_EQ(tfj_servingcert_loads(ext), 1);
	cJSON_Delete(obj);
	tfj_certgen_pair_free(&ca);
	tfj_certgen_pair_free(&leaf);
	tfj_servingcert_pem_free(&good);
out:
	free(pem);
	tfj_servingcert_free(ext);
	tfj_servingcert_free(maker);
}

static enum tfj_report_code ok_auth(void *ud, const struct tfj_reportmsg *m, const char *token,
				    char *subject, size_t n, const char **reason)
{
	(void)ud;
	(void)token;
	(void)reason;
	snprintf(subject, n, "uid-%s", m->ref.pod);
	return TFJ_REPORT_OK;
}

/* A Register over a fresh channel to the server, verified with ca (NULL: plaintext). */
static grpc_status_code call(int port, const char *ca)
{
	Tfj__Report__V1__RegisterRequest reg = TFJ__REPORT__V1__REGISTER_REQUEST__INIT;
	Tfj__Report__V1__ReplicaRef ref;
	struct tfj_grpc_args args;
	grpc_channel *ch = NULL;
	grpc_status_code st;
	char target[64];

	snprintf(target, sizeof(target), "127.0.0.1:%d", port);
	tfj_grpc_args_init(&args);
	/* Dialled by address, checked against the Service's name (as agents see it). */
	tfj_grpc_args_str(&args, GRPC_SSL_TARGET_NAME_OVERRIDE_ARG, names[2]);
	tfj_grpc_args_int(&args, GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
	if (tfj_grpc_channel_new(&ch, target, ca, &args))
		return GRPC_STATUS_INTERNAL;
	rc_ref(&ref, "team-a", "mnist", "job-1", "worker", 0, "mnist-worker-0");
	reg.replica = &ref;
	st = rc_call(ch, TFJ_REPORT_PATH_REGISTER, &reg.base, NULL, 0, "tok", NULL);
	grpc_channel_destroy(ch);
	return st;
}

static void test_tls_server(void)
{
	struct tfj_servingcert_opts so = { 0 };
	struct tfj_servingcert *s = NULL;
	struct tfj_certgen_pair other = { 0 };
	struct tfj_report_opts o = { 0 };
	struct tfj_report *srv = NULL;
	char *ca = NULL, *ca2 = NULL;
	uint64_t gen = 0, gen2 = 0;
	int64_t now = tfj_clock_unix_ms() / 1000;

	/* A CA of 30 s: due for renewal 21 s in (fewer than 10 s left). */
	so.namespace = NS;
	so.secret = "t4";
	so.service = "tfjob-operator";
	so.ca_lifetime_s = 30;
	TFJ_CHECK_OK(tfj_servingcert_new(&s, K, &so));
	if (!s)
		return;
	grpc_init();
	TFJ_CHECK_OK(tfj_servingcert_sync(s, now));
	TFJ_CHECK_OK(tfj_servingcert_ca(&ca, &gen, s));
	o.addr = "127.0.0.1:0";
	o.auth = ok_auth;
	o.deliver = rc_deliver_ok;
	o.creds = tfj_servingcert_server_creds(s);
	TFJ_CHECK_NOT_NULL(o.creds);
	TFJ_CHECK_OK(tfj_report_start(&srv, &o));
	if (!srv || !ca)
		goto out;
	TFJ_CHECK_INT(call(tfj_report_port(srv), ca), GRPC_STATUS_OK);
	/* Another CA, or no TLS at all: no call gets through. */
	TFJ_CHECK_OK(tfj_certgen_ca(&other, "tfjob-operator-report-ca", now, 3650 * DAY));
	TFJ_CHECK_INT(call(tfj_report_port(srv), other.cert_pem), GRPC_STATUS_UNAVAILABLE);
	TFJ_CHECK_INT(call(tfj_report_port(srv), NULL), GRPC_STATUS_UNAVAILABLE);
	/* A new CA (the Secret rotated: sync as if 21 s on) reaches new
	 * connections without a restart: the new CA alone verifies them. */
	TFJ_CHECK_OK(tfj_servingcert_sync(s, now + 21));
	TFJ_CHECK_OK(tfj_servingcert_ca(&ca2, &gen2, s));
	TFJ_CHECK_NE(gen2, gen);
	if (ca2) {
		/* The new CA alone (the bundle's first certificate). */
		char *end = strstr(ca2, "-----END CERTIFICATE-----");

		if (end)
			end[strlen("-----END CERTIFICATE-----")] = '\0';
		TFJ_CHECK_INT(call(tfj_report_port(srv), ca2), GRPC_STATUS_OK);
		TFJ_CHECK_INT(call(tfj_report_port(srv), ca), GRPC_STATUS_UNAVAILABLE);
	}
out:
	tfj_report_stop(srv);
	tfj_certgen_pair_free(&other);
	free(ca);
	free(ca2);
	tfj_servingcert_free(s);
	grpc_shutdown();
}

int main(void)
{
	int rc;

	TFJ_RUN(test_pure);
	rc = fake_start(&F, "tok");
	if (fake_unavailable(&F, rc))
		return 77;
	TFJ_CHECK_OK(rc);
	K = fake_client(&F, NULL);
	if (K) {
		TFJ_RUN(test_create_share_rotate);
		TFJ_RUN(test_create_race);
		TFJ_RUN(test_external);
		TFJ_RUN(test_old_layout);
		TFJ_RUN(test_ca_ahead);
		TFJ_RUN(test_tls_server);
	}
	tfj_kube_free(K);
	fake_stop(&F);
	return tfj_test_finish();
}
