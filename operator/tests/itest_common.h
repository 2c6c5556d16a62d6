/*
 * itest_common.h - shared helpers of the integration tests: find the test
 * bed's kubeconfig, skip (exit 77) when no API server answers, apply the
 * CRD, make a scratch namespace, and play kubelet on pod status.
 *
 * Header-only (static inline) so each itest program includes what it uses.
 */
#ifndef TFJ_ITEST_COMMON_H
#define TFJ_ITEST_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>

#include <tfj/err.h>

#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "tfj_test.h"

#define IT_TESTBED_KUBECONFIG "/var/lib/tfjob-testbed/kubeconfig"

/* The repository root, from this file's path (operator/tests/itest_common.h). */
static inline void it_repo_root(char *out, size_t outlen)
{
	const char *f = __FILE__;
	const char *p = strstr(f, "/operator/tests/");
	size_t n = p ? (size_t)(p - f) : 0;
	if (!p || n >= outlen) {
		snprintf(out, outlen, ".");
		return;
	}
	memcpy(out, f, n);
	out[n] = '\0';
}

/* The kubeconfig path: $KUBECONFIG, else the test bed's. NULL if none. */
static inline const char *it_kubeconfig(void)
{
	const char *k = getenv("KUBECONFIG");
	if (k && *k && access(k, R_OK) == 0)
		return k;
	if (access(IT_TESTBED_KUBECONFIG, R_OK) == 0)
		return IT_TESTBED_KUBECONFIG;
	return NULL;
}

/* A client for the test bed, or NULL (the caller exits 77). */
static inline struct tfj_kube *it_connect(char *kcpath, size_t kclen)
{
	struct tfj_kubeconfig kc;
	struct tfj_kube_opts o = { 100, 200, 15000, 0, 60, "tfjob-itest" };
	struct tfj_kube *k = NULL;
	const char *p = it_kubeconfig();
	cJSON *v = NULL;

	if (!p) {
		fprintf(stderr, "skip: no kubeconfig ($KUBECONFIG or %s)\n", IT_TESTBED_KUBECONFIG);
		return NULL;
	}
	snprintf(kcpath, kclen, "%s", p);
	if (tfj_kubeconfig_load_file(&kc, p)) {
		fprintf(stderr, "skip: kubeconfig %s unusable: %s\n", p, tfj_err_detail());
		return NULL;
	}
	if (tfj_kube_new(&k, &kc, &o)) {
		fprintf(stderr, "skip: client: %s\n", tfj_err_detail());
		tfj_kubeconfig_free(&kc);
		return NULL;
	}
	tfj_kubeconfig_free(&kc);
	if (tfj_kube_get(k, &v, "/version")) {
		fprintf(stderr, "skip: API server not reachable: %s\n", tfj_err_detail());
		tfj_kube_free(k);
		return NULL;
	}
	{
		const char *gv = cJSON_GetStringValue(cJSON_GetObjectItem(v, "gitVersion"));
		fprintf(stderr, "API server %s\n", gv ? gv : "?");
	}
	cJSON_Delete(v);
	return k;
}

/* kubectl from the test bed if built, else PATH. */
static inline int it_kubectl(const char *kcpath, const char *args)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd),
		 "K=$(ls -d /var/cache/tfjob/kubernetes-*/bin/kubectl 2>/dev/null | tail -1); "
		 "${K:-kubectl} --kubeconfig '%s' %s", kcpath, args);
	return system(cmd) == 0 ? 0 : -1;
}

/* Applies deploy/crd/ and waits until TFJobs can be listed. */
static inline int it_apply_crd(struct tfj_kube *k, const char *kcpath)
{
	char root[512], args[1024];
	it_repo_root(root, sizeof(root));
	snprintf(args, sizeof(args), "apply --server-side --force-conflicts -f '%s/deploy/crd/' >&2",
		 root);
	if (it_kubectl(kcpath, args))
		return -1;
	for (int i = 0; i < 100; i++) {
		cJSON *l = NULL;
		if (tfj_kube_list(k, &l, "/apis/kubeflow.org/v1/tfjobs?limit=1") == 0) {
			cJSON_Delete(l);
			return 0;
		}
		usleep(200000);
	}
	return -1;
}

