/*
 * test_controller.c - the whole controller (informers, queue, expectations,
 * the real planner, apply, status) against the local HTTPS server: a TFJob
 * gets its pods and services with TF_CONFIG, a restarted controller creates
 * no duplicates, and pods finishing make the job Succeeded. Gang scheduling:
 * the PodGroup is created before any pod and the pods carry the scheduler
 * name and the PodGroup label; without the PodGroup CRD (POST answers 404)
 * no pod is created, the job gets a Warning PodGroupUnavailable and the
 * controller does not retry fast; once the API is served the job starts.
 * The progress store follows the pods: a deleted pod's record goes (also
 * one replaced under its name while the watch was away), and a reconcile
 * bounds the job's records by its replicas. Secrets are never read: the
 * job's ps Secret is named by the API server and recorded in the status,
 * so a stranger's Secret, or one a dead leader left unrecorded, holds
 * nothing back.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <tfj/err.h>
#include <tfj/json.h>

#include "app/controller.h"
#include "fakeapi.h"
#include "kube/kube.h"
#include "report/capublish.h"
#include "report/progress.h"
#include "tfj_test.h"

static struct fake F;
static struct tfj_kube *K;

static const char *job_json =
	"{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
	"\"metadata\":{\"name\":\"mnist\",\"namespace\":\"ml\",\"generation\":1},"
	"\"spec\":{\"tfReplicaSpecs\":{"
	"\"PS\":{\"replicas\":1,\"template\":{\"spec\":{\"containers\":"
	"[{\"name\":\"tensorflow\",\"image\":\"localhost/rt:1\"}]}}},"
	"\"Worker\":{\"replicas\":2,\"restartPolicy\":\"OnFailure\",\"template\":{\"spec\":"
	"{\"containers\":[{\"name\":\"tensorflow\",\"image\":\"localhost/rt:1\"}]}}}}}}";

static int wait_count(const char *res, int want)
{
	for (int i = 0; i < 300; i++) {
		if (fake_count(&F, res, "ml") >= want)
			return 1;
		usleep(20000);
	}
	return 0;
}

/* Waits (bounded, 10 s) until pod ns ml/name exists; the caller checks. */
static void wait_pod(const char *name)
{
	for (int i = 0; i < 500 && !fake_find(&F, "pods", "ml", name); i++)
		usleep(20000);
}

/* 1 once the TFJob's condition `type` is True. */
static int job_condition(const char *type)
{
	cJSON *job = NULL, *c;
	int yes = 0;
	if (tfj_kube_get(K, &job, "/apis/kubeflow.org/v1/namespaces/ml/tfjobs/mnist"))
		return 0;
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(cJSON_GetObjectItem(job, "status"), "conditions")) {
		const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(c, "type"));
		const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(c, "status"));
		if (t && s && !strcmp(t, type) && !strcmp(s, "True"))
			yes = 1;
	}
	cJSON_Delete(job);
	return yes;
}

static int wait_condition(const char *type)
{
	for (int i = 0; i < 300; i++) {
		if (job_condition(type))
			return 1;
		usleep(20000);
	}
	return 0;
}

/* The status.psSecretName of TFJob ml/name into out ("" when none). */
static void job_ps_secret(const char *name, char *out, size_t outlen)
{
	char path[256];
	cJSON *job = NULL;
	const char *v;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/apis/kubeflow.org/v1/namespaces/ml/tfjobs/%s", name);
	if (tfj_kube_get(K, &job, path))
		return;
	v = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(job, "status"),
						     "psSecretName"));
	snprintf(out, outlen, "%s", v ? v : "");
	cJSON_Delete(job);
}

/* The Secret pod ml/name mounts as its ps secret ("" when none; static buffer). */
static const char *pod_ps_secret(const char *name)
{
	static char got[128];
	struct fake_obj *o;
	cJSON *v;
	const char *sn = NULL;

	got[0] = '\0';
	pthread_mutex_lock(&F.mu);
	if ((o = fake_find(&F, "pods", "ml", name))) {
		cJSON_ArrayForEach(v, cJSON_GetObjectItem(cJSON_GetObjectItem(o->obj, "spec"),
							  "volumes")) {
			const char *vn = cJSON_GetStringValue(cJSON_GetObjectItem(v, "name"));

			if (vn && !strcmp(vn, "tfjob-ps-secret"))
				sn = cJSON_GetStringValue(cJSON_GetObjectItem(
					cJSON_GetObjectItem(v, "secret"), "secretName"));
		}
		snprintf(got, sizeof(got), "%s", sn ? sn : "");
	}
	pthread_mutex_unlock(&F.mu);
	return got;
}

/* A controller for namespace ns; gang: --gang-scheduler-name (NULL = off). */
static struct tfj_controller *start_controller_in(const char *ns, const char *gang)
{
	struct tfj_controller_opts o = { 0 };
	struct tfj_controller *c = NULL;
	o.namespace = ns;
	o.gang_scheduler = gang;
	o.workers = 2;
	o.watch_timeout_s = 5;
	TFJ_CHECK_INT(tfj_controller_new(&c, K, &o), 0);
	if (c)
		TFJ_CHECK_INT(tfj_controller_start(c, 10000), 0);
	return c;
}

static struct tfj_controller *start_controller(void)
{
	return start_controller_in("ml", NULL);
}

