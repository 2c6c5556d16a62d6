/*
 * itest_requests.c - the operator's request economy against the test
 * bed's real kube-apiserver, with the controller in this process on API
 * clients of its own (one for reconciles, one for Events, as main.c wires
 * them), whose counters are then the controller's requests alone:
 *
 *  - a replica restart costs the pod's DELETE and POST and the status
 *    writes, and no request for the job's ps Secret (app/guardmemo.h) or
 *    its NetworkPolicy (the planner sees it in its cache); the requests of a whole job
 *    (start, 3 restarts, success) are printed per kind; the finished job
 *    leaves the memo;
 *  - a Secret deleted from outside is created again by the first pod
 *    create after the memo's recheck period;
 *  - Events spend their own budget: with the event client at 0.1/s, the
 *    job's children are all created and the job Running while most of its
 *    Events still wait in the queue, and the reconcile client posts none.
 *
 * Exits 77 when no cluster answers. Same setup as itest_policies.c
 * (itest_policy_util.h): one namespace per test, our own managedBy, pods
 * no kubelet will run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tfj/buf.h>
#include <tfj/err.h>
#include <tfj/log.h>

#include "app/controller.h"
#include "itest_common.h"
#include "itest_policy_util.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "tfj_test.h"

#define MANAGER "tfjob.test/itest-requests"

/* The controller of one test and its two clients. */
struct rq {
	struct ip_env e;
	struct tfj_kube *ck;  /* reconciles, informers */
	struct tfj_kube *ek;  /* Events */
};

static struct tfj_kube *client(double qps, int burst, const char *agent)
{
	struct tfj_kubeconfig kc;
	struct tfj_kube_opts o = { qps, burst, 15000, 0, 60, agent };
	struct tfj_kube *k = NULL;

	if (tfj_kubeconfig_load_file(&kc, KC))
		return NULL;
	if (tfj_kube_new(&k, &kc, &o))
		k = NULL;
	tfj_kubeconfig_free(&kc);
	return k;
}

/*
 * A fresh namespace and a controller on clients of its own: reconciles at
 * the operator's default rate (20/s, burst 30), Events at event_qps
 * (burst 1 when slow); guard_recheck_ms as in tfj_controller_opts.
 */
static int rq_setup(struct rq *r, const char *tag, double event_qps, long guard_recheck_ms)
{
	struct tfj_controller_opts o = { 0 };

	memset(r, 0, sizeof(*r));
	snprintf(r->e.ns, sizeof(r->e.ns), "tfj-itr-%s-%ld", tag, (long)getpid());
	r->e.manager = MANAGER;
	if (it_create_ns(K, r->e.ns)) {
		tfj_test_fail(__FILE__, __LINE__, "create namespace %s: %s", r->e.ns,
			      tfj_err_detail());
		return -1;
	}
	r->e.ns_made = 1;
	r->ck = client(20, 30, "tfjob-itest-requests");
	r->ek = client(event_qps, event_qps < 1 ? 1 : 100, "tfjob-itest-events");
	if (!r->ck || !r->ek) {
		tfj_test_fail(__FILE__, __LINE__, "clients: %s", tfj_err_detail());
		return -1;
	}
	o.namespace = r->e.ns;
	o.workers = 2;
	o.manager = MANAGER;
	o.event_kube = r->ek;
	o.guard_recheck_ms = guard_recheck_ms;
	if (tfj_controller_new(&r->e.c, r->ck, &o) || tfj_controller_start(r->e.c, 30000)) {
		tfj_test_fail(__FILE__, __LINE__, "controller: %s", tfj_err_detail());
		return -1;
	}
	return 0;
}

static void rq_teardown(struct rq *r)
{
	ip_teardown(&r->e); /* the controller first: it uses the clients */
	tfj_kube_free(r->ck);
	tfj_kube_free(r->ek);
}

/* Requests of one client by verb (all codes), LIST and WATCH left out:
 * informers relist and rewatch on their own schedule. */
