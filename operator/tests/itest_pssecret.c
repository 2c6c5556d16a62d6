/*
 * itest_pssecret.c - the job's ps Secret against the test bed's real
 * kube-apiserver (tfjob/pssecret.h): a leader failover cannot strand a
 * TFJob.
 *
 * The state a leader leaves when it dies right after POSTing the job's
 * Secret and before recording its name (or making the NetworkPolicy or a
 * pod): a Secret of the job (generateName "<job>-ps-", controlled by the
 * TFJob) and nothing else. Beside it, a stranger's Secret under the fixed
 * name `<job>-ps-secret` that older operators used. A new leader (a
 * controller started on that state) makes its own Secret, records the
 * name the API server gave it in status.psSecretName, and creates the
 * pods, each mounting that Secret: neither Secret it did not record holds
 * the job back or is mounted. A restart (a third controller, an empty
 * memo) makes a lost pod again with the same Secret and makes no new one.
 *
 * Exits 77 when no cluster answers. Same setup as itest_requests.c
 * (itest_policy_util.h): one namespace, our own managedBy, pods no kubelet
 * will run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tfj/err.h>
#include <tfj/log.h>

#include "app/controller.h"
#include "itest_common.h"
#include "itest_policy_util.h"
#include "kube/kube.h"
#include "tfj_test.h"

#define MANAGER "tfjob.test/itest-pssecret"
#define JOB "fo"

/* A controller on namespace e->ns (made before), as ip_setup_opts makes it. */
static int start_controller(struct ip_env *e)
{
	struct tfj_controller_opts o = { 0 };

	o.namespace = e->ns;
	o.workers = 2;
	o.manager = MANAGER;
	if (tfj_controller_new(&e->c, K, &o) || tfj_controller_start(e->c, 30000)) {
		tfj_test_fail(__FILE__, __LINE__, "controller: %s", tfj_err_detail());
		return -1;
	}
	return 0;
}

/*
 * POSTs an Opaque Secret to e->ns: named `name`, or generateName `gen`
 * when name is NULL; controlled by TFJob JOB (uid) when uid is set. Its
 * name into out.
 */
static int make_secret(struct ip_env *e, const char *name, const char *gen, const char *uid,
		       char *out, size_t outlen)
{
	char body[1024], path[256];
	cJSON *o, *got = NULL;
	const char *n;
	int rc;

	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"type\":\"Opaque\","
		 "\"metadata\":{\"%s\":\"%s\",\"labels\":{\"training.kubeflow.org/job-name\":\"%s\"}"
		 "%s%s%s},\"stringData\":{\"token\":\"%s\"}}",
		 name ? "name" : "generateName", name ? name : gen, uid ? JOB : "stranger",
		 uid ? ",\"ownerReferences\":[{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
		       "\"name\":\"" JOB "\",\"controller\":true,\"uid\":\"" : "",
		 uid ? uid : "", uid ? "\"}]" : "",
		 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
	if (!(o = cJSON_Parse(body)))
		return tfj_err_set(TFJ_EINVAL, "bad secret body");
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets", e->ns);
	rc = tfj_kube_create(K, &got, path, o);
	cJSON_Delete(o);
	n = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(got, "metadata"), "name"));
	snprintf(out, outlen, "%s", n ? n : "");
	cJSON_Delete(got);
	return rc;
}

/* The Secret pod `pod` mounts as its ps secret, into out ("" when none). */
static void pod_secret(struct ip_env *e, const char *pod, char *out, size_t outlen)
{
	cJSON *p = it_get(K, e->ns, "pods", pod), *v;
	const char *sn = NULL;

	cJSON_ArrayForEach(v, cJSON_GetObjectItem(cJSON_GetObjectItem(p, "spec"), "volumes")) {
		const char *vn = cJSON_GetStringValue(cJSON_GetObjectItem(v, "name"));

		if (vn && !strcmp(vn, "tfjob-ps-secret"))
			sn = cJSON_GetStringValue(
				cJSON_GetObjectItem(cJSON_GetObjectItem(v, "secret"), "secretName"));
	}
	snprintf(out, outlen, "%s", sn ? sn : "");
	cJSON_Delete(p);
}

/* Secrets of the namespace labelled with the job's name (the stranger's is not). */
static int job_secrets(struct ip_env *e)
{
	char path[256];
	cJSON *l = NULL;
	int n;

	snprintf(path, sizeof(path),
		 "/api/v1/namespaces/%s/secrets?labelSelector=training.kubeflow.org%%2Fjob-name%%3D"
		 JOB, e->ns);
	if (tfj_kube_list(K, &l, path))
		return -1;
	n = cJSON_GetArraySize(cJSON_GetObjectItem(l, "items"));
	cJSON_Delete(l);
	return n;
}

