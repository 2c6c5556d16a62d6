/*
 * itest_policy_util.h - helpers of itest_policies.c and itest_lifecycle.c:
 * a scratch namespace with its own in-process controller per test, TFJob
 * bodies, and polled predicates over the TFJob, its pods, services and
 * events. A failed expectation prints the job's status JSON.
 *
 * Header-only (static, used by both programs); includes itest_common.h.
 */
#ifndef TFJ_ITEST_POLICY_UTIL_H
#define TFJ_ITEST_POLICY_UTIL_H

#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>

#include "app/controller.h"
#include "itest_common.h"
#include "kube/kube.h"
#include "tfj_test.h"

static struct tfj_kube *K;
static char KC[512];
static int IP_INIT_RC;

struct ip_env {
	char ns[64];
	struct tfj_controller *c;
	int ns_made;
	const char *manager; /* runPolicy.managedBy of its jobs */
};

/* What a predicate looks at; fields unused by a predicate stay NULL/0. */
struct ip_ctx {
	struct ip_env *e;
	const char *job;
	const char *type;  /* condition type */
	const char *pod;
	const char *svc;
	const char *rtype; /* replicaStatuses key */
	char uid[64];
	int n;
};

static inline void ip_ctx_init(struct ip_ctx *x, struct ip_env *e, const char *job)
{
	memset(x, 0, sizeof(*x));
	x->e = e;
	x->job = job;
}

/* Connects and applies the CRD; nonzero when the program should exit with
 * ip_init_rc() (77 without a cluster). */
static inline int ip_init(void)
{
	IP_INIT_RC = it_start(&K, KC, sizeof(KC), NULL, 0, NULL);
	return IP_INIT_RC ? -1 : 0;
}

static inline int ip_init_rc(void)
{
	return IP_INIT_RC;
}

/* A fresh namespace and a controller watching only it, with options `base`
 * (NULL: defaults) under the namespace, workers and manager set here. */
static inline int ip_setup_opts(struct ip_env *e, const char *tag, const char *manager,
				const struct tfj_controller_opts *base)
{
	struct tfj_controller_opts o = { 0 };

	if (base)
		o = *base;
	memset(e, 0, sizeof(*e));
	snprintf(e->ns, sizeof(e->ns), "tfj-itp-%s-%ld", tag, (long)getpid());
	if (it_create_ns(K, e->ns)) {
		tfj_test_fail(__FILE__, __LINE__, "create namespace %s: %s", e->ns, tfj_err_detail());
		return -1;
	}
	e->ns_made = 1;
	e->manager = manager;
	o.namespace = e->ns;
	o.workers = 2;
	o.manager = manager;
	if (tfj_controller_new(&e->c, K, &o) || tfj_controller_start(e->c, 30000)) {
		tfj_test_fail(__FILE__, __LINE__, "controller: %s", tfj_err_detail());
		return -1;
	}
	return 0;
}

static inline int ip_setup(struct ip_env *e, const char *tag, const char *manager)
{
	return ip_setup_opts(e, tag, manager, NULL);
}

/* Stops the controller and deletes the namespace (also after a failure). */
static inline void ip_teardown(struct ip_env *e)
{
	tfj_controller_free(e->c);
	e->c = NULL;
	if (e->ns_made)
		it_delete_ns(K, e->ns);
	e->ns_made = 0;
}

/*
 * Creates TFJob `name` with `ps` PS and `workers` Worker replicas (workers
 * with restartPolicy `restart`); `run_extra` goes into runPolicy and
 * `spec_extra` into spec, each ending with a comma when not empty.
 */
static inline int ip_create_job(struct ip_env *e, const char *name, int ps, int workers,
			 const char *restart, const char *run_extra, const char *spec_extra)
{
	char body[4096], psb[1024] = "", path[256];
	cJSON *o;
	int rc;

#define IP_TEMPLATE \
	"\"template\":{\"spec\":{\"nodeSelector\":{\"tfjob-itest/no-such-node\":\"true\"}," \
	"\"containers\":[{\"name\":\"tensorflow\",\"image\":\"localhost/tfjob-itest:1\"}]}}"
	if (ps > 0)
		snprintf(psb, sizeof(psb), "\"PS\":{\"replicas\":%d," IP_TEMPLATE "},", ps);
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
		 "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},"
		 "\"spec\":{%s\"runPolicy\":{%s\"managedBy\":\"%s\"},\"tfReplicaSpecs\":{%s"
		 "\"Worker\":{\"replicas\":%d,\"restartPolicy\":\"%s\"," IP_TEMPLATE "}}}}",
		 name, e->ns, spec_extra, run_extra,
		 e->manager, psb, workers, restart);