static void test_job_lifecycle(void)
{
	struct tfj_controller *c;
	cJSON *job = cJSON_Parse(job_json), *pod = NULL, *env, *e;
	const char *tfconfig = NULL;
	struct tfj_buf m = TFJ_BUF_INIT(1 << 20);
	char sname[128];
	int pod_posts;

	TFJ_CHECK_INT(tfj_kube_create(K, NULL, "/apis/kubeflow.org/v1/namespaces/ml/tfjobs", job), 0);
	cJSON_Delete(job);
	/* The first status write conflicts, as if someone wrote in between: the
	 * controller re-reads the TFJob and writes again. */
	fake_inject(&F, 1, 409, "/tfjobs/mnist/status", NULL, NULL);
	c = start_controller();
	if (!c)
		return;
	TFJ_CHECK(tfj_controller_ready(c));
	TFJ_CHECK(wait_count("pods", 3));
	TFJ_CHECK(wait_count("services", 3));
	TFJ_CHECK(wait_condition("Created"));
	TFJ_CHECK_INT(F.fail_n, 0);
	/* The job's ps Secret and NetworkPolicy, made before its pods (bodies: test_jobguard). */
	TFJ_CHECK_INT(fake_count(&F, "secrets", "ml"), 1);
	TFJ_CHECK_INT(fake_count(&F, "networkpolicies", "ml"), 1);
	job_ps_secret("mnist", sname, sizeof(sname));
	TFJ_CHECK(strncmp(sname, "mnist-ps-", 9) == 0);
	TFJ_CHECK_NOT_NULL(fake_find(&F, "secrets", "ml", sname));
	TFJ_CHECK_STR(pod_ps_secret("mnist-worker-1"), sname);
	TFJ_CHECK_NOT_NULL(fake_find(&F, "networkpolicies", "ml", "mnist-training"));
	TFJ_CHECK_INT(tfj_controller_metrics(c, &m), 0);
	TFJ_CHECK(strstr(tfj_buf_cstr(&m),
			 "tfjob_operator_status_writes_total{result=\"conflict\"} 1\n") != NULL);
	/* Kubeflow's name, by the job's namespace (jobmetrics.h). */
	TFJ_CHECK(strstr(tfj_buf_cstr(&m), "training_operator_jobs_created_total{job_namespace="
			 "\"ml\",framework=\"tensorflow\"} 1\n") != NULL);
	tfj_buf_clear(&m);

	/* The worker's TF_CONFIG names every training task. */
	TFJ_CHECK_INT(tfj_kube_get(K, &pod, "/api/v1/namespaces/ml/pods/mnist-worker-1"), 0);
	env = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
		cJSON_GetObjectItem(pod, "spec"), "containers"), 0), "env");
	cJSON_ArrayForEach(e, env)
		if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(e, "name")), "TF_CONFIG"))
			tfconfig = cJSON_GetStringValue(cJSON_GetObjectItem(e, "value"));
	TFJ_CHECK(tfconfig && strstr(tfconfig, "mnist-ps-0.ml.svc:2222") &&
		  strstr(tfconfig, "\"index\":1"));
	cJSON_Delete(pod);

	/* A restarted operator sees the children in its fresh caches: no duplicates. */
	tfj_controller_free(c);
	pod_posts = F.posts[0];
	TFJ_CHECK_INT(pod_posts, 3);
	c = start_controller();
	if (!c)
		return;
	sleep(1);
	TFJ_CHECK_INT(F.posts[0], pod_posts);
	TFJ_CHECK_INT(fake_count(&F, "pods", "ml"), 3);

	/* The "kubelet" runs the pods, then the workers finish. */
	fake_put_status(&F, "pods", "ml", "mnist-ps-0", "{\"phase\":\"Running\"}");
	fake_put_status(&F, "pods", "ml", "mnist-worker-0", "{\"phase\":\"Running\"}");
	fake_put_status(&F, "pods", "ml", "mnist-worker-1", "{\"phase\":\"Running\"}");
	if (!wait_condition("Running")) {
		cJSON *j = NULL;
		char *txt;
		tfj_test_fail(__FILE__, __LINE__, "job never Running");
		tfj_controller_metrics(c, &m);
		fprintf(stderr, "%s\n", tfj_buf_cstr(&m));
		tfj_buf_clear(&m);
		tfj_kube_get(K, &j, "/apis/kubeflow.org/v1/namespaces/ml/tfjobs/mnist");
		txt = cJSON_Print(cJSON_GetObjectItem(j, "status"));
		fprintf(stderr, "status: %s\n", txt);
		free(txt);
		cJSON_Delete(j);
	}
	fake_put_status(&F, "pods", "ml", "mnist-worker-1",
			"{\"phase\":\"Succeeded\",\"containerStatuses\":[{\"name\":\"tensorflow\","
			"\"restartCount\":0,\"state\":{\"terminated\":{\"exitCode\":0,"
			"\"reason\":\"Completed\"}}}]}");
	fake_put_status(&F, "pods", "ml", "mnist-worker-0",
			"{\"phase\":\"Succeeded\",\"containerStatuses\":[{\"name\":\"tensorflow\","
			"\"restartCount\":0,\"state\":{\"terminated\":{\"exitCode\":0,"
			"\"reason\":\"Completed\"}}}]}");
	if (!wait_condition("Succeeded")) {
		cJSON *j = NULL;
		char *txt;
		tfj_test_fail(__FILE__, __LINE__, "job never Succeeded");
		tfj_controller_metrics(c, &m);
		fprintf(stderr, "%s\n", tfj_buf_cstr(&m));
		tfj_buf_clear(&m);
		tfj_kube_get(K, &j, "/apis/kubeflow.org/v1/namespaces/ml/tfjobs/mnist");
		txt = cJSON_Print(cJSON_GetObjectItem(j, "status"));
		fprintf(stderr, "status: %s\n", txt);
		free(txt);
		cJSON_Delete(j);
	}
	TFJ_CHECK(!job_condition("Failed"));
	TFJ_CHECK_INT(F.posts[0], pod_posts); /* nothing recreated */
	TFJ_CHECK_INT(tfj_controller_metrics(c, &m), 0);
	TFJ_CHECK(strstr(tfj_buf_cstr(&m), "tfjob_operator_jobs_succeeded_total 1\n") != NULL);
	TFJ_CHECK(strstr(tfj_buf_cstr(&m), "training_operator_jobs_successful_total{job_namespace="
			 "\"ml\",framework=\"tensorflow\"} 1\n") != NULL);
	TFJ_CHECK(strstr(tfj_buf_cstr(&m), "tfjob_operator_jobs{phase=\"Succeeded\"} 1\n") != NULL);
	TFJ_CHECK(strstr(tfj_buf_cstr(&m), "tfjob_operator_reconcile_total{result=\"success\"}") != NULL);
	/* Events go out on their own thread (events.h): wait for it. */
	TFJ_CHECK_INT(tfj_controller_flush_events(c, 10000), 0);
	TFJ_CHECK_GE(F.posts[2], 1); /* events were posted */
	tfj_buf_free(&m);
	tfj_controller_free(c);
}

/* Pod creates that fail (a webhook or quota saying no) are retried with
 * backoff, reported as Warning events and counted; the job still converges. */