static inline int it_create_ns(struct tfj_kube *k, const char *ns)
{
	char s[256];
	cJSON *o;
	int rc;
	snprintf(s, sizeof(s), "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":"
		 "{\"name\":\"%s\",\"labels\":{\"tfjob-itest\":\"1\"}}}", ns);
	o = cJSON_Parse(s);
	rc = tfj_kube_create(k, NULL, "/api/v1/namespaces", o);
	cJSON_Delete(o);
	return rc;
}

static inline void it_delete_ns(struct tfj_kube *k, const char *ns)
{
	char p[256];
	snprintf(p, sizeof(p), "/api/v1/namespaces/%s", ns);
	tfj_kube_delete(k, p, NULL, "Background");
}

/*
 * The start of every itest main(): connect to the test bed (*k, kubeconfig
 * path in kcpath) and apply the CRD; with `ns`, also make the scratch
 * namespace tfj-itest-<tag>-<pid> (checked). Returns 0, or the code main()
 * exits with: 77 (skipped) when no API server answers, 1 when the CRD
 * cannot be applied (*k is then freed and NULL).
 */
static inline int it_start(struct tfj_kube **k, char *kcpath, size_t kclen, char *ns,
			   size_t nslen, const char *tag)
{
	*k = it_connect(kcpath, kclen);
	if (!*k)
		return 77;
	if (it_apply_crd(*k, kcpath)) {
		fprintf(stderr, "could not apply the CRD: %s\n", tfj_err_detail());
		tfj_kube_free(*k);
		*k = NULL;
		return 1;
	}
	if (ns) {
		snprintf(ns, nslen, "tfj-itest-%s-%ld", tag, (long)getpid());
		TFJ_CHECK_INT(it_create_ns(*k, ns), 0);
	}
	return 0;
}

/*
 * A token from the TokenRequest API for namespace ns's default service
 * account, audience aud, bound to pod `pod` (uid) unless pod is NULL.
 * *out malloc'd. The default service account appears shortly after the
 * namespace: TFJ_ENOTFOUND is retried for up to 20 s.
 */
static inline int it_token(char **out, struct tfj_kube *k, const char *ns, const char *aud,
			   const char *pod, const char *uid)
{
	char path[256], body[1024];
	cJSON *req, *resp = NULL;
	int rc = -1, i;

	*out = NULL;
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/serviceaccounts/default/token", ns);
	if (pod)
		snprintf(body, sizeof(body), "{\"apiVersion\":\"authentication.k8s.io/v1\","
			 "\"kind\":\"TokenRequest\",\"spec\":{\"audiences\":[\"%s\"],"
			 "\"expirationSeconds\":600,\"boundObjectRef\":{\"kind\":\"Pod\","
			 "\"apiVersion\":\"v1\",\"name\":\"%s\",\"uid\":\"%s\"}}}", aud, pod, uid);
	else
		snprintf(body, sizeof(body), "{\"apiVersion\":\"authentication.k8s.io/v1\","
			 "\"kind\":\"TokenRequest\",\"spec\":{\"audiences\":[\"%s\"],"
			 "\"expirationSeconds\":600}}", aud);
	req = cJSON_Parse(body);
	for (i = 0; i < 100; i++) {
		rc = tfj_kube_create(k, &resp, path, req);
		if (rc != TFJ_ENOTFOUND)
			break;
		usleep(200000);
	}
	cJSON_Delete(req);
	if (rc == 0) {
		const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(
			cJSON_GetObjectItem(resp, "status"), "token"));

		*out = t ? strdup(t) : NULL;
		rc = *out ? 0 : -1;
	} else {
		fprintf(stderr, "TokenRequest failed: %s\n", tfj_err_detail());
	}
	cJSON_Delete(resp);
	return rc;
}