#undef IP_TEMPLATE
	o = cJSON_Parse(body);
	if (!o) {
		tfj_test_fail(__FILE__, __LINE__, "bad job body: %s", body);
		return -1;
	}
	snprintf(path, sizeof(path), "/apis/kubeflow.org/v1/namespaces/%s/tfjobs", e->ns);
	rc = tfj_kube_create(K, NULL, path, o);
	if (rc)
		fprintf(stderr, "create TFJob %s: %s\n", name, tfj_err_detail());
	cJSON_Delete(o);
	return rc;
}

static inline cJSON *ip_get_job(struct ip_ctx *x)
{
	char p[512];
	cJSON *j = NULL;
	snprintf(p, sizeof(p), "/apis/kubeflow.org/v1/namespaces/%s/tfjobs/%s", x->e->ns, x->job);
	if (tfj_kube_get(K, &j, p))
		return NULL;
	return j;
}

static inline void ip_dump(struct ip_ctx *x)
{
	cJSON *j = ip_get_job(x);
	char *s = j ? cJSON_Print(cJSON_GetObjectItem(j, "status")) : NULL;
	fprintf(stderr, "  TFJob %s/%s status: %s\n", x->e->ns, x->job, s ? s : "(no job)");
	free(s);
	cJSON_Delete(j);
}

/* A check that prints what it wanted and the job's status when it fails. */
#define IP_EXPECT(x, c, what)                                                   \
	do {                                                                    \
		tfj_test_count();                                               \
		if (!(c)) {                                                     \
			tfj_test_fail(__FILE__, __LINE__, "%s: %s", (x)->job, what); \
			ip_dump(x);                                             \
		}                                                               \
	} while (0)

/* The condition `type` of the job (borrowed from j), or NULL. */
static inline cJSON *ip_find_cond(cJSON *j, const char *type)
{
	cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(cJSON_GetObjectItem(j, "status"), "conditions")) {
		const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(c, "type"));
		if (t && !strcmp(t, type))
			return c;
	}
	return NULL;
}

static inline const char *ip_cond_field(cJSON *j, const char *type, const char *field)
{
	return cJSON_GetStringValue(cJSON_GetObjectItem(ip_find_cond(j, type), field));
}

static inline int ip_cond(struct ip_ctx *x, const char *type)
{
	cJSON *j = ip_get_job(x);
	const char *s = ip_cond_field(j, type, "status");
	int yes = s && !strcmp(s, "True");
	cJSON_Delete(j);
	return yes;
}

static inline int ip_cond_true(void *ud)
{
	struct ip_ctx *x = ud;
	return ip_cond(x, x->type);
}

static inline int ip_cond_false(void *ud)
{
	struct ip_ctx *x = ud;
	cJSON *j = ip_get_job(x);
	const char *s = ip_cond_field(j, x->type, "status");
	int yes = s && !strcmp(s, "False");
	cJSON_Delete(j);
	return yes;
}

static inline int ip_cond_reason_is(struct ip_ctx *x, const char *type, const char *reason)
{
	cJSON *j = ip_get_job(x);
	const char *r = ip_cond_field(j, type, "reason");
	int yes = r && !strcmp(r, reason);
	cJSON_Delete(j);
	return yes;
}

static inline int ip_cond_msg_has(struct ip_ctx *x, const char *type, const char *part)
{
	cJSON *j = ip_get_job(x);
	const char *m = ip_cond_field(j, type, "message");
	int yes = m && strstr(m, part) != NULL;
	cJSON_Delete(j);
	return yes;
}

/* status.<field> as a string equals want (want NULL: field absent). */
static inline int ip_status_str_is(struct ip_ctx *x, const char *field, const char *want)
{
	cJSON *j = ip_get_job(x);
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "status"),
								 field));
	int yes = j && (want ? (v && !strcmp(v, want)) : v == NULL);
	cJSON_Delete(j);
	return yes;
}

/* status.<field> copied into out ("" when absent). */
static inline void ip_status_str(struct ip_ctx *x, const char *field, char *out, size_t outlen)
{
	cJSON *j = ip_get_job(x);
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "status"),
								 field));
	snprintf(out, outlen, "%s", v ? v : "");
	cJSON_Delete(j);
}