/* Creates job_json's TFJob under another name (5 characters, like "mnist"). */
static void create_job_named(const char *name5)
{
	char *txt = strdup(job_json), *p = txt ? strstr(txt, "\"mnist\"") : NULL;
	cJSON *job;

	TFJ_CHECK(p != NULL && strlen(name5) == 5);
	if (!p || strlen(name5) != 5) {
		free(txt);
		return;
	}
	memcpy(p + 1, name5, 5);
	job = cJSON_Parse(txt);
	free(txt);
	TFJ_CHECK_INT(tfj_kube_create(K, NULL, "/apis/kubeflow.org/v1/namespaces/ml/tfjobs", job), 0);
	cJSON_Delete(job);
}

static void test_create_errors_retried(void)
{
	struct tfj_controller *c;
	struct tfj_buf m = TFJ_BUF_INIT(1 << 20);
	int events_before = F.posts[2] + F.patches, pods_before = fake_count(&F, "pods", "ml");

	fake_inject(&F, 4, 500, "/namespaces/ml/pods", "POST", NULL);
	create_job_named("flaky");
	c = start_controller();
	if (!c)
		return;
	for (int i = 0; i < 300 && fake_count(&F, "pods", "ml") < pods_before + 3; i++)
		usleep(20000);
	TFJ_CHECK_INT(fake_count(&F, "pods", "ml"), pods_before + 3);
	TFJ_CHECK_INT(F.fail_n, 0);
	TFJ_CHECK_INT(tfj_controller_metrics(c, &m), 0);
	TFJ_CHECK(strstr(tfj_buf_cstr(&m),
			 "tfjob_operator_child_writes_total{op=\"create\",result=\"error\"} 4\n") != NULL);
	TFJ_CHECK(strstr(tfj_buf_cstr(&m), "tfjob_operator_workqueue_retries_total 0\n") == NULL);
	TFJ_CHECK_INT(tfj_controller_flush_events(c, 10000), 0);
	/* 4 warnings (posted, or counted on an equal one) + creates */
	TFJ_CHECK_GE(F.posts[2] + F.patches - events_before, 4 + 3);
	tfj_buf_free(&m);
	tfj_controller_free(c);
	fake_inject(&F, 0, 0, NULL, NULL, NULL);
}

/*
 * The operator never reads a Secret (RBAC: create only; every GET of one
 * is answered 403 here), and needs not: the API server names the job's
 * Secret (generateName) and the name is recorded in the job's status. A
 * Secret under the older fixed name `<job>-ps-secret`, made by someone
 * else, holds nothing back and is never mounted. A leader that died after
 * it made the job's Secret and before it recorded the name (a Secret of
 * the job, no name, no pod, no NetworkPolicy) strands nothing: the next
 * one makes another Secret, records it, and the pods come mounting it.
 * After a restart (an empty guard memo) a pod made again mounts the same
 * Secret, posted under its recorded name (409: it is there), no GET.
 */
static void test_secret_never_read(void)
{
	struct tfj_controller *c;
	cJSON *stranger = cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"Secret\","
				      "\"metadata\":{\"name\":\"guard-ps-secret\"},"
				      "\"type\":\"Opaque\",\"data\":{\"k\":\"dg==\"}}");
	cJSON *orphan = cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"Secret\","
				    "\"metadata\":{\"name\":\"guard-ps-d3ad1\","
				    "\"labels\":{\"training.kubeflow.org/job-name\":\"guard\"}},"
				    "\"type\":\"Opaque\",\"data\":{\"token\":\"dg==\"}}");
	char name[128], again[128];
	int secrets;

	TFJ_CHECK_INT(tfj_kube_create(K, NULL, "/api/v1/namespaces/ml/secrets", stranger), 0);
	TFJ_CHECK_INT(tfj_kube_create(K, NULL, "/api/v1/namespaces/ml/secrets", orphan), 0);
	cJSON_Delete(stranger);
	cJSON_Delete(orphan);
	fake_inject(&F, 1000, 403, "/secrets/", "GET", NULL);
	create_job_named("guard");
	c = start_controller();
	if (!c)
		goto out;
	wait_pod("guard-worker-1");
	TFJ_CHECK_NOT_NULL(fake_find(&F, "pods", "ml", "guard-ps-0"));
	TFJ_CHECK_NOT_NULL(fake_find(&F, "pods", "ml", "guard-worker-1"));
	job_ps_secret("guard", name, sizeof(name));
	TFJ_CHECK(strncmp(name, "guard-ps-", 9) == 0);
	TFJ_CHECK(strcmp(name, "guard-ps-secret") != 0);
	TFJ_CHECK(strcmp(name, "guard-ps-d3ad1") != 0);
	TFJ_CHECK_NOT_NULL(fake_find(&F, "secrets", "ml", name));
	TFJ_CHECK_STR(pod_ps_secret("guard-ps-0"), name);
	TFJ_CHECK_STR(pod_ps_secret("guard-worker-1"), name);
	TFJ_CHECK_INT(F.fail_n, 1000); /* no GET of a Secret */
	tfj_controller_free(c);

	/* A restart forgets the memo: the pod made again mounts the same Secret. */
	secrets = fake_count(&F, "secrets", "ml");
	TFJ_CHECK_OK(tfj_kube_delete(K, "/api/v1/namespaces/ml/pods/guard-worker-1", NULL, NULL));
	c = start_controller();
	if (!c)
		goto out;
	wait_pod("guard-worker-1");
	TFJ_CHECK_NOT_NULL(fake_find(&F, "pods", "ml", "guard-worker-1"));
	TFJ_CHECK_STR(pod_ps_secret("guard-worker-1"), name);
	job_ps_secret("guard", again, sizeof(again));
	TFJ_CHECK_STR(again, name);
	TFJ_CHECK_INT(fake_count(&F, "secrets", "ml"), secrets);
	TFJ_CHECK_INT(F.fail_n, 1000);
	tfj_controller_free(c);
out:
	fake_inject(&F, 0, 0, NULL, NULL, NULL);
}

/*
 * An operator on an older CRD (Helm does not upgrade CRDs): the API server
 * prunes status.psSecretName from every status write. The job gets no pod
 * (they would have no Secret to mount) and a FailedCreateSecret Warning
 * that says to apply the CRD; it is not left silently waiting.
 */