struct counts {
	uint64_t get, post, post_201, put, patch, del;
};

static uint64_t verb_total(struct tfj_kube *k, enum tfj_kube_verb v)
{
	uint64_t n = 0;

	for (int code = 0; code < 600; code++)
		n += tfj_kube_count(k, v, code);
	return n;
}

static void snap(struct counts *c, struct tfj_kube *k)
{
	c->get = verb_total(k, TFJ_KUBE_GET);
	c->post = verb_total(k, TFJ_KUBE_POST);
	c->post_201 = tfj_kube_count(k, TFJ_KUBE_POST, 201);
	c->put = verb_total(k, TFJ_KUBE_PUT);
	c->patch = verb_total(k, TFJ_KUBE_PATCH);
	c->del = verb_total(k, TFJ_KUBE_DELETE);
}

static uint64_t total(const struct counts *c)
{
	return c->get + c->post + c->put + c->patch + c->del;
}

static void print_delta(const char *what, const struct counts *a, const struct counts *b,
			int per)
{
	struct counts d = { b->get - a->get, b->post - a->post, b->post_201 - a->post_201,
			    b->put - a->put, b->patch - a->patch, b->del - a->del };

	fprintf(stderr, "requests %s: %llu (GET %llu, POST %llu, PUT %llu, PATCH %llu, "
		"DELETE %llu)", what, (unsigned long long)total(&d), (unsigned long long)d.get,
		(unsigned long long)d.post, (unsigned long long)d.put,
		(unsigned long long)d.patch, (unsigned long long)d.del);
	if (per > 1)
		fprintf(stderr, ", %.1f each", (double)total(&d) / per);
	fputc('\n', stderr);
}

/* A series' value in the controller's Prometheus text (0 when absent). */
static unsigned long long ctl_metric(struct tfj_controller *c, const char *series)
{
	struct tfj_buf m;
	const char *text, *p;
	size_t n = strlen(series);
	unsigned long long v = 0;

	tfj_buf_init(&m, 1u << 20);
	if (tfj_controller_metrics(c, &m) == 0) {
		text = p = tfj_buf_cstr(&m);
		while ((p = strstr(p, series))) {
			if ((p == text || p[-1] == '\n') && p[n] == ' ') {
				v = strtoull(p + n + 1, NULL, 10);
				break;
			}
			p += n;
		}
	}
	tfj_buf_free(&m);
	return v;
}

#define STATUS_CONFLICTS "tfjob_operator_status_writes_total{result=\"conflict\"}"
#define GUARDS_KNOWN "tfjob_operator_job_guards_known"

static int no_guards_known(void *ud)
{
	return ctl_metric(((struct rq *)ud)->e.c, GUARDS_KNOWN) == 0;
}

/* The job's ps Secret's uid into out (its name: status.psSecretName); 0, TFJ_ENOTFOUND or an error. */
static int secret_uid(struct ip_env *e, const char *job, char *out, size_t outlen)
{
	struct ip_ctx x;
	char name[256];
	const char *uid;
	cJSON *o;

	ip_ctx_init(&x, e, job);
	ip_status_str(&x, "psSecretName", name, sizeof(name));
	if (!name[0])
		return TFJ_ENOTFOUND;
	o = it_get(K, e->ns, "secrets", name);
	if (!o)
		return TFJ_ENOTFOUND;
	uid = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"), "uid"));
	snprintf(out, outlen, "%s", uid ? uid : "");
	cJSON_Delete(o);
	return 0;
}

/*
 * Restarts pod x->pod (exit code 137, retryable under ExitCode): waits
 * until it is replaced, counted (replicaStatuses.Worker.restarts ==
 * restarts) and the replacement Running again.
 */