static inline cJSON *ip_replica_status(cJSON *j, const char *rtype)
{
	return cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "status"),
						       "replicaStatuses"), rtype);
}

/* replicaStatuses[rtype].restarts == x->n */
static inline int ip_restarts_eq(void *ud)
{
	struct ip_ctx *x = ud;
	cJSON *j = ip_get_job(x);
	cJSON *r = cJSON_GetObjectItem(ip_replica_status(j, x->rtype), "restarts");
	int yes = cJSON_IsNumber(r) && (int)r->valuedouble == x->n;
	cJSON_Delete(j);
	return yes;
}

static inline int ip_completed_is(struct ip_ctx *x, const char *want)
{
	cJSON *j = ip_get_job(x);
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(ip_replica_status(j, x->rtype),
								 "completedIndexes"));
	int yes = v && !strcmp(v, want);
	cJSON_Delete(j);
	return yes;
}

static inline int ip_job_gone(void *ud)
{
	struct ip_ctx *x = ud;
	char p[512];
	cJSON *j = NULL;
	int rc;
	snprintf(p, sizeof(p), "/apis/kubeflow.org/v1/namespaces/%s/tfjobs/%s", x->e->ns, x->job);
	rc = tfj_kube_get(K, &j, p);
	cJSON_Delete(j);
	return rc == TFJ_ENOTFOUND;
}

/* The uid of a pod that exists and is not being deleted; 0 or an error. */
static inline int ip_pod_uid(struct ip_env *e, const char *pod, char *out, size_t outlen)
{
	char p[512];
	cJSON *o = NULL, *m;
	int rc;
	snprintf(p, sizeof(p), "/api/v1/namespaces/%s/pods/%s", e->ns, pod);
	if ((rc = tfj_kube_get(K, &o, p)))
		return rc;
	m = cJSON_GetObjectItem(o, "metadata");
	if (cJSON_GetObjectItem(m, "deletionTimestamp"))
		rc = TFJ_ENOTFOUND;
	else
		snprintf(out, outlen, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(m, "uid")));
	cJSON_Delete(o);
	return rc;
}

/* Gone or terminating (no kubelet finishes the deletion of a bound pod). */
static inline int ip_pod_gone(void *ud)
{
	struct ip_ctx *x = ud;
	char uid[64];
	return ip_pod_uid(x->e, x->pod, uid, sizeof(uid)) == TFJ_ENOTFOUND;
}

/* x->pod exists under a uid other than x->uid. */
static inline int ip_pod_replaced(void *ud)
{
	struct ip_ctx *x = ud;
	char uid[64] = "";
	return ip_pod_uid(x->e, x->pod, uid, sizeof(uid)) == 0 && strcmp(uid, x->uid) != 0;
}

static inline int ip_svc_gone(void *ud)
{
	struct ip_ctx *x = ud;
	char p[512];
	cJSON *o = NULL;
	int rc;
	snprintf(p, sizeof(p), "/api/v1/namespaces/%s/services/%s", x->e->ns, x->svc);
	rc = tfj_kube_get(K, &o, p);
	cJSON_Delete(o);
	return rc == TFJ_ENOTFOUND;
}

/* Count of the job's children of kind `res` not being deleted. */
static inline int ip_live(struct ip_ctx *x, const char *res)
{
	cJSON *l = it_job_pods(K, x->e->ns, x->job, res), *it;
	int n = 0;
	if (!l)
		return -1;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(l, "items"))
		if (!cJSON_GetObjectItem(cJSON_GetObjectItem(it, "metadata"), "deletionTimestamp"))
			n++;
	cJSON_Delete(l);
	return n;
}

static inline int ip_live_pods_eq(void *ud)
{
	struct ip_ctx *x = ud;
	return ip_live(x, "pods") == x->n;
}

/*
 * Plays kubelet: pods <job>-ps-0.. and <job>-worker-0.. (`ps` and `workers`
 * of them, PS first) move to `phase`, each step checked.
 */
static inline void ip_pods_phase(struct ip_ctx *x, int ps, int workers, const char *phase)
{
	char pod[128];

	for (int i = 0; i < ps + workers; i++) {
		int rc;

		snprintf(pod, sizeof(pod), "%s-%s-%d", x->job, i < ps ? "ps" : "worker",
			 i < ps ? i : i - ps);
		rc = it_pod_phase(K, x->e->ns, pod, phase, 0);
		tfj_test_count();
		if (rc)
			tfj_test_fail(__FILE__, __LINE__, "pod %s to %s: %s", pod, phase,
				      tfj_err_detail());
	}
}