static void test_old_crd_secret_name_pruned(void)
{
	struct tfj_controller *c;
	cJSON *ev;
	int i, seen = 0;

	snprintf(F.prune_status, sizeof(F.prune_status), "psSecretName");
	create_job_named("prune");
	c = start_controller();
	if (!c)
		goto out;
	for (i = 0; i < 300 && !seen; i++) {
		tfj_controller_flush_events(c, 1000);
		pthread_mutex_lock(&F.mu);
		for (int j = 0; j < F.nobj; j++) {
			const char *m, *r, *on;

			ev = F.objs[j].obj;
			if (!F.objs[j].live || strcmp(F.objs[j].res, "events"))
				continue;
			on = cJSON_GetStringValue(cJSON_GetObjectItem(
				cJSON_GetObjectItem(ev, "involvedObject"), "name"));
			r = cJSON_GetStringValue(cJSON_GetObjectItem(ev, "reason"));
			m = cJSON_GetStringValue(cJSON_GetObjectItem(ev, "message"));
			if (on && r && m && !strcmp(on, "prune") && !strcmp(r, "FailedCreateSecret") &&
			    strstr(m, "apply its CRD"))
				seen = 1;
		}
		pthread_mutex_unlock(&F.mu);
		if (!seen)
			usleep(20000);
	}
	TFJ_CHECK(seen);
	TFJ_CHECK(fake_find(&F, "pods", "ml", "prune-worker-0") == NULL);
	tfj_controller_free(c);
out:
	F.prune_status[0] = '\0';
	/* Gone, so that no later controller of this namespace makes its pods. */
	TFJ_CHECK_OK(tfj_kube_delete(K, "/apis/kubeflow.org/v1/namespaces/ml/tfjobs/prune", NULL,
				     NULL));
}

/* The condition `type` of TFJob ns/name: "True", "False" or "" when absent. */
static const char *cond_of(const char *name, const char *type, char *msg, size_t msglen)
{
	static char st[8];
	char path[256];
	cJSON *job = NULL, *c;

	st[0] = '\0';
	if (msg)
		msg[0] = '\0';
	snprintf(path, sizeof(path), "/apis/kubeflow.org/v1/namespaces/ml/tfjobs/%s", name);
	if (tfj_kube_get(K, &job, path))
		return st;
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(cJSON_GetObjectItem(job, "status"), "conditions")) {
		const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(c, "type"));
		const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(c, "status"));
		const char *m = cJSON_GetStringValue(cJSON_GetObjectItem(c, "message"));

		if (t && s && !strcmp(t, type)) {
			snprintf(st, sizeof(st), "%s", s);
			if (msg && m)
				snprintf(msg, msglen, "%s", m);
		}
	}
	cJSON_Delete(job);
	return st;
}

/* Requests the fake refused so far out of the 1000 injected. */
static int refused(void)
{
	int n;

	pthread_mutex_lock(&F.mu);
	n = 1000 - F.fail_n;
	pthread_mutex_unlock(&F.mu);
	return n;
}

/*
 * Pod creates refused with 403 every time: the retries back off (1 s, 2 s,
 * 4 s...), the third failure shows as ReplicaFailure with the API's message,
 * the warnings are one Event with a count, and once the API accepts the pod
 * the condition goes.
 */
static void test_permanent_create_failure(void)
{
	struct tfj_controller *c;
	char msg[600];
	cJSON *ev;
	int i, n_ev = 0, tries;
	double count = 0;
	double t0;

	fake_inject(&F, 1000, 403, "/namespaces/ml/pods", "POST", NULL);
	create_job_named("nopod");
	t0 = tfj_testutil_now_s();
	c = start_controller();
	if (!c)
		return;
	for (i = 0; i < 1000 && strcmp(cond_of("nopod", "ReplicaFailure", NULL, 0), "True"); i++)
		usleep(20000);
	TFJ_CHECK_STR(cond_of("nopod", "ReplicaFailure", msg, sizeof(msg)), "True");
	TFJ_CHECK(strstr(msg, "HTTP 403") != NULL);
	/* Three refusals, not hundreds: 1 s and 2 s apart (the queue alone
	 * would have retried after 5 ms, 10 ms, 20 ms...). */
	tries = refused();
	TFJ_CHECK_GE(tries, 3);
	TFJ_CHECK_LE(tries, 4);
	TFJ_CHECK_GE(tfj_testutil_now_s() - t0, 2.5);
	TFJ_CHECK_STR(cond_of("nopod", "Created", NULL, 0), "True"); /* STATE unchanged */
	TFJ_CHECK_INT(tfj_controller_flush_events(c, 10000), 0);
	pthread_mutex_lock(&F.mu);
	for (i = 0; i < F.nobj; i++) {
		ev = F.objs[i].obj;
		if (F.objs[i].live && !strcmp(F.objs[i].res, "events") &&
		    !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(
			    cJSON_GetObjectItem(ev, "involvedObject"), "name")), "nopod") &&
		    !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(ev, "reason")),
			    "FailedCreatePod")) {
			n_ev++;
			count = cJSON_GetNumberValue(cJSON_GetObjectItem(ev, "count"));
		}
	}
	pthread_mutex_unlock(&F.mu);
	TFJ_CHECK_INT(n_ev, 1);
	TFJ_CHECK_GE(count, 3.0);
	/* An operator restart knows nothing of the failures: the condition stays
	 * while the new one's first tries fail too. */
	tfj_controller_free(c);
	tries = refused();
	c = start_controller();
	if (!c)
		return;
	for (i = 0; i < 1000 && refused() - tries < 2; i++)
		usleep(20000);
	TFJ_CHECK_GE(refused() - tries, 2);
	TFJ_CHECK_STR(cond_of("nopod", "ReplicaFailure", NULL, 0), "True");
	/* The API accepts pods again: at the next try the pods are created and
	 * the condition is removed. */
	fake_inject(&F, 0, 0, NULL, NULL, NULL);
	for (i = 0; i < 1000 && strcmp(cond_of("nopod", "ReplicaFailure", NULL, 0), ""); i++)
		usleep(20000);
	TFJ_CHECK_STR(cond_of("nopod", "ReplicaFailure", NULL, 0), "");
	tfj_controller_free(c);
}