static void restart_pod(struct ip_ctx *x, int restarts)
{
	TFJ_CHECK_INT(ip_pod_uid(x->e, x->pod, x->uid, sizeof(x->uid)), 0);
	TFJ_CHECK_INT(it_pod_phase(K, x->e->ns, x->pod, "Failed", 137), 0);
	IP_EXPECT(x, ip_wait(ip_pod_replaced, x, 30), "pod recreated with a new uid");
	x->rtype = "Worker";
	x->n = restarts;
	IP_EXPECT(x, ip_wait(ip_restarts_eq, x, 30), "restart counted");
	TFJ_CHECK_INT(it_pod_phase(K, x->e->ns, x->pod, "Running", 0), 0);
}

/*
 * The whole job's requests, and per restart: the replacement pod's POST
 * is the only POST, and nothing is read (GET) except after a status
 * conflict. Before the guard memo and the NetworkPolicy's informer each
 * restart also POSTed the Secret and the NetworkPolicy (409) and GET both:
 * 4 more.
 */
static void test_restart_costs_no_guard_requests(void)
{
	enum { RESTARTS = 3 };
	struct rq r;
	struct ip_ctx x;
	struct counts c0, c1, c2, c3;
	unsigned long long conf1, conf2;
	char suid0[64] = "", suid1[64] = "";

	if (rq_setup(&r, "rs", 100, 0))
		goto out;
	ip_ctx_init(&x, &r.e, "rs");
	snap(&c0, r.ck);
	ip_start_job(&x, 1, 2, "ExitCode", "\"cleanPodPolicy\":\"Running\",");
	TFJ_CHECK_INT(secret_uid(&r.e, "rs", suid0, sizeof(suid0)), 0);
	snap(&c1, r.ck);
	conf1 = ctl_metric(r.e.c, STATUS_CONFLICTS);
	/* 3 pods, 3 services, the Secret and the NetworkPolicy; the Secret's
	 * name went into the status with a status write (PUT). */
	TFJ_CHECK_EQ(c1.post_201 - c0.post_201, 8);

	x.pod = "rs-worker-0";
	for (int i = 1; i <= RESTARTS; i++)
		restart_pod(&x, i);
	snap(&c2, r.ck);
	conf2 = ctl_metric(r.e.c, STATUS_CONFLICTS);
	print_delta("per restart", &c1, &c2, RESTARTS);
	TFJ_CHECK_EQ(c2.post - c1.post, RESTARTS);          /* the pods, nothing else */
	TFJ_CHECK_EQ(c2.post_201 - c1.post_201, RESTARTS);
	TFJ_CHECK_EQ(c2.get - c1.get, conf2 - conf1);       /* no GET after a 409 */
	TFJ_CHECK_EQ(c2.del - c1.del, RESTARTS);
	/* The Secret is the same object: not recreated, no new token. */
	TFJ_CHECK_INT(secret_uid(&r.e, "rs", suid1, sizeof(suid1)), 0);
	TFJ_CHECK_STR(suid1, suid0);

	TFJ_CHECK_EQ(ctl_metric(r.e.c, GUARDS_KNOWN), 1);
	/* To the end: the workers succeed, the ps is cleaned up. */
	TFJ_CHECK_INT(it_pod_phase(K, r.e.ns, "rs-worker-0", "Succeeded", 0), 0);
	TFJ_CHECK_INT(it_pod_phase(K, r.e.ns, "rs-worker-1", "Succeeded", 0), 0);
	x.type = "Succeeded";
	IP_EXPECT(&x, ip_wait(ip_cond_true, &x, 30), "Succeeded condition");
	x.pod = "rs-ps-0";
	IP_EXPECT(&x, ip_wait(ip_pod_gone, &x, 30), "ps pod cleaned up");
	/* Finished: no pod will be created again, the memo lets the job go. */
	IP_EXPECT(&x, it_wait(no_guards_known, &r, 10), "memo entry dropped at the end");
	snap(&c3, r.ck);
	print_delta("to start the job (1 ps + 2 workers)", &c0, &c1, 1);
	print_delta("to finish it", &c2, &c3, 1);
	print_delta("whole job with 3 restarts", &c0, &c3, 1);
	fprintf(stderr, "events of the job: %llu posted, %llu of them as a count on an "
		"earlier Event (event client: POST %llu, PATCH %llu)\n",
		ctl_metric(r.e.c, "tfjob_operator_events_total{result=\"success\"}"),
		ctl_metric(r.e.c, "tfjob_operator_events_aggregated_total"),
		(unsigned long long)verb_total(r.ek, TFJ_KUBE_POST),
		(unsigned long long)verb_total(r.ek, TFJ_KUBE_PATCH));
out:
	rq_teardown(&r);
}

