/*
 * itest_servingcert.c - the report channel's two Secrets (report/servingcert.h)
 * against the test bed's real kube-apiserver, written with a client that
 * holds only the grants the chart and deploy/rbac give the operator in its
 * namespace: create secrets, get and update the serving Secret and the CA
 * key Secret by name.
 *
 *  - a fresh install: the serving Secret (kubernetes.io/tls) holds ca.crt,
 *    tls.crt and tls.key but no ca.key; <secret>-ca-key holds the CA and
 *    the key of the bundle's first CA;
 *  - an upgrade: an install with the old combined Secret (ca.key in it) is
 *    moved apart on the first sync with its CA and certificate unchanged
 *    (agents keep verifying), and the Secret is not served anew;
 *  - the client may not read any other Secret of the namespace (the grants
 *    really are that narrow, so the test shows what the operator lives on).
 *
 * Exits 77 when no cluster answers. Runs in about 3 s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/certgen.h>
#include <tfj/err.h>
#include <tfj/log.h>

#include "itest_common.h"
#include "kube/kube.h"
#include "report/servingcert.h"
#include "tfj_test.h"

#define NOW 1800000000LL
#define DAY 86400LL

static char KC[512], NS[128];
static struct tfj_kube *K;   /* the test bed's admin */
static struct tfj_kube *OP;  /* the default service account, with the operator's grants */


static int create_json(const char *path, const char *json)
{
	cJSON *o = cJSON_Parse(json);
	int rc = o ? tfj_kube_create(K, NULL, path, o) : TFJ_EPARSE;

	cJSON_Delete(o);
	return rc;
}

/* The Role of charts/tfjob-operator/templates/rbac.yaml (<fullname>-report-tls). */
static int grant(void)
{
	char path[256], body[1536];

	snprintf(path, sizeof(path), "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles", NS);
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"Role\","
		 "\"metadata\":{\"name\":\"report-tls\"},\"rules\":["
		 "{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"verbs\":[\"create\"]},"
		 "{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],"
		 "\"resourceNames\":[\"rt\",\"up\"],\"verbs\":[\"get\",\"update\"]},"
		 "{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],"
		 "\"resourceNames\":[\"rt-ca-key\",\"up-ca-key\"],\"verbs\":[\"get\",\"update\"]}]}");
	if (create_json(path, body))
		return -1;
	snprintf(path, sizeof(path),
		 "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings", NS);
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"RoleBinding\","
		 "\"metadata\":{\"name\":\"report-tls\"},\"roleRef\":{\"apiGroup\":"
		 "\"rbac.authorization.k8s.io\",\"kind\":\"Role\",\"name\":\"report-tls\"},"
		 "\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"default\","
		 "\"namespace\":\"%s\"}]}", NS);
	return create_json(path, body);
}

/* A client of the scratch namespace's default service account (OP). */
static int connect_as_sa(void)
{
	struct tfj_kube_opts o = { 50, 100, 15000, 0, 60, "tfjob-itest-servingcert" };
	struct tfj_kubeconfig kc;
	char path[256];
	cJSON *req = cJSON_Parse("{\"apiVersion\":\"authentication.k8s.io/v1\","
				 "\"kind\":\"TokenRequest\",\"spec\":{\"expirationSeconds\":600}}");
	cJSON *resp = NULL;
	const char *t;
	int rc = -1, i;

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/serviceaccounts/default/token", NS);
	/* The default service account appears shortly after the namespace. */
	for (i = 0; i < 100 && req; i++) {
		rc = tfj_kube_create(K, &resp, path, req);
		if (rc != TFJ_ENOTFOUND)
			break;
		usleep(200000);
	}
	cJSON_Delete(req);
	t = rc ? NULL : cJSON_GetStringValue(cJSON_GetObjectItem(
					cJSON_GetObjectItem(resp, "status"), "token"));
	if (!t || tfj_kubeconfig_load_file(&kc, KC)) {
		cJSON_Delete(resp);
		return -1;
	}
	/* The same server and CA, but the account's token instead of the admin's. */
	free(kc.cert_file);
	free(kc.cert_data);
	free(kc.key_file);
	free(kc.key_data);
	free(kc.token);
	free(kc.token_file);
	kc.cert_file = kc.cert_data = kc.key_file = kc.key_data = kc.token_file = NULL;
	kc.token = strdup(t);
	cJSON_Delete(resp);
	rc = kc.token ? tfj_kube_new(&OP, &kc, &o) : -1;
	tfj_kubeconfig_free(&kc);
	return rc;
}

static struct tfj_servingcert *manager(const char *secret)
{
	struct tfj_servingcert_opts o = { 0 };
	struct tfj_servingcert *s = NULL;

	o.namespace = NS;
	o.secret = secret;
	o.service = "tfjob-operator";
	TFJ_CHECK_OK(tfj_servingcert_new(&s, OP, &o));
	return s;
}

/* Secret `name` as the API server holds it (admin read), and its type. */
static void get_secret(struct tfj_servingcert_pem *p, char *type, size_t tlen, const char *name)
{
	char path[256];
	cJSON *obj = NULL;

	memset(p, 0, sizeof(*p));
	type[0] = '\0';
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets/%s", NS, name);
	TFJ_CHECK_OK(tfj_kube_get(K, &obj, path));
	if (obj) {
		TFJ_CHECK_OK(tfj_servingcert_from_secret(p, obj));
		snprintf(type, tlen, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(obj, "type"))
						   ? cJSON_GetStringValue(cJSON_GetObjectItem(obj, "type"))
						   : "");
	}
	cJSON_Delete(obj);
}