static void test_owner_key(void)
{
	char key[128];
	cJSON *p = cJSON_Parse("{\"metadata\":{\"name\":\"x\",\"namespace\":\"n\",\"ownerReferences\":["
			       "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"cm\",\"controller\":true},"
			       "{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\",\"name\":\"j\","
			       "\"uid\":\"u\",\"controller\":true}]}}");
	TFJ_CHECK_INT(tfj_controller_owner_key(key, sizeof(key), p), 0);
	TFJ_CHECK_STR(key, "n/j");
	cJSON_Delete(p);
	p = cJSON_Parse("{\"metadata\":{\"name\":\"x\",\"namespace\":\"n\",\"ownerReferences\":["
			"{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\",\"name\":\"j\"}]}}");
	TFJ_CHECK_INT(tfj_controller_owner_key(key, sizeof(key), p), TFJ_ENOTFOUND);
	cJSON_Delete(p);
}

/* ---- gang scheduling (--gang-scheduler-name; app/gang.c) ---- */

#define PG_PATH "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/gang/podgroups"

static void create_job(const char *name)
{
	char buf[1024];
	cJSON *job;

	snprintf(buf, sizeof(buf),
		 "{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
		 "\"metadata\":{\"name\":\"%s\",\"namespace\":\"gang\",\"generation\":1},"
		 "\"spec\":{\"runPolicy\":{\"schedulingPolicy\":{\"minAvailable\":2}},"
		 "\"tfReplicaSpecs\":{\"Worker\":{\"replicas\":2,\"template\":{\"spec\":"
		 "{\"containers\":[{\"name\":\"tensorflow\",\"image\":\"localhost/rt:1\","
		 "\"resources\":{\"requests\":{\"cpu\":\"250m\"}}}]}}}}}}",
		 name);
	job = cJSON_Parse(buf);
	TFJ_CHECK_OK(tfj_kube_create(K, NULL, "/apis/kubeflow.org/v1/namespaces/gang/tfjobs", job));
	cJSON_Delete(job);
}

/* The reasons of the events posted so far, space-separated. */
static void event_reasons(char *out, size_t len)
{
	cJSON *list = NULL, *e;
	size_t n = 0;

	out[0] = '\0';
	if (tfj_kube_list(K, &list, "/api/v1/namespaces/gang/events"))
		return;
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(list, "items")) {
		const char *r = cJSON_GetStringValue(cJSON_GetObjectItem(e, "reason"));
		if (r && n < len)
			n += (size_t)snprintf(out + n, len - n, "%s ", r);
	}
	cJSON_Delete(list);
}

/* The reason of gang/NAME's ReplicaFailure condition when True, else "". */
static const char *gang_failure(const char *name, char *reason, size_t len)
{
	char path[256];
	cJSON *job = NULL, *c;

	reason[0] = '\0';
	snprintf(path, sizeof(path), "/apis/kubeflow.org/v1/namespaces/gang/tfjobs/%s", name);
	if (tfj_kube_get(K, &job, path))
		return reason;
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(cJSON_GetObjectItem(job, "status"), "conditions")) {
		const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(c, "type"));
		const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(c, "status"));
		const char *r = cJSON_GetStringValue(cJSON_GetObjectItem(c, "reason"));

		if (t && s && r && !strcmp(t, "ReplicaFailure") && !strcmp(s, "True"))
			snprintf(reason, len, "%s", r);
	}
	cJSON_Delete(job);
	return reason;
}

static void test_no_crd(void)
{
	struct tfj_controller *c;
	char reasons[2048] = "", why[64];
	int attempts, i;

	/* Every POST of a PodGroup answers 404, as without the CRD. */
	fake_inject(&F, 1000, 404, "/podgroups", "POST", NULL);
	create_job("nocrd");
	c = start_controller_in("gang", "scheduler-plugins");
	if (!c)
		return;
	for (i = 0; i < 200 && !strstr(reasons, "PodGroupUnavailable"); i++) {
		tfj_controller_flush_events(c, 1000);
		event_reasons(reasons, sizeof(reasons));
		usleep(20000);
	}
	TFJ_CHECK(strstr(reasons, "PodGroupUnavailable") != NULL);
	/* Not only an event: the job's status says it (the FAILURE column). */
	for (i = 0; i < 200 && !*gang_failure("nocrd", why, sizeof(why)); i++)
		usleep(20000);
	TFJ_CHECK_STR(why, "PodGroupUnavailable");
	sleep(2); /* a fast retry loop would post hundreds of times in this while */
	attempts = 1000 - F.fail_n;
	TFJ_CHECK_GE(attempts, 1);
	TFJ_CHECK_LE(attempts, 3);
	TFJ_CHECK_INT(fake_count(&F, "pods", "gang"), 0);
	tfj_controller_free(c);
	fake_inject(&F, 0, 0, NULL, NULL, NULL);
}

static void test_podgroup_before_pods(void)
{
	struct tfj_controller *c;
	cJSON *pg = NULL, *pod = NULL;
	char reasons[2048] = "", why[64];
	int i;

	create_job("gang");
	c = start_controller_in("gang", "scheduler-plugins");
	if (!c)
		return;
	/* The PodGroup API is served now: this job starts, and so does the one
	 * of test_no_crd (its PodGroup is made on the next reconcile). */
	for (i = 0; i < 300 && fake_count(&F, "pods", "gang") < 4; i++)
		usleep(20000);
	TFJ_CHECK_INT(fake_count(&F, "pods", "gang"), 4);
	TFJ_CHECK_INT(fake_count(&F, "podgroups", "gang"), 2);
	/* test_no_crd's job started: its PodGroupUnavailable is gone. */
	for (i = 0; i < 300 && *gang_failure("nocrd", why, sizeof(why)); i++)
		usleep(20000);
	TFJ_CHECK_STR(why, "");
	TFJ_CHECK_OK(tfj_kube_get(K, &pg, PG_PATH "/gang"));
	TFJ_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(pg, "apiVersion")),
		      "scheduling.x-k8s.io/v1alpha1");
	TFJ_CHECK_INT(cJSON_GetObjectItem(cJSON_GetObjectItem(pg, "spec"), "minMember")->valueint, 2);
	TFJ_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(
			      cJSON_GetObjectItem(pg, "spec"), "minResources"), "cpu")), "500m");
	TFJ_CHECK_OK(tfj_kube_get(K, &pod, "/api/v1/namespaces/gang/pods/gang-worker-1"));
	TFJ_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"),
							       "schedulerName")), "scheduler-plugins");
	TFJ_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
			      pod, "metadata"), "labels"), "scheduling.x-k8s.io/pod-group")), "gang");
	tfj_controller_flush_events(c, 2000);
	event_reasons(reasons, sizeof(reasons));
	TFJ_CHECK(strstr(reasons, "SuccessfulCreatePodGroup") != NULL);
	cJSON_Delete(pg);
	cJSON_Delete(pod);
	tfj_controller_free(c);
}

