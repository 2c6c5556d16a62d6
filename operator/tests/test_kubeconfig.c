/*
 * test_kubeconfig.c - kubeconfig parsing: inline data, files, in-cluster,
 * and broken configurations that must fail with a clear error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tfj/err.h>
#include <tfj/file.h>

#include "kube/kubeconfig.h"
#include "tfj_test.h"
#include "tfj_testutil.h"

static char dir[256];

static void write_file(const char *name, const char *text)
{
	char p[512];
	FILE *f;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	TFJ_CHECK(f != NULL);
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
}

/* "-----BEGIN CERTIFICATE-----\nCA\n" and friends in base64. */
#define CA_B64 "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCg=="
#define CA_TXT "-----BEGIN CERTIFICATE-----\nCA\n"

static const char *inline_cfg =
	"apiVersion: v1\n"
	"kind: Config\n"
	"current-context: dev\n"
	"contexts:\n"
	"- name: other\n"
	"  context: {cluster: nope, user: nope}\n"
	"- name: dev\n"
	"  context:\n"
	"    cluster: local\n"
	"    user: admin\n"
	"    namespace: training\n"
	"clusters:\n"
	"- name: local\n"
	"  cluster:\n"
	"    server: https://127.0.0.1:6443/\n"
	"    certificate-authority-data: " CA_B64 "\n"
	"users:\n"
	"- name: admin\n"
	"  user:\n"
	"    client-certificate-data: " CA_B64 "\n"
	"    client-key-data: " CA_B64 "\n";

static void test_inline_data(void)
{
	struct tfj_kubeconfig kc;
	int rc = tfj_kubeconfig_parse(&kc, inline_cfg, strlen(inline_cfg), NULL);
	TFJ_CHECK_INT(rc, 0);
	if (rc)
		return;
	TFJ_CHECK_STR(kc.server, "https://127.0.0.1:6443");
	TFJ_CHECK_STR(kc.namespace, "training");
	TFJ_CHECK(kc.ca_data && kc.ca_len == strlen(CA_TXT) && !memcmp(kc.ca_data, CA_TXT, kc.ca_len));
	TFJ_CHECK(kc.cert_data && kc.cert_len == strlen(CA_TXT));
	TFJ_CHECK(kc.key_data && kc.key_len == strlen(CA_TXT));
	TFJ_CHECK(kc.ca_file == NULL && kc.token == NULL && kc.token_file == NULL);
	tfj_kubeconfig_free(&kc);
	tfj_kubeconfig_free(&kc); /* idempotent */
	tfj_kubeconfig_free(NULL);
}

static void test_files_and_token(void)
{
	struct tfj_kubeconfig kc;
	char path[512], want[512];
	int rc;

	write_file("config",
		   "current-context: c\n"
		   "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
		   "clusters:\n"
		   "- name: k\n"
		   "  cluster: {server: 'https://[::1]:6443', certificate-authority: ca.crt}\n"
		   "users:\n"
		   "- name: u\n"
		   "  user: {tokenFile: /var/run/tok}\n");
	snprintf(path, sizeof(path), "%s/config", dir);
	rc = tfj_kubeconfig_load_file(&kc, path);
	TFJ_CHECK_INT(rc, 0);
	if (rc)
		return;
	snprintf(want, sizeof(want), "%s/ca.crt", dir);
	TFJ_CHECK_STR(kc.ca_file, want);       /* relative to the kubeconfig's directory */
	TFJ_CHECK_STR(kc.token_file, "/var/run/tok");
	TFJ_CHECK_STR(kc.server, "https://[::1]:6443");
	TFJ_CHECK(kc.namespace == NULL);
	tfj_kubeconfig_free(&kc);

	write_file("config2",
		   "current-context: c\n"
		   "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
		   "clusters: [{name: k, cluster: {server: 'https://h:1'}}]\n"
		   "users: [{name: u, user: {token: abc.def, client-certificate: c.pem, "
		   "client-key: /k.pem}}]\n");
	snprintf(path, sizeof(path), "%s/config2", dir);
	rc = tfj_kubeconfig_load_file(&kc, path);
	TFJ_CHECK_INT(rc, 0);
	TFJ_CHECK_STR(kc.token, "abc.def");
	TFJ_CHECK_STR(kc.key_file, "/k.pem");
	tfj_kubeconfig_free(&kc);
}

static void expect_fail(const char *text, int code, const char *needle)
{
	struct tfj_kubeconfig kc;
	int rc = tfj_kubeconfig_parse(&kc, text, strlen(text), NULL);
	TFJ_CHECK_INT(rc, code);
	if (needle && !strstr(tfj_err_detail(), needle))
		tfj_test_fail(__FILE__, __LINE__, "detail \"%s\" lacks \"%s\"", tfj_err_detail(),
			      needle);
	TFJ_CHECK(kc.server == NULL && kc.token == NULL);
}