static int name_recorded(void *ud)
{
	struct ip_ctx *x = ud;
	char name[256];

	ip_status_str(x, "psSecretName", name, sizeof(name));
	return name[0] != '\0';
}

static void test_failover_does_not_strand(void)
{
	struct ip_env e;
	struct ip_ctx x;
	char uid[128] = "", orphan[256] = "", stranger[256] = "", name[256] = "", got[256];
	static const char *const pods[] = { JOB "-ps-0", JOB "-worker-0", JOB "-worker-1" };
	cJSON *j;
	const char *u;

	memset(&e, 0, sizeof(e));
	snprintf(e.ns, sizeof(e.ns), "tfj-itps-%ld", (long)getpid());
	e.manager = MANAGER;
	if (it_create_ns(K, e.ns)) {
		tfj_test_fail(__FILE__, __LINE__, "create namespace %s: %s", e.ns, tfj_err_detail());
		return;
	}
	e.ns_made = 1;
	ip_ctx_init(&x, &e, JOB);

	/* The dead leader's state: the TFJob, a Secret of it, nothing else. */
	TFJ_CHECK_INT(ip_create_job(&e, JOB, 1, 2, "OnFailure", "", ""), 0);
	j = ip_get_job(&x);
	u = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "metadata"), "uid"));
	snprintf(uid, sizeof(uid), "%s", u ? u : "");
	cJSON_Delete(j);
	TFJ_CHECK(uid[0] != '\0');
	TFJ_CHECK_INT(make_secret(&e, NULL, JOB "-ps-", uid, orphan, sizeof(orphan)), 0);
	TFJ_CHECK(strncmp(orphan, JOB "-ps-", strlen(JOB "-ps-")) == 0);
	/* And a stranger's Secret under the older fixed name. */
	TFJ_CHECK_INT(make_secret(&e, JOB "-ps-secret", NULL, NULL, stranger, sizeof(stranger)), 0);
	TFJ_CHECK_STR(stranger, JOB "-ps-secret");
	TFJ_CHECK_EQ(it_count(K, e.ns, JOB, "pods"), 0);

	/* The new leader. */
	if (start_controller(&e))
		goto out;
	x.n = 3;
	IP_EXPECT(&x, ip_wait(ip_live_pods_eq, &x, 60), "all pods created after a failover");
	IP_EXPECT(&x, ip_wait(name_recorded, &x, 10), "status.psSecretName recorded");
	ip_status_str(&x, "psSecretName", name, sizeof(name));
	fprintf(stderr, "dead leader's Secret %s, stranger's %s, recorded %s\n", orphan, stranger,
		name);
	TFJ_CHECK(strncmp(name, JOB "-ps-", strlen(JOB "-ps-")) == 0);
	TFJ_CHECK(strcmp(name, orphan) != 0);
	TFJ_CHECK(strcmp(name, stranger) != 0);
	j = it_get(K, e.ns, "secrets", name);
	TFJ_CHECK_NOT_NULL(j);
	cJSON_Delete(j);
	for (size_t i = 0; i < sizeof(pods) / sizeof(pods[0]); i++) {
		pod_secret(&e, pods[i], got, sizeof(got));
		TFJ_CHECK_STR(got, name);
	}
	/* The dead leader's Secret and the new one; the stranger's is left alone. */
	TFJ_CHECK_EQ(job_secrets(&e), 2);
	j = it_get(K, e.ns, "secrets", stranger);
	TFJ_CHECK_NOT_NULL(j);
	cJSON_Delete(j);
	tfj_controller_free(e.c);
	e.c = NULL;

	/* A restart (an empty memo): a lost pod comes back with the same Secret. */
	{
		char p[512];

		snprintf(p, sizeof(p), "/api/v1/namespaces/%s/pods/%s", e.ns, JOB "-worker-1");
		TFJ_CHECK_INT(tfj_kube_delete_grace(K, p, NULL, "Background", 0), 0);
	}
	x.pod = JOB "-worker-1";
	IP_EXPECT(&x, ip_wait(ip_pod_gone, &x, 30), "pod deleted");
	if (start_controller(&e))
		goto out;
	IP_EXPECT(&x, ip_wait(ip_live_pods_eq, &x, 60), "pod made again after a restart");
	pod_secret(&e, JOB "-worker-1", got, sizeof(got));
	TFJ_CHECK_STR(got, name);
	ip_status_str(&x, "psSecretName", got, sizeof(got));
	TFJ_CHECK_STR(got, name);
	TFJ_CHECK_EQ(job_secrets(&e), 2);
out:
	ip_teardown(&e);
}

int main(void)
{
	tfj_log_set_component("itest");
	if (ip_init())
		return ip_init_rc();
	TFJ_RUN(test_failover_does_not_strand);
	return it_finish(K, NULL);
}