/* The report CA for test_ca_before_pods: absent until `pem` is set. */
static const char *ca_pem;

static int ca_source(char **pem, uint64_t *gen, void *ud)
{
	(void)ud;
	*gen = 1;
	*pem = ca_pem ? strdup(ca_pem) : NULL;
	return ca_pem ? 0 : tfj_err_set(TFJ_EUNAVAIL, "no CA yet");
}

/* With the report channel on (TLS), no pod is made before its namespace has the CA. */
static void test_ca_before_pods(void)
{
	struct tfj_controller_opts o = { 0 };
	struct tfj_controller *c = NULL;
	struct tfj_capublish *pub = NULL;
	cJSON *job, *pod = NULL, *cm = NULL;
	char *spec;

	job = cJSON_Parse(job_json);
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(job, "metadata"), "namespace",
				  cJSON_CreateString("tls"));
	TFJ_CHECK_OK(tfj_kube_create(K, NULL, "/apis/kubeflow.org/v1/namespaces/tls/tfjobs", job));
	cJSON_Delete(job);
	TFJ_CHECK_OK(tfj_capublish_new(&pub, K, NULL, NULL, ca_source, NULL));
	o.namespace = "tls";
	o.workers = 2;
	o.watch_timeout_s = 5;
	o.report_addr = "tfjob-operator.tfjob-system.svc:9443";
	TFJ_CHECK_OK(tfj_controller_new(&c, K, &o));
	if (!c || !pub)
		goto out;
	tfj_controller_set_capublish(c, pub);
	TFJ_CHECK_OK(tfj_controller_start(c, 10000));
	sleep(1);
	TFJ_CHECK_INT(fake_count(&F, "pods", "tls"), 0);
	ca_pem = "-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n";
	/* The backoff brings the key back; then the ConfigMap first, then pods. */
	for (int i = 0; i < 500 && fake_count(&F, "pods", "tls") < 3; i++)
		usleep(20000);
	TFJ_CHECK_INT(fake_count(&F, "pods", "tls"), 3);
	TFJ_CHECK_OK(tfj_kube_get(K, &cm, "/api/v1/namespaces/tls/configmaps/tfjob-controller-report-ca"));
	TFJ_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(cm, "data"),
							       "ca.crt")), ca_pem);
	TFJ_CHECK_OK(tfj_kube_get(K, &pod, "/api/v1/namespaces/tls/pods/mnist-worker-0"));
	spec = cJSON_PrintUnformatted(cJSON_GetObjectItem(pod, "spec"));
	TFJ_CHECK(spec && strstr(spec, "\"configMap\":{\"name\":\"tfjob-controller-report-ca\""));
	TFJ_CHECK(spec && strstr(spec, "TFJOB_REPORT_CA_FILE"));
	free(spec);
out:
	cJSON_Delete(cm);
	cJSON_Delete(pod);
	tfj_controller_free(c);
	tfj_capublish_free(pub);
	ca_pem = NULL;
}

/* The ports of the training rule of np/mnist-training, as "2222,3333" ("" when none). */
static void np_ports(char *out, size_t n)
{
	cJSON *np = NULL, *rule, *p;
	size_t at = 0;

	out[0] = '\0';
	if (tfj_kube_get(K, &np, "/apis/networking.k8s.io/v1/namespaces/np/networkpolicies/"
				 "mnist-training"))
		return;
	rule = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(np, "spec"), "ingress"), 0);
	cJSON_ArrayForEach(p, cJSON_GetObjectItem(rule, "ports")) {
		int w = snprintf(out + at, n - at, "%s%d", at ? "," : "",
				 cJSON_GetNumberValue(cJSON_GetObjectItem(p, "port")) > 0 ?
				 (int)cJSON_GetNumberValue(cJSON_GetObjectItem(p, "port")) : 0);

		if (w < 0 || (size_t)w >= n - at)
			break;
		at += (size_t)w;
	}
	cJSON_Delete(np);
}

/*
 * The job's ps moves to another tfjob-port: the controller patches the
 * job's NetworkPolicy to the new ports (one PATCH, the same object).
 */
static void test_netpol_follows_ports(void)
{
	struct tfj_controller *c = NULL;
	cJSON *job = cJSON_Parse(job_json), *spec;
	char ports[64] = "", *patch = NULL;
	int i;

	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(job, "metadata"), "namespace",
				  cJSON_CreateString("np"));
	TFJ_CHECK_OK(tfj_kube_create(K, NULL, "/apis/kubeflow.org/v1/namespaces/np/tfjobs", job));
	c = start_controller_in("np", NULL);
	if (!c)
		goto out;
	for (i = 0; i < 300 && strcmp(ports, "2222"); i++, usleep(20000))
		np_ports(ports, sizeof(ports));
	TFJ_CHECK_STR(ports, "2222");
	/* spec.tfReplicaSpecs.PS's container gets tfjob-port 3333. */
	spec = cJSON_Duplicate(cJSON_GetObjectItem(job, "spec"), 1);
	cJSON_AddItemToObject(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(spec, "tfReplicaSpecs"),
		"PS"), "template"), "spec"), "containers"), 0), "ports",
		cJSON_Parse("[{\"name\":\"tfjob-port\",\"containerPort\":3333}]"));
	cJSON_Delete(job);
	job = cJSON_CreateObject();
	cJSON_AddItemToObject(job, "spec", spec);
	TFJ_CHECK_OK(tfj_json_print(&patch, job));
	TFJ_CHECK_OK(tfj_kube_patch(K, NULL, "/apis/kubeflow.org/v1/namespaces/np/tfjobs/mnist",
				    TFJ_KUBE_PATCH_MERGE, patch));
	for (i = 0; i < 300 && strcmp(ports, "2222,3333"); i++, usleep(20000))
		np_ports(ports, sizeof(ports));
	TFJ_CHECK_STR(ports, "2222,3333");
	TFJ_CHECK_INT(fake_count(&F, "networkpolicies", "np"), 1);