static void test_broken(void)
{
	expect_fail("", TFJ_EPARSE, "not a map");
	expect_fail("key: [unclosed\n", TFJ_EPARSE, "line");
	expect_fail("- a\n- b\n", TFJ_EPARSE, "not a map");
	expect_fail("apiVersion: v1\n", TFJ_ENOTFOUND, "current-context");
	expect_fail("current-context: x\ncontexts: []\n", TFJ_ENOTFOUND, "no entry named x");
	expect_fail("current-context: x\ncontexts: 5\n", TFJ_EPARSE, "not a list");
	expect_fail("current-context: x\ncontexts: [{name: x, context: {cluster: k}}]\n"
		    "clusters: [{name: k, cluster: {server: 'http://h:80'}}]\n",
		    TFJ_EINVAL, "https");
	expect_fail("current-context: x\ncontexts: [{name: x, context: {cluster: k}}]\n"
		    "clusters: [{name: k, cluster: {certificate-authority: /a}}]\n",
		    TFJ_EPARSE, "no server");
	expect_fail("current-context: x\ncontexts: [{name: x, context: {cluster: k}}]\n"
		    "clusters: [{name: k, cluster: {server: 'https://h', "
		    "insecure-skip-tls-verify: true}}]\n",
		    TFJ_EUNSUPP, "insecure");
	expect_fail("current-context: x\ncontexts: [{name: x, context: {cluster: k}}]\n"
		    "clusters: [{name: k, cluster: {server: 'https://h', "
		    "certificate-authority-data: '!!notbase64'}}]\n",
		    TFJ_EINVAL, "base64");
	expect_fail("current-context: x\ncontexts: [{name: x, context: {cluster: k, user: u}}]\n"
		    "clusters: [{name: k, cluster: {server: 'https://h'}}]\n"
		    "users: [{name: u, user: {exec: {command: aws}}}]\n",
		    TFJ_EUNSUPP, "exec");
	expect_fail("current-context: x\ncontexts: [{name: x, context: {cluster: k, user: u}}]\n"
		    "clusters: [{name: k, cluster: {server: 'https://h'}}]\n"
		    "users: [{name: u, user: {client-certificate: /c}}]\n",
		    TFJ_EINVAL, "without a key");
	expect_fail("current-context: x\ncontexts: [{name: x, context: {cluster: k, user: u}}]\n"
		    "clusters: [{name: k, cluster: {server: 'https://h'}}]\n"
		    "users: [{name: u, user: {token: [1, 2]}}]\n",
		    TFJ_EPARSE, "not a string");
	expect_fail("current-context: x\ncontexts: [{name: x, context: {cluster: k}}]\n"
		    "clusters: [{name: k, cluster: {server: 'https://h a'}}]\n",
		    TFJ_EINVAL, "space");
}

static void test_oversized_and_missing(void)
{
	struct tfj_kubeconfig kc;
	char path[512];
	size_t big = TFJ_KUBECONFIG_MAX_FILE + 10;
	char *text = malloc(big + 1);
	FILE *f;

	TFJ_CHECK(text != NULL);
	if (!text)
		return;
	memset(text, '#', big);
	text[big] = '\0';
	TFJ_CHECK_INT(tfj_kubeconfig_parse(&kc, text, big, NULL), TFJ_ETOOBIG);
	snprintf(path, sizeof(path), "%s/big", dir);
	f = fopen(path, "w");
	if (f) {
		fwrite(text, 1, big, f);
		fclose(f);
	}
	TFJ_CHECK_INT(tfj_kubeconfig_load_file(&kc, path), TFJ_ETOOBIG);
	free(text);
	snprintf(path, sizeof(path), "%s/absent", dir);
	TFJ_CHECK_INT(tfj_kubeconfig_load_file(&kc, path), TFJ_ENOTFOUND);
	TFJ_CHECK(strstr(tfj_err_detail(), "absent") != NULL);
}

static void test_in_cluster(void)
{
	struct tfj_kubeconfig kc;
	char sa[300], p[400];
	int rc;

	snprintf(sa, sizeof(sa), "%s/sa", dir);
	mkdir(sa, 0700);
	unsetenv("KUBERNETES_SERVICE_HOST");
	TFJ_CHECK_INT(tfj_kubeconfig_in_cluster(&kc, sa), TFJ_ENOTFOUND);
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	TFJ_CHECK_INT(tfj_kubeconfig_in_cluster(&kc, sa), TFJ_ENOTFOUND); /* no token yet */
	write_file("sa/token", "tok\n");
	write_file("sa/namespace", "ops\n");
	rc = tfj_kubeconfig_in_cluster(&kc, sa);
	TFJ_CHECK_INT(rc, 0);
	TFJ_CHECK_STR(kc.server, "https://10.96.0.1:443");
	TFJ_CHECK_STR(kc.namespace, "ops");
	snprintf(p, sizeof(p), "%s/token", sa);
	TFJ_CHECK_STR(kc.token_file, p);
	TFJ_CHECK(kc.in_cluster == 1);
	tfj_kubeconfig_free(&kc);
	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	TFJ_CHECK_INT(tfj_kubeconfig_in_cluster(&kc, sa), 0);
	TFJ_CHECK_STR(kc.server, "https://[fd00::1]:443");
	tfj_kubeconfig_free(&kc);
	setenv("KUBERNETES_SERVICE_PORT", "44x", 1);
	TFJ_CHECK_INT(tfj_kubeconfig_in_cluster(&kc, sa), TFJ_EINVAL);
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
}

static void test_read_file_cap(void)
{
	char *out;
	size_t len;
	char p[400];
	write_file("exact", "12345");
	snprintf(p, sizeof(p), "%s/exact", dir);
	TFJ_CHECK_INT(tfj_file_read(&out, &len, p, 5, 0), 0);
	TFJ_CHECK_INT(len, 5);
	TFJ_CHECK_STR(out, "12345");
	free(out);
	TFJ_CHECK_INT(tfj_file_read(&out, &len, p, 4, 0), TFJ_ETOOBIG);
	TFJ_CHECK(out == NULL);
}

int main(void)
{
	if (tfj_testutil_tmpdir(dir, sizeof(dir), "tfj-kubeconfig")) {
		perror("mkdtemp");
		return 1;
	}
	TFJ_RUN(test_inline_data);
	TFJ_RUN(test_files_and_token);
	TFJ_RUN(test_broken);
	TFJ_RUN(test_oversized_and_missing);
	TFJ_RUN(test_in_cluster);
	TFJ_RUN(test_read_file_cap);
	tfj_testutil_rmtree(dir);
	return tfj_test_finish();
}