static void test_fresh(void)
{
	struct tfj_servingcert *s = manager("rt");
	struct tfj_servingcert_pem sp = { 0 }, cp = { 0 };
	char type[64] = "", path[256];
	cJSON *obj = NULL;

	if (!s)
		return;
	TFJ_CHECK_OK(tfj_servingcert_sync(s, NOW));
	TFJ_CHECK_INT(tfj_servingcert_ready(s), 1);
	get_secret(&sp, type, sizeof(type), "rt");
	TFJ_CHECK_STR(type, "kubernetes.io/tls");
	TFJ_CHECK_NULL(sp.ca_key);
	TFJ_CHECK_NOT_NULL(sp.ca_crt);
	TFJ_CHECK_NOT_NULL(sp.tls_key);
	get_secret(&cp, type, sizeof(type), "rt-ca-key");
	TFJ_CHECK_STR(type, "kubernetes.io/tls");
	TFJ_CHECK_NULL(cp.ca_crt);
	TFJ_CHECK_STR(cp.tls_crt, sp.ca_crt);
	TFJ_CHECK_OK(tfj_certgen_key_matches(sp.ca_crt, cp.tls_key));
	/* A second sync keeps both (nothing is due). */
	TFJ_CHECK_OK(tfj_servingcert_sync(s, NOW + DAY));
	TFJ_CHECK_EQ(tfj_servingcert_loads(s), 1);
	/* The grants are by name: another Secret of the namespace is not readable. */
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets/default-token-x", NS);
	TFJ_CHECK_INT(tfj_kube_get(OP, &obj, path), TFJ_EFORBIDDEN);
	cJSON_Delete(obj);
	tfj_servingcert_pem_free(&sp);
	tfj_servingcert_pem_free(&cp);
	tfj_servingcert_free(s);
}

/* An install with the combined Secret of earlier versions. */
static void test_upgrade(void)
{
	struct tfj_certgen_pair ca = { 0 }, leaf = { 0 };
	struct tfj_servingcert_pem old = { 0 }, sp = { 0 }, cp = { 0 };
	struct tfj_servingcert *s = NULL;
	char type[64] = "", path[256], *pem = NULL, nm[TFJ_SERVINGCERT_NAMES][256];
	const char *names[TFJ_SERVINGCERT_NAMES];
	cJSON *obj = NULL;
	uint64_t gen;
	int i;

	/* The old certificate names the Service the manager below serves. */
	TFJ_CHECK_OK(tfj_servingcert_names(nm, "tfjob-operator", NS, NULL));
	for (i = 0; i < TFJ_SERVINGCERT_NAMES; i++)
		names[i] = nm[i];
	TFJ_CHECK_OK(tfj_certgen_ca(&ca, "old-ca", NOW - DAY, 3650 * DAY));
	TFJ_CHECK_OK(tfj_certgen_leaf(&leaf, &ca, names, 4, NOW - DAY, 90 * DAY));
	old.ca_crt = ca.cert_pem;
	old.ca_key = ca.key_pem;
	old.tls_crt = leaf.cert_pem;
	old.tls_key = leaf.key_pem;
	TFJ_CHECK_OK(tfj_servingcert_to_secret(&obj, &old, NS, "up"));
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets", NS);
	TFJ_CHECK_OK(tfj_kube_create(K, NULL, path, obj));
	cJSON_Delete(obj);

	s = manager("up");
	if (!s)
		goto out;
	TFJ_CHECK_OK(tfj_servingcert_sync(s, NOW));
	get_secret(&sp, type, sizeof(type), "up");
	TFJ_CHECK_NULL(sp.ca_key);
	/* Agents notice nothing: the same CA bundle and certificate. */
	TFJ_CHECK_STR(sp.ca_crt, old.ca_crt);
	TFJ_CHECK_STR(sp.tls_crt, old.tls_crt);
	TFJ_CHECK_EQ(tfj_servingcert_loads(s), 1);
	get_secret(&cp, type, sizeof(type), "up-ca-key");
	TFJ_CHECK_STR(type, "kubernetes.io/tls");
	TFJ_CHECK_STR(cp.tls_crt, old.ca_crt);
	TFJ_CHECK(cp.tls_key && !strcmp(cp.tls_key, old.ca_key)); /* no key in the log */
	TFJ_CHECK_OK(tfj_servingcert_ca(&pem, &gen, s));
	TFJ_CHECK_STR(pem, old.ca_crt);
out:
	free(pem);
	tfj_servingcert_pem_free(&sp);
	tfj_servingcert_pem_free(&cp);
	tfj_certgen_pair_free(&ca);
	tfj_certgen_pair_free(&leaf);
	tfj_servingcert_free(s);
}

int main(void)
{
	int rc;

	tfj_log_set_component("itest");
	rc = it_start(&K, KC, sizeof(KC), NS, sizeof(NS), "cert");
	if (rc)
		return rc;
	if (grant() || connect_as_sa()) {
		fprintf(stderr, "setup: %s\n", tfj_err_detail());
		TFJ_CHECK(0);
		return it_finish(K, NS);
	}
	TFJ_RUN(test_fresh);
	TFJ_RUN(test_upgrade);
	tfj_kube_free(OP);
	return it_finish(K, NS);
}