out:
	free(patch);
	cJSON_Delete(job);
	tfj_controller_free(c);
}

/* The status of condition `type` of TFJob mnist in ns: "True", "False" or "" when absent. */
static void cond_in(char *out, size_t n, const char *ns, const char *type)
{
	char path[256];
	cJSON *job = NULL, *c;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/apis/kubeflow.org/v1/namespaces/%s/tfjobs/mnist", ns);
	if (tfj_kube_get(K, &job, path))
		return;
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(cJSON_GetObjectItem(job, "status"), "conditions"))
		if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(c, "type")) ?
			    cJSON_GetStringValue(cJSON_GetObjectItem(c, "type")) : "", type))
			snprintf(out, n, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(c, "status")) ?
				 cJSON_GetStringValue(cJSON_GetObjectItem(c, "status")) : "");
	cJSON_Delete(job);
}

/*
 * The NetworkPolicy's create is refused (403): the pods are created all the
 * same, the job shows NetworkPolicyFailure; once creates work the policy
 * comes and the condition goes.
 */
static void test_netpol_failure_visible(void)
{
	struct tfj_controller *c = NULL;
	cJSON *job = cJSON_Parse(job_json);
	char st[16] = "";
	int i;

	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(job, "metadata"), "namespace",
				  cJSON_CreateString("npf"));
	TFJ_CHECK_OK(tfj_kube_create(K, NULL, "/apis/kubeflow.org/v1/namespaces/npf/tfjobs", job));
	cJSON_Delete(job);
	fake_inject(&F, 1000000, 403, "/networkpolicies", "POST", NULL);
	c = start_controller_in("npf", NULL);
	if (!c)
		goto out;
	for (i = 0; i < 300 && fake_count(&F, "pods", "npf") < 3; i++)
		usleep(20000);
	TFJ_CHECK_INT(fake_count(&F, "pods", "npf"), 3);
	for (i = 0; i < 300 && strcmp(st, "True"); i++, usleep(20000))
		cond_in(st, sizeof(st), "npf", "NetworkPolicyFailure");
	TFJ_CHECK_STR(st, "True");
	TFJ_CHECK_INT(fake_count(&F, "networkpolicies", "npf"), 0);
	fake_inject(&F, 0, 0, NULL, NULL, NULL);
	/* The retries come with the key's backoff (well under a few seconds here). */
	for (i = 0; i < 1500 && strcmp(st, ""); i++, usleep(20000))
		cond_in(st, sizeof(st), "npf", "NetworkPolicyFailure");
	TFJ_CHECK_STR(st, "");
	TFJ_CHECK_INT(fake_count(&F, "networkpolicies", "npf"), 1);
out:
	fake_inject(&F, 0, 0, NULL, NULL, NULL);
	tfj_controller_free(c);
}

/*
 * The managedBy filter comes first: a job of another controller gets no
 * report CA published for it (nor any other write), even with the CA
 * available and the report channel on.
 */
static void test_foreign_job_no_ca(void)
{
	struct tfj_controller_opts o = { 0 };
	struct tfj_controller *c = NULL;
	struct tfj_capublish *pub = NULL;
	struct tfj_buf m = TFJ_BUF_INIT(1 << 20);
	cJSON *job;
	int seen = 0;

	job = cJSON_Parse(job_json);
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(job, "metadata"), "namespace",
				  cJSON_CreateString("other"));
	cJSON_AddItemToObject(cJSON_GetObjectItem(job, "spec"), "runPolicy",
			      cJSON_Parse("{\"managedBy\":\"example.com/other\"}"));
	TFJ_CHECK_OK(tfj_kube_create(K, NULL, "/apis/kubeflow.org/v1/namespaces/other/tfjobs",
				     job));
	cJSON_Delete(job);
	ca_pem = "-----BEGIN CERTIFICATE-----\nY\n-----END CERTIFICATE-----\n";
	TFJ_CHECK_OK(tfj_capublish_new(&pub, K, NULL, NULL, ca_source, NULL));
	o.namespace = "other";
	o.workers = 2;
	o.watch_timeout_s = 5;
	o.report_addr = "tfjob-operator.tfjob-system.svc:9443";
	TFJ_CHECK_OK(tfj_controller_new(&c, K, &o));
	if (!c || !pub)
		goto out;
	tfj_controller_set_capublish(c, pub);
	TFJ_CHECK_OK(tfj_controller_start(c, 10000));
	/* The job's reconcile has run (skipped) once the counter says so. */
	for (int i = 0; i < 300 && !seen; i++) {
		tfj_buf_clear(&m);
		TFJ_CHECK_INT(tfj_controller_metrics(c, &m), 0);
		seen = strstr(tfj_buf_cstr(&m), "tfjob_operator_reconcile_total{result=\"skipped\"} 0\n")
		       == NULL;
		if (!seen)
			usleep(20000);
	}
	TFJ_CHECK(seen);
	TFJ_CHECK_INT(fake_count(&F, "configmaps", "other"), 0);
	TFJ_CHECK_INT(fake_count(&F, "pods", "other"), 0);
	TFJ_CHECK_INT(fake_count(&F, "networkpolicies", "other"), 0);
	TFJ_CHECK_EQ(tfj_capublish_writes(pub), 0);
out:
	tfj_buf_free(&m);
	tfj_controller_free(c);
	tfj_capublish_free(pub);
	ca_pem = NULL;
}

/* A heartbeat of a worker of job `job_uid` from pod `pod_uid`, heard at now_ms. */
static void report(struct tfj_progress *p, const char *job_uid, const char *pod_uid,
		   int64_t now_ms)
{
	struct tfj_reportmsg m;

	memset(&m, 0, sizeof(m));
	m.kind = TFJ_RM_HEARTBEAT;
	snprintf(m.ref.job_uid, sizeof(m.ref.job_uid), "%s", job_uid);
	m.ref.type = TFJ_RT_WORKER;
	m.progress_ms = now_ms;
	TFJ_CHECK_OK(tfj_progress_record(NULL, p, &m, pod_uid, now_ms));
}

/* 1 when the store holds a record of pod_uid for job_uid. */
static int has_record(struct tfj_progress *p, const char *job_uid, const char *pod_uid)
{
	struct tfj_plan_progress snap;
	int yes = 0;

	if (tfj_progress_snapshot(p, &snap, job_uid))
		return 0;
	for (size_t i = 0; i < snap.nreplicas; i++)
		yes |= !strcmp(snap.replicas[i].pod_uid, pod_uid);
	tfj_progress_release(&snap);
	return yes;
}