/* A Running pod whose `tensorflow` container the kubelet restarted
 * `restarts` times in place (OnFailure). */
static inline int ip_pod_running(struct ip_env *e, const char *pod, int restarts)
{
	char p[512], body[2048];
	snprintf(body, sizeof(body),
		 "{\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\","
		 "\"status\":\"True\"}],\"containerStatuses\":[{\"name\":\"tensorflow\","
		 "\"image\":\"localhost/tfjob-itest:1\",\"imageID\":\"\",\"ready\":true,"
		 "\"restartCount\":%d,\"started\":true,\"state\":{\"running\":{\"startedAt\":"
		 "\"2026-01-01T00:02:00Z\"}},\"lastState\":{\"terminated\":{\"exitCode\":1,"
		 "\"reason\":\"Error\",\"startedAt\":\"2026-01-01T00:00:00Z\","
		 "\"finishedAt\":\"2026-01-01T00:01:00Z\"}}}]}}", restarts);
	snprintf(p, sizeof(p), "/api/v1/namespaces/%s/pods/%s/status", e->ns, pod);
	return tfj_kube_patch(K, NULL, p, TFJ_KUBE_PATCH_STRATEGIC, body);
}

/* A core/v1 Event on TFJob `job` with `reason` (and `part` in its message
 * when not NULL). */
static inline int ip_event_has(struct ip_env *e, const char *job, const char *reason,
				const char *part)
{
	char p[512];
	cJSON *l = NULL, *it;
	int yes = 0;
	snprintf(p, sizeof(p), "/api/v1/namespaces/%s/events?fieldSelector="
		 "involvedObject.name%%3D%s", e->ns, job);
	if (tfj_kube_list(K, &l, p))
		return 0;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(l, "items")) {
		const char *r = cJSON_GetStringValue(cJSON_GetObjectItem(it, "reason"));
		const char *m = cJSON_GetStringValue(cJSON_GetObjectItem(it, "message"));
		const char *k = cJSON_GetStringValue(cJSON_GetObjectItem(
			cJSON_GetObjectItem(it, "involvedObject"), "kind"));
		if (r && k && !strcmp(r, reason) && !strcmp(k, "TFJob") &&
		    (!part || (m && strstr(m, part))))
			yes = 1;
	}
	cJSON_Delete(l);
	return yes;
}

/* Events are written after the actions they announce: poll briefly. */
static inline int ip_event_wait(struct ip_env *e, const char *job, const char *reason,
				 const char *part)
{
	for (int i = 0; i < 50; i++) {
		if (ip_event_has(e, job, reason, part))
			return 1;
		usleep(100000);
	}
	return 0;
}

/* Merge-patches the TFJob's spec.runPolicy.suspend. */
static inline int ip_suspend(struct ip_ctx *x, int on)
{
	char p[512], body[128];
	snprintf(p, sizeof(p), "/apis/kubeflow.org/v1/namespaces/%s/tfjobs/%s", x->e->ns, x->job);
	snprintf(body, sizeof(body), "{\"spec\":{\"runPolicy\":{\"suspend\":%s}}}",
		 on ? "true" : "false");
	return tfj_kube_patch(K, NULL, p, TFJ_KUBE_PATCH_MERGE, body);
}

/* it_wait for predicates over ip_ctx. */
static inline int ip_wait(int (*cond)(void *), struct ip_ctx *x, int seconds)
{
	return it_wait(cond, x, seconds);
}

/*
 * Creates TFJob x->job (as ip_create_job, no spec_extra), waits for all its
 * pods, runs them and waits for the Running condition. Leaves x->n at the
 * pod count and x->type at "Running".
 */
static inline void ip_start_job(struct ip_ctx *x, int ps, int workers, const char *restart,
				const char *run_extra)
{
	TFJ_CHECK_INT(ip_create_job(x->e, x->job, ps, workers, restart, run_extra, ""), 0);
	x->n = ps + workers;
	IP_EXPECT(x, ip_wait(ip_live_pods_eq, x, 30), "all pods created");
	ip_pods_phase(x, ps, workers, "Running");
	x->type = "Running";
	IP_EXPECT(x, ip_wait(ip_cond_true, x, 30), "Running condition");
}

#endif