/*
 * A Secret deleted from outside: once the memo's trust has run out (1 s
 * here), the next pod create posts it again under its recorded name (a
 * new Secret, a new token).
 */
static void test_deleted_secret_recreated(void)
{
	struct rq r;
	struct ip_ctx x;
	char p[512], name[256], suid0[64] = "", suid1[64] = "";

	if (rq_setup(&r, "sd", 100, 1000))
		goto out;
	ip_ctx_init(&x, &r.e, "sd");
	ip_start_job(&x, 0, 2, "ExitCode", "");
	TFJ_CHECK_INT(secret_uid(&r.e, "sd", suid0, sizeof(suid0)), 0);
	ip_status_str(&x, "psSecretName", name, sizeof(name));
	snprintf(p, sizeof(p), "/api/v1/namespaces/%s/secrets/%s", r.e.ns, name);
	TFJ_CHECK_INT(tfj_kube_delete(K, p, suid0, "Background"), 0);
	/* Past the 1 s trust: a lower bound, so no timing race. */
	sleep(2);
	x.pod = "sd-worker-1";
	restart_pod(&x, 1);
	TFJ_CHECK_INT(secret_uid(&r.e, "sd", suid1, sizeof(suid1)), 0);
	TFJ_CHECK_NE(strcmp(suid1, suid0), 0);
out:
	rq_teardown(&r);
}

/*
 * Events at 0.1/s (burst 1): the ~13 Events of a 1 ps + 4 worker job need
 * two minutes; the children and the Running condition must not wait for them.
 * Checked by state: when the job is Running, at least 5 Events still sit in
 * the queue, and the reconcile client posted exactly the 10 children and
 * the 2 guards.
 */
static void test_events_do_not_slow_reconciles(void)
{
	struct rq r;
	struct ip_ctx x;
	struct counts c0, c1;
	unsigned long long queued;

	if (rq_setup(&r, "ev", 0.1, 0))
		goto out;
	ip_ctx_init(&x, &r.e, "ev");
	snap(&c0, r.ck);
	TFJ_CHECK_INT(ip_create_job(&r.e, "ev", 1, 4, "OnFailure", "", ""), 0);
	x.n = 5;
	IP_EXPECT(&x, ip_wait(ip_live_pods_eq, &x, 30), "all pods created");
	ip_pods_phase(&x, 1, 4, "Running");
	x.type = "Running";
	IP_EXPECT(&x, ip_wait(ip_cond_true, &x, 30), "Running condition");
	queued = ctl_metric(r.e.c, "tfjob_operator_events_queued");
	snap(&c1, r.ck);
	fprintf(stderr, "job Running with %llu events still queued (event budget 0.1/s)\n",
		queued);
	TFJ_CHECK_GE(queued, 5);
	TFJ_CHECK_EQ(c1.post - c0.post, 12);
	TFJ_CHECK_EQ(it_count(K, r.e.ns, "ev", "services"), 5);
out:
	rq_teardown(&r);
}

int main(void)
{
	tfj_log_set_component("itest");
	if (ip_init())
		return ip_init_rc();
	TFJ_RUN(test_restart_costs_no_guard_requests);
	TFJ_RUN(test_deleted_secret_recreated);
	TFJ_RUN(test_events_do_not_slow_reconciles);
	return it_finish(K, NULL);
}