/* kind "tfjobs" or a core kind ("pods"): a fresh GET of ns/name, or NULL. */
static inline cJSON *it_get(struct tfj_kube *k, const char *ns, const char *kind,
			    const char *name)
{
	char path[512];
	cJSON *o = NULL;

	snprintf(path, sizeof(path), "%s/namespaces/%s/%s/%s",
		 strcmp(kind, "tfjobs") ? "/api/v1" : "/apis/kubeflow.org/v1", ns, kind, name);
	return tfj_kube_get(k, &o, path) == 0 ? o : NULL;
}

/* The end of every itest main(): delete the namespace, free k, report. */
static inline int it_finish(struct tfj_kube *k, const char *ns)
{
	if (ns)
		it_delete_ns(k, ns);
	tfj_kube_free(k);
	return tfj_test_finish();
}

/* Pods of a job, as a new LIST result (NULL on error). */
static inline cJSON *it_job_pods(struct tfj_kube *k, const char *ns, const char *job,
				 const char *res)
{
	char p[512];
	cJSON *l = NULL;
	snprintf(p, sizeof(p), "/api/v1/namespaces/%s/%s?labelSelector="
		 "training.kubeflow.org%%2Fjob-name%%3D%s", ns, res, job);
	if (tfj_kube_list(k, &l, p))
		return NULL;
	return l;
}

static inline int it_count(struct tfj_kube *k, const char *ns, const char *job, const char *res)
{
	cJSON *l = it_job_pods(k, ns, job, res);
	int n = l ? cJSON_GetArraySize(cJSON_GetObjectItem(l, "items")) : -1;
	cJSON_Delete(l);
	return n;
}

/* Sets a pod's status as the kubelet would (status subresource). */
static inline int it_pod_phase(struct tfj_kube *k, const char *ns, const char *pod,
			       const char *phase, int exit_code)
{
	char p[512], body[2048];
	if (!strcmp(phase, "Running"))
		snprintf(body, sizeof(body),
			 "{\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\","
			 "\"status\":\"True\"}],\"containerStatuses\":[{\"name\":\"tensorflow\","
			 "\"image\":\"localhost/tfjob-itest:1\",\"imageID\":\"\",\"ready\":true,"
			 "\"restartCount\":0,\"started\":true,\"state\":{\"running\":{\"startedAt\":"
			 "\"2026-01-01T00:00:00Z\"}}}]}}");
	else
		snprintf(body, sizeof(body),
			 "{\"status\":{\"phase\":\"%s\",\"containerStatuses\":[{\"name\":\"tensorflow\","
			 "\"image\":\"localhost/tfjob-itest:1\",\"imageID\":\"\",\"ready\":false,"
			 "\"restartCount\":0,\"started\":false,\"state\":{\"terminated\":{\"exitCode\":%d,"
			 "\"reason\":\"%s\",\"startedAt\":\"2026-01-01T00:00:00Z\","
			 "\"finishedAt\":\"2026-01-01T00:01:00Z\"}}}]}}",
			 phase, exit_code, exit_code ? "Error" : "Completed");
	snprintf(p, sizeof(p), "/api/v1/namespaces/%s/pods/%s/status", ns, pod);
	return tfj_kube_patch(k, NULL, p, TFJ_KUBE_PATCH_STRATEGIC, body);
}

/* 1 when the TFJob's condition `type` is True. */
static inline int it_job_condition(struct tfj_kube *k, const char *ns, const char *job,
				   const char *type)
{
	char p[512];
	cJSON *j = NULL, *c;
	int yes = 0;
	snprintf(p, sizeof(p), "/apis/kubeflow.org/v1/namespaces/%s/tfjobs/%s", ns, job);
	if (tfj_kube_get(k, &j, p))
		return 0;
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(cJSON_GetObjectItem(j, "status"), "conditions")) {
		const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(c, "type"));
		const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(c, "status"));
		if (t && s && !strcmp(t, type) && !strcmp(s, "True"))
			yes = 1;
	}
	cJSON_Delete(j);
	return yes;
}

/* Polls cond(ud) every 100 ms for up to `seconds`. */
static inline int it_wait(int (*cond)(void *), void *ud, int seconds)
{
	for (int i = 0; i < seconds * 10; i++) {
		if (cond(ud))
			return 1;
		usleep(100000);
	}
	return 0;
}

#endif