/*
 * The progress store follows the pods: a deleted pod's record goes with it
 * (the pod informer's DELETE, or an update to another pod of the same name
 * after a relist), and a reconcile bounds the job's records to
 * twice its replicas plus a margin (records whose pod's deletion was never
 * seen), keeping the pods heard from most recently.
 */
static void test_progress_follows_pods(void)
{
	struct tfj_controller *c = NULL;
	struct tfj_progress *p = NULL;
	struct tfj_progress_stats st;
	char job_uid[64], w0[64], w1[64], ghost[32];
	cJSON *job = cJSON_Parse(job_json);
	int i;

	/* job_json in namespace "rep", apart from the other tests' jobs. */
	TFJ_CHECK_NOT_NULL(job);
	if (job)
		cJSON_ReplaceItemInObject(cJSON_GetObjectItem(job, "metadata"), "namespace",
					  cJSON_CreateString("rep"));
	TFJ_CHECK_OK(tfj_progress_new(&p, 0));
	if (!p || !job)
		goto out;
	TFJ_CHECK_OK(tfj_kube_create(K, NULL, "/apis/kubeflow.org/v1/namespaces/rep/tfjobs", job));
	{
		struct tfj_controller_opts o = { 0 };

		o.namespace = "rep";
		o.workers = 2;
		o.watch_timeout_s = 5;
		TFJ_CHECK_OK(tfj_controller_new(&c, K, &o));
		if (!c)
			goto out;
		tfj_controller_set_progress(c, p);
		TFJ_CHECK_OK(tfj_controller_start(c, 10000));
	}
	for (i = 0; i < 300 && fake_count(&F, "pods", "rep") < 3; i++)
		usleep(20000);
	TFJ_CHECK_INT(fake_count(&F, "pods", "rep"), 3);
	fake_uid_of(K, job_uid, sizeof(job_uid), "/apis/kubeflow.org/v1/namespaces/rep/tfjobs/mnist");
	fake_uid_of(K, w0, sizeof(w0), "/api/v1/namespaces/rep/pods/mnist-worker-0");
	fake_uid_of(K, w1, sizeof(w1), "/api/v1/namespaces/rep/pods/mnist-worker-1");
	TFJ_CHECK(job_uid[0] && w0[0] && w1[0]);

	/* 30 pods whose deletions this process never saw, then the two workers. */
	for (i = 0; i < 30; i++) {
		snprintf(ghost, sizeof(ghost), "ghost-%d", i);
		report(p, job_uid, ghost, 1000 + i);
	}
	report(p, job_uid, w0, 2000);
	report(p, job_uid, w1, 2000);
	tfj_controller_enqueue(c, "rep/mnist", 0);
	/* Three replicas: 2 * 3 + 16 records at most, the workers among them. */
	for (i = 0; i < 300; i++) {
		tfj_progress_stats(p, &st);
		if (st.records <= 2 * 3 + TFJ_PROGRESS_SPARE_RECORDS)
			break;
		usleep(20000);
	}
	TFJ_CHECK_EQ(st.records, 2 * 3 + TFJ_PROGRESS_SPARE_RECORDS);
	TFJ_CHECK(has_record(p, job_uid, w0));
	TFJ_CHECK(has_record(p, job_uid, w1));
	TFJ_CHECK(!has_record(p, job_uid, "ghost-0"));
	TFJ_CHECK(has_record(p, job_uid, "ghost-29"));

	/* Worker 1's pod is deleted: its record goes, worker 0's stays. */
	TFJ_CHECK_OK(tfj_kube_delete(K, "/api/v1/namespaces/rep/pods/mnist-worker-1", NULL, NULL));
	for (i = 0; i < 300 && has_record(p, job_uid, w1); i++)
		usleep(20000);
	TFJ_CHECK(!has_record(p, job_uid, w1));
	TFJ_CHECK(has_record(p, job_uid, w0));
	tfj_progress_stats(p, &st);
	TFJ_CHECK_EQ(st.records, 2 * 3 + TFJ_PROGRESS_SPARE_RECORDS - 1);

	/*
	 * Worker 0's pod is replaced by one of the same name while the watch is
	 * away: the relist shows it as an update, and the old pod's record goes.
	 */
	pthread_mutex_lock(&F.mu);
	{
		struct fake_obj *fo = fake_find(&F, "pods", "rep", "mnist-worker-0");
		cJSON *meta = fo ? cJSON_GetObjectItem(fo->obj, "metadata") : NULL;

		if (meta) {
			cJSON_ReplaceItemInObject(meta, "uid", cJSON_CreateString("uid-replaced"));
			fake_set_rv(fo->obj, ++F.rv);
		}
	}
	pthread_mutex_unlock(&F.mu);
	fake_compact_and_cut(&F);
	for (i = 0; i < 500 && has_record(p, job_uid, w0); i++)
		usleep(20000);
	TFJ_CHECK(!has_record(p, job_uid, w0));
out:
	cJSON_Delete(job);
	tfj_controller_free(c);
	tfj_progress_free(p);
}

int main(void)
{
	int rc;

	TFJ_RUN(test_owner_key);
	rc = fake_start(&F, "tok");
	if (fake_unavailable(&F, rc))
		return 77;
	TFJ_CHECK_INT(rc, 0);
	K = fake_client(&F, NULL);
	if (rc == 0 && K) {
		TFJ_RUN(test_job_lifecycle);
		TFJ_RUN(test_create_errors_retried);
		TFJ_RUN(test_secret_never_read);
		TFJ_RUN(test_old_crd_secret_name_pruned);
		TFJ_RUN(test_permanent_create_failure);
		TFJ_RUN(test_no_crd);
		TFJ_RUN(test_podgroup_before_pods);
		TFJ_RUN(test_ca_before_pods);
		TFJ_RUN(test_foreign_job_no_ca);
		TFJ_RUN(test_netpol_follows_ports);
		TFJ_RUN(test_netpol_failure_visible);
		TFJ_RUN(test_progress_follows_pods);
	}
	tfj_kube_free(K);
	fake_stop(&F);
	return tfj_test_finish();
}
