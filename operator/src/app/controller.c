/*
 * controller.c - reconcile loop: caches -> plan -> apply.
 */
#include "app/controller.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tfj/clock.h>
#include <tfj/err.h>
#include <tfj/json.h>
#include <tfj/log.h>

#include "app/apply.h"
#include "app/gang.h"
#include "app/poison.h"
#include "kube/apipath.h"
#include "kube/objmeta.h"
#include "kube/expect.h"
#include "kube/informer.h"
#include "kube/nsinformer.h"
#include "tfjob/jobstatus.h"
#include "tfjob/netpol.h"
#include "tfjob/plan.h"
#include "tfjob/podspec.h"
#include "report/capublish.h"
#include "report/progress.h"
#include "kube/queue.h"
#include "kube/ratelimit.h"
#include "kube/strmap.h"
#include "app/slim.h"
#include "tfjob/tfjob.h"

#define KEY_MAX 512
#define PATH_MAX_ 1024
#define STATUS_ATTEMPTS 3
/* While expectations are pending, look again after this long even without events. */
#define EXPECT_RECHECK_MS 5000
/* Jobs whose permanent create failures are remembered (createfail.h); past
 * this, a new job's failures are not counted (no backoff, no condition). */
#define CREATEFAIL_MAX_JOBS 4096

static const double dur_buckets[] = { 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10 };
#define NBUCKETS (sizeof(dur_buckets) / sizeof(dur_buckets[0]))

struct tfj_controller {
	struct tfj_kube *k;
	char *ns;            /* watched namespaces, comma-separated; NULL = all */
	char *domain, *opname, *instance, *report_addr, *report_aud, *manager, *gang_name;
	char *agent_image, *report_ca_cm;
	struct tfj_gang gang;        /* gang scheduling (app/gang.h); api OFF = none */
	struct tfj_progress *prog;   /* borrowed; NULL = report channel off */
	struct tfj_capublish *capub; /* borrowed; NULL = no CA to publish (report/capublish.h) */
	int workers;
	struct tfj_plan_config pcfg;

	/* One informer per watched namespace; netpols are the jobs' NetworkPolicies,
	 * podgroups the PodGroups (gang scheduling only, else NULL). */
	struct tfj_nsinformer *jobs, *pods, *svcs, *netpols, *podgroups;
	struct tfj_queue *q;
	struct tfj_expect *exp;
	int started;  /* informers running */
	int running;  /* workers running */

	struct tfj_apply ap;  /* writes and their counters */
	struct tfj_events *events;
	struct tfj_guardmemo *guards; /* jobs whose Secret and NetworkPolicy exist */
	struct tfj_poison *poison;   /* TFJobs the informer could not decode */
	struct tfj_jobmetrics *jm;   /* job counters by namespace (jobmetrics.h) */
	long stale_ms;               /* readiness bound (informer_stale_s) */

	/* key -> struct tfj_createfail*: jobs whose creates failed for good */
	pthread_mutex_t cf_mu;
	struct tfj_strmap cf;

	/* metrics */
	_Atomic uint64_t rec_ok, rec_err, rec_skipped, rec_requeued;
	_Atomic uint64_t rec_us_sum, rec_count;
	_Atomic uint64_t rec_buckets[NBUCKETS];
};

/* ---- keys and ownership ---- */

int tfj_controller_owner_key(char *out, size_t outlen, const void *child_json)
{
	const cJSON *child = child_json, *meta, *refs, *r;
	const char *ns;

	if (tfj_json_get_object(&meta, child, "metadata") ||
	    tfj_json_opt_string(&ns, meta, "namespace", "") ||
	    tfj_json_get_array(&refs, meta, "ownerReferences"))
		return tfj_err_set(TFJ_ENOTFOUND, "no owner");
	cJSON_ArrayForEach(r, refs) {
		const char *kind, *name, *api;
		int ctl = 0;
		if (tfj_json_opt_bool(&ctl, r, "controller", 0) || !ctl ||
		    tfj_json_get_string(&kind, r, "kind") || strcmp(kind, TFJ_TFJOB_KIND) != 0 ||
		    tfj_json_get_string(&api, r, "apiVersion") ||
		    strncmp(api, "kubeflow.org/", 13) != 0 ||
		    tfj_json_get_string(&name, r, "name") || !*name)
			continue;
		if (snprintf(out, outlen, "%s/%s", ns, name) >= (int)outlen)
			return tfj_err_set(TFJ_ETOOBIG, "owner key too long");
		return 0;
	}
	return tfj_err_set(TFJ_ENOTFOUND, "no TFJob controller reference");
}

static int controlled_by(const cJSON *child, const char *uid)
{
	const cJSON *meta, *refs, *r;
	if (tfj_json_get_object(&meta, child, "metadata") ||
	    tfj_json_get_array(&refs, meta, "ownerReferences"))
		return 0;
	cJSON_ArrayForEach(r, refs) {
		const char *u;
		int ctl = 0;
		if (tfj_json_opt_bool(&ctl, r, "controller", 0) == 0 && ctl &&
		    tfj_json_get_string(&u, r, "uid") == 0 && strcmp(u, uid) == 0)
			return 1;
	}
	return 0;
}


static int has_deletion_ts(const cJSON *obj)
{
	const cJSON *meta;
	if (tfj_json_get_object(&meta, obj, "metadata"))
		return 0;
	return cJSON_GetObjectItemCaseSensitive(meta, "deletionTimestamp") != NULL &&
	       !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(meta, "deletionTimestamp"));
}

/* ---- informer callbacks: expectations and enqueueing ---- */

static void on_job(void *ud, enum tfj_informer_event ev, const cJSON *obj, const cJSON *old)
{
	struct tfj_controller *c = ud;
	char key[KEY_MAX];

	if (tfj_informer_key(key, sizeof(key), obj))
		return;
	if (ev == TFJ_INF_DELETE) {
		/* Children go with the TFJob through ownerReferences (GC). */
		tfj_expect_forget(c->exp, key);
		pthread_mutex_lock(&c->cf_mu);
		free(tfj_strmap_del(&c->cf, key));
		pthread_mutex_unlock(&c->cf_mu);
		if (c->prog && tfj_objmeta_str(obj, "uid"))
			tfj_progress_forget(c->prog, tfj_objmeta_str(obj, "uid"));
		tfj_guardmemo_forget(c->guards, tfj_objmeta_str(obj, "uid"));
		/* The next job there reads the CA ConfigMap again (capublish.h). */
		if (c->capub)
			tfj_capublish_forget(c->capub, tfj_objmeta_str(obj, "namespace"));
		return;
	}
	tfj_expect_observe_job(c->exp, key, tfj_objmeta_str(obj, "resourceVersion"));
	tfj_queue_add(c->q, key);
}

/* A TFJob the informer could not decode: marked Failed by a worker (poison.h). */
static void on_job_reject(void *ud, const struct tfj_informer_reject *r)
{
	struct tfj_controller *c = ud;

	if (tfj_poison_note(c->poison, r) == 1)
		tfj_queue_add(c->q, r->key);
}

static void on_child(struct tfj_controller *c, const char *kind, enum tfj_informer_event ev,
		     const cJSON *obj)
{
	char key[KEY_MAX];
	const char *name = tfj_objmeta_str(obj, "name");

	if (!name || tfj_controller_owner_key(key, sizeof(key), obj))
		return;
	if (ev == TFJ_INF_ADD)
		tfj_expect_observe_create(c->exp, key, kind, name);
	/* A terminating child counts as deleted, as the reference's job controller does. */
	if (ev == TFJ_INF_DELETE || has_deletion_ts(obj))
		tfj_expect_observe_delete(c->exp, key, kind, name);
	tfj_queue_add(c->q, key);
}

/* The uid of the TFJob that controls child, as authorization checks it; NULL when none. */
static const char *controller_uid(const cJSON *child)
{
	const cJSON *r = tfj_objmeta_controller_ref(child);
	const char *kind, *u;

	if (r && tfj_json_get_string(&kind, r, "kind") == 0 && !strcmp(kind, TFJ_TFJOB_KIND) &&
	    tfj_json_get_string(&u, r, "uid") == 0)
		return u;
	return NULL;
}

static void on_pod(void *ud, enum tfj_informer_event ev, const cJSON *obj, const cJSON *old)
{
	struct tfj_controller *c = ud;
	const char *uid = tfj_objmeta_str(obj, "uid"), *was;

	on_child(c, "pod", ev, obj);
	if (!c->prog)
		return;
	/*
	 * A deleted pod reports no more, and no plan sees it again (the cache
	 * dropped it before this call): its report record can go, or a job whose
	 * pods crash-loop keeps one per pod it ever had (progress.h). Reports
	 * are stored under the job uid of the pod's controller reference
	 * (tokenreview.h), so that is where it is.
	 */
	if (ev == TFJ_INF_DELETE)
		tfj_progress_forget_pod(c->prog, controller_uid(obj), uid);
	/*
	 * A relist after a watch gap reports a pod deleted and made again under
	 * the same name (a restart) as an update of that name: the old pod is
	 * as gone as if its DELETE had come.
	 */
	if (ev == TFJ_INF_UPDATE && old && (was = tfj_objmeta_str(old, "uid")) &&
	    (!uid || strcmp(uid, was)))
		tfj_progress_forget_pod(c->prog, controller_uid(old), was);
}

static void on_svc(void *ud, enum tfj_informer_event ev, const cJSON *obj, const cJSON *old)
{
	on_child(ud, "service", ev, obj);
}

/* A job's NetworkPolicy changed: the planner converges it (plan.h). */
static void on_netpol(void *ud, enum tfj_informer_event ev, const cJSON *obj, const cJSON *old)
{
	on_child(ud, "networkpolicy", ev, obj);
}

/* A PodGroup changed: the planner converges the job's (planpodgroup.h). */
static void on_podgroup(void *ud, enum tfj_informer_event ev, const cJSON *obj, const cJSON *old)
{
	on_child(ud, "podgroup", ev, obj);
}

/* ---- reconcile ---- */

static int split_key(const char *key, char *ns, size_t nslen, const char **name)
{
	const char *slash = strchr(key, '/');
	if (!slash || slash == key || !slash[1] || (size_t)(slash - key) >= nslen)
		return tfj_err_set(TFJ_EINVAL, "bad key %s", key);
	memcpy(ns, key, (size_t)(slash - key));
	ns[slash - key] = '\0';
	*name = slash + 1;
	return 0;
}

/* Owned children of the job from one informer; *out holds only the owned ones. */
static int owned(struct tfj_nsinformer *inf, const struct tfj_tfjob *job, cJSON ***out,
		 size_t *n)
{
	size_t j = 0;
	int rc = tfj_nsinformer_select(inf, out, n, job->ns, job->name);
	if (rc)
		return rc;
	for (size_t i = 0; i < *n; i++) {
		if (controlled_by((*out)[i], job->uid))
			(*out)[j++] = (*out)[i];
		else
			cJSON_Delete((*out)[i]);
	}
	*n = j;
	return 0;
}

/* child's controller is a TFJob named `name` (whatever its uid). */
static int controlled_by_name(const cJSON *child, const char *name)
{
	const cJSON *r = tfj_objmeta_controller_ref(child);
	const char *kind = NULL, *n = NULL;

	return r && !tfj_json_get_string(&kind, r, "kind") && !strcmp(kind, TFJ_TFJOB_KIND) &&
	       !tfj_json_get_string(&n, r, "name") && !strcmp(n, name);
}

/*
 * Kueue's pod-group mode (tfjob/plankueue.h): a TFJob deleted in the
 * background is gone before the garbage collector deletes its pods, and
 * Kueue keeps its finalizer on them. Their events still bring the job's
 * key: the release is planned for a stand-in of the gone job (being
 * deleted, so the planner does nothing else) from the pods it controlled.
 */
static int release_orphans(struct tfj_controller *c, const char *key, const char *ns,
			   const char *name)
{
	struct tfj_tfjob job;
	struct tfj_plan plan;
	struct tfj_plan_input in;
	struct tfj_apply_result a;
	cJSON **pods = NULL, *obj = NULL, *m;
	size_t n = 0, j = 0;
	int rc;

	memset(&job, 0, sizeof(job));
	memset(&plan, 0, sizeof(plan));
	if (!c->pcfg.kueue_pod_groups)
		return 0;
	if ((rc = tfj_nsinformer_select(c->pods, &pods, &n, ns, name)))
		return rc;
	for (size_t i = 0; i < n; i++) {
		if (controlled_by_name(pods[i], name))
			pods[j++] = pods[i];
		else
			cJSON_Delete(pods[i]);
	}
	n = j;
	rc = TFJ_ENOMEM;
	if (!n || !(obj = cJSON_CreateObject()) ||
	    !cJSON_AddStringToObject(obj, "kind", TFJ_TFJOB_KIND) ||
	    !(m = cJSON_AddObjectToObject(obj, "metadata")) ||
	    !cJSON_AddStringToObject(m, "name", name) || !cJSON_AddStringToObject(m, "namespace", ns) ||
	    !cJSON_AddStringToObject(m, "uid", "gone") ||
	    !cJSON_AddStringToObject(m, "deletionTimestamp", "1970-01-01T00:00:00Z") ||
	    !cJSON_AddObjectToObject(obj, "spec")) {
		rc = n ? rc : 0;
		goto out;
	}
	if ((rc = tfj_tfjob_from_json(&job, obj)))
		goto out;
	memset(&in, 0, sizeof(in));
	memset(&a, 0, sizeof(a));
	in.job = &job;
	in.pods = (const cJSON *const *)pods;
	in.npods = n;
	in.cfg = &c->pcfg;
	in.now_ms = tfj_clock_unix_ms();
	if (!(rc = tfj_plan_compute(&plan, &in)) && plan.n)
		rc = tfj_apply_plan(&c->ap, &job, key, &plan, &a);
out:
	tfj_plan_free(&plan);
	tfj_tfjob_free(&job);
	cJSON_Delete(obj);
	tfj_informer_free_list(pods, n);
	return rc;
}

/*
 * The job's create-failure record into *cf; 1 when there is one. A record
 * back at 0 failures, with no NetworkPolicy failure, whose condition is gone
 * from the status has done its work and is dropped. The queue never gives
 * one key to two workers, so the copy is the worker's until cf_store.
 */
static int cf_load(struct tfj_controller *c, const char *key, const struct tfj_tfjob *job,
		   struct tfj_createfail *cf)
{
	struct tfj_createfail *r;
	int have = 0;

	memset(cf, 0, sizeof(*cf));
	pthread_mutex_lock(&c->cf_mu);
	r = tfj_strmap_get(&c->cf, key);
	if (r && r->failures == 0 && !r->netpol_failed && !r->podgroup_unavailable &&
	    !job->status.cond[TFJ_COND_REPLICA_FAILURE].present) {
		free(tfj_strmap_del(&c->cf, key));
		r = NULL;
	}
	if (r) {
		*cf = *r;
		have = 1;
	}
	pthread_mutex_unlock(&c->cf_mu);
	return have;
}

/*
 * Keeps the record after apply: a new one when creates failed for good, or
 * when they work while the status still shows ReplicaFailure (written
 * before a restart), so that the next plan removes it.
 */
static void cf_store(struct tfj_controller *c, const char *key, const struct tfj_createfail *cf,
		     const struct tfj_tfjob *job, const struct tfj_apply_result *a)
{
	struct tfj_createfail *r;
	int wanted = cf->failures > 0 || cf->netpol_failed || cf->podgroup_unavailable ||
		     (a->creates_work && job->status.cond[TFJ_COND_REPLICA_FAILURE].present);

	pthread_mutex_lock(&c->cf_mu);
	r = tfj_strmap_get(&c->cf, key);
	if (!r && wanted && c->cf.n < CREATEFAIL_MAX_JOBS &&
	    (r = malloc(sizeof(*r))) && tfj_strmap_put(&c->cf, key, r, NULL)) {
		free(r);
		r = NULL;
	}
	if (r)
		*r = *cf;
	pthread_mutex_unlock(&c->cf_mu);
}

static void observe_duration(struct tfj_controller *c, uint64_t t0)
{
	uint64_t us = (tfj_clock_mono_ns() - t0) / 1000;
	double s = (double)us / 1e6;
	atomic_fetch_add(&c->rec_us_sum, us);
	atomic_fetch_add(&c->rec_count, 1);
	for (size_t i = 0; i < NBUCKETS; i++)
		if (s <= dur_buckets[i])
			atomic_fetch_add(&c->rec_buckets[i], 1);
}

/* GET path's body as text (*out the caller's); errors as tfj_kube_do. */
static int get_text(struct tfj_controller *c, char **out, size_t *len, const char *path)
{
	struct tfj_buf b;
	int rc;

	*out = NULL;
	*len = 0;
	tfj_buf_init(&b, TFJ_TFJOB_MAX_BYTES);
	rc = tfj_kube_do(c->k, TFJ_KUBE_GET, path, NULL, NULL, 0, &b, NULL);
	if (rc == 0 && b.len == 0)
		rc = tfj_err_set(TFJ_EPARSE, "TFJob: empty response");
	if (rc == 0) {
		*len = b.len;
		if (!(*out = tfj_buf_detach(&b)))
			rc = tfj_err_set(TFJ_ENOMEM, "TFJob text");
	}
	tfj_buf_free(&b);
	return rc;
}

int tfj_controller_reconcile(struct tfj_controller *c, const char *key,
			     uint64_t *requeue_after_ms)
{
	char ns[256], path[PATH_MAX_], noted[TFJ_GUARDMEMO_NAME_MAX];
	const char *name = NULL;
	uint64_t t0 = tfj_clock_mono_ns();
	int rc = 0, attempt;

	*requeue_after_ms = 0;
	if ((rc = split_key(key, ns, sizeof(ns), &name)))
		return 0; /* a malformed key can never succeed: drop it */

	for (attempt = 0; attempt < STATUS_ATTEMPTS; attempt++) {
		struct tfj_tfjob job;
		struct tfj_plan plan;
		struct tfj_plan_input in;
		struct tfj_plan_progress prog;
		struct tfj_apply_result a;
		struct tfj_createfail cf;
		cJSON **pods = NULL, **svcs = NULL, **nps = NULL, *pg = NULL;
		char *text = NULL;
		size_t npods = 0, nsvcs = 0, nnps = 0, len = 0;
		int have_cf, have_prog;

		memset(&job, 0, sizeof(job));
		memset(&prog, 0, sizeof(prog));
		memset(&plan, 0, sizeof(plan));
		memset(&a, 0, sizeof(a));
		/*
		 * The job is decoded from its text, once: a tree of it is built
		 * only here, and a spec over the size the operator serves is
		 * never parsed at all (tfjob.h).
		 */
		if (attempt == 0) {
			if (tfj_nsinformer_get_text(&text, &len, c->jobs, ns, name)) {
				int poisoned = 0;
				/* Not cached because it cannot be decoded: say so on it. */
				rc = tfj_poison_write(c->poison, key, &poisoned);
				if (poisoned)
					goto done;
				tfj_expect_forget(c->exp, key);
				tfj_jobmetrics_forget(c->jm, key);
				atomic_fetch_add(&c->rec_skipped, 1);
				/* Deleted; its children are garbage-collected. */
				rc = release_orphans(c, key, ns, name);
				goto done;
			}
			if (!tfj_expect_satisfied(c->exp, key)) {
				/* Our last writes are not in the cache yet: planning now
				 * would repeat them. Their events enqueue the key. */
				free(text);
				atomic_fetch_add(&c->rec_skipped, 1);
				*requeue_after_ms = EXPECT_RECHECK_MS;
				goto done;
			}
		} else {
			/* A status conflict: read the TFJob fresh from the API server. */
			if ((rc = tfj_apipath_obj(path, sizeof(path), TFJ_TFJOB_API_PATH, ns, "tfjobs", name, NULL)))
				goto done;
			rc = get_text(c, &text, &len, path);
			if (rc == TFJ_ENOTFOUND) {
				tfj_jobmetrics_forget(c->jm, key);
				rc = 0;
				goto done;
			}
			if (rc)
				goto done;
		}
		rc = tfj_tfjob_decode(&job, text, len);
		free(text);
		if (rc) {
			tfj_log_warn("undecodable TFJob dropped", "job", key,
				     "error", tfj_err_detail());
			rc = 0;
			goto done;
		}
		/* Filter first: a job deleted or left to another controller gets
		 * no write at all, of its children or of what they would need
		 * (the report CA). */
		if ((job.deleting && !c->pcfg.kueue_pod_groups) ||
		    tfj_plan_managed_elsewhere(&job, &c->pcfg)) {
			tfj_jobmetrics_forget(c->jm, key); /* not ours to show by phase */
			tfj_tfjob_free(&job);
			atomic_fetch_add(&c->rec_skipped, 1);
			goto done;
		}
		/*
		 * The reports before the pods: a pod this plan sees was still cached
		 * after the snapshot, and a pod's record is forgotten only once the
		 * cache dropped the pod (on_pod), so the snapshot has the record of
		 * every pod the plan sees, an Exit it is about to act on included.
		 * Without a snapshot the plan runs as if the channel were off.
		 */
		have_prog = 0;
		if (c->prog) {
			tfj_progress_limit(c->prog, job.uid, job.total_replicas);
			have_prog = tfj_progress_snapshot(c->prog, &prog, job.uid) == 0;
		}
		if ((rc = owned(c->pods, &job, &pods, &npods)) ||
		    (rc = owned(c->svcs, &job, &svcs, &nsvcs)) ||
		    (rc = owned(c->netpols, &job, &nps, &nnps))) {
			tfj_informer_free_list(pods, npods);
			tfj_informer_free_list(svcs, nsvcs);
			tfj_informer_free_list(nps, nnps);
			tfj_progress_release(&prog);
			tfj_tfjob_free(&job);
			goto done;
		}
		memset(&in, 0, sizeof(in));
		if (c->podgroups) {
			/* By name, whoever owns it: one an earlier job of the name
			 * left must go before this job's (plan.h). */
			pg = tfj_nsinformer_get(c->podgroups, job.ns, job.name);
			in.podgroup = pg;
			in.podgroup_api_absent = tfj_nsinformer_absent(c->podgroups, job.ns);
		}
		in.job = &job;
		in.pods = (const cJSON *const *)pods;
		in.npods = npods;
		in.services = (const cJSON *const *)svcs;
		in.nservices = nsvcs;
		in.netpols = (const cJSON *const *)nps;
		in.nnetpols = nnps;
		/* The report CA is the planner's to ask for (plan.h's PUBLISH_CA). */
		in.report_ca_current = c->capub ? tfj_capublish_current(c->capub, job.ns) : 1;
		in.now_ms = tfj_clock_unix_ms();
		/* Known: the memo's fresh note is of the name the status records. */
		in.ps_secret_known = tfj_guardmemo_secret(c->guards, noted, sizeof(noted), job.uid,
							  in.now_ms) &&
				     job.status.ps_secret[0] && !strcmp(noted, job.status.ps_secret);
		in.cfg = &c->pcfg;
		have_cf = cf_load(c, key, &job, &cf);
		in.create_failure = have_cf ? &cf : NULL;
		in.progress = have_prog ? &prog : NULL;
		rc = tfj_plan_compute(&plan, &in);
		if (rc) {
			tfj_log_error("plan failed", "job", key, "error", tfj_err_detail());
		} else {
			a.create_failure = &cf;
			rc = tfj_apply_plan(&c->ap, &job, key, &plan, &a);
			cf_store(c, key, &cf, &job, &a);
			/* A finished job creates no pod again: its memo entry can go. */
			if (!rc && plan.finished)
				tfj_guardmemo_forget(c->guards, job.uid);
			if (!rc && !job.deleting)
				tfj_jobmetrics_phase(c->jm, key, plan.phase);
			/* The status now holds what the agents told: ack it to them. */
			if (!rc && in.progress && plan.progress_durable)
				tfj_progress_persisted(c->prog, job.uid, prog.seq);
			if (plan.n)
				tfj_log_debug("reconciled", "job", key, "phase",
					      plan.phase ? plan.phase : "");
			*requeue_after_ms = a.requeue_ms;
		}
		tfj_plan_free(&plan);
		tfj_progress_release(&prog);
		tfj_informer_free_list(pods, npods);
		tfj_informer_free_list(svcs, nsvcs);
		tfj_informer_free_list(nps, nnps);
		cJSON_Delete(pg);
		tfj_tfjob_free(&job);
		if (rc == TFJ_ECONFLICT && a.status_conflict)
			continue;
		break;
	}
done:
	observe_duration(c, t0);
	if (rc)
		atomic_fetch_add(&c->rec_err, 1);
	else
		atomic_fetch_add(&c->rec_ok, 1);
	if (rc == 0 && *requeue_after_ms)
		atomic_fetch_add(&c->rec_requeued, 1);
	return rc;
}

static int worker_fn(void *ud, const char *key, uint64_t *after)
{
	return tfj_controller_reconcile(ud, key, after);
}

/* ---- lifecycle ---- */

static char *dup_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

/*
 * The informers of one collection (API root `group`, resource `res`) in the
 * controller's namespaces (one per namespace, nsinformer.h), with the
 * options io shares between the three.
 */
static int new_informer(struct tfj_nsinformer **out, struct tfj_controller *c,
			struct tfj_informer_opts *io, const char *group, const char *res,
			tfj_informer_fn fn, tfj_informer_transform_fn transform)
{
	io->fn = fn;
	io->transform = transform;
	return tfj_nsinformer_new(out, c->k, io, group, res, c->ns);
}

int tfj_controller_new(struct tfj_controller **out, struct tfj_kube *k,
		       const struct tfj_controller_opts *o)
{
	struct tfj_controller_opts def = { 0 };
	struct tfj_queue_opts qo = { 5, 300000, 10, 100 };
	struct tfj_informer_opts io;
	struct tfj_events_opts eo = { 0 };
	struct tfj_controller *c;
	int rc;

	*out = NULL;
	if (!o)
		o = &def;
	c = calloc(1, sizeof(*c));
	if (!c)
		return tfj_err_set(TFJ_ENOMEM, "controller");
	c->k = k;
	pthread_mutex_init(&c->cf_mu, NULL);
	c->ns = dup_or_null(o->namespace);
	c->domain = dup_or_null(o->cluster_domain);
	c->opname = dup_or_null(o->operator_name);
	c->instance = dup_or_null(o->instance);
	c->workers = o->workers > 0 ? o->workers : 4;
	c->pcfg.cluster_domain = c->domain;
	c->pcfg.operator_name = c->opname;
	c->report_addr = dup_or_null(o->report_addr);
	c->report_aud = dup_or_null(o->report_audience);
	c->pcfg.report_addr = c->report_addr;
	c->pcfg.report_audience = c->report_aud;
	c->pcfg.report_insecure = o->report_insecure;
	c->report_ca_cm = dup_or_null(o->report_ca_configmap);
	c->pcfg.report_ca_configmap = c->report_ca_cm;
	c->agent_image = dup_or_null(o->agent_image);
	c->pcfg.agent_image = c->agent_image;
	c->pcfg.agent_inject_default = o->agent_inject_default;
	c->pcfg.kueue_pod_groups = o->kueue_pod_groups;
	c->pcfg.lost_pod_timeout_s = o->lost_pod_timeout_s;
	c->manager = dup_or_null(o->manager);
	c->pcfg.manager = c->manager;
	c->gang_name = dup_or_null(o->gang_scheduler);
	if ((rc = tfj_podgroup_parse(&c->gang, c->gang_name))) {
		tfj_controller_free(c);
		return rc;
	}
	c->pcfg.gang = c->gang.api != TFJ_PODGROUP_OFF ? &c->gang : NULL;
	c->pcfg.netpol = 1;
	c->pcfg.ps_secret = 1;
	if (o->queue_qps > 0)
		qo.qps = o->queue_qps;
	if (o->queue_burst > 0)
		qo.burst = o->queue_burst;
	eo.instance = c->instance;
	if ((rc = tfj_queue_new(&c->q, &qo)) || (rc = tfj_expect_new(&c->exp, 0)) ||
	    (rc = tfj_events_new(&c->events, o->event_kube ? o->event_kube : k, &eo)) ||
	    (rc = tfj_guardmemo_new(&c->guards, 0, o->guard_recheck_ms)) ||
	    (rc = tfj_poison_new(&c->poison, k, c->events, c->manager)) ||
	    (rc = tfj_jobmetrics_new(&c->jm, 0)))
		goto out;
	c->stale_ms = (o->informer_stale_s > 0 ? o->informer_stale_s
					       : TFJ_CONTROLLER_STALE_DEFAULT_S) * 1000;
	c->ap.k = k;
	c->ap.exp = c->exp;
	c->ap.events = c->events;
	c->ap.guards = c->guards;
	c->ap.jm = c->jm;
	c->ap.operator_name = c->opname;
	c->ap.cluster_domain = c->domain;
	c->ap.gang = c->pcfg.gang;

	memset(&io, 0, sizeof(io));
	io.watch_timeout_s = o->watch_timeout_s;
	io.ud = c;
	io.reject = on_job_reject;
	if ((rc = new_informer(&c->jobs, c, &io, TFJ_TFJOB_API_PATH, "tfjobs", on_job,
			       tfj_slim_tfjob)))
		goto out;
	io.reject = NULL; /* a rejected pod or service is counted and logged only */
	/* Children are selected by label so the caches hold only our pods/services. */
	io.label_selector = TFJ_LABEL_JOB_NAME;
	io.index_label = TFJ_LABEL_JOB_NAME;
	if ((rc = new_informer(&c->pods, c, &io, TFJ_APIPATH_CORE, "pods", on_pod, tfj_slim_pod)))
		goto out;
	if ((rc = new_informer(&c->svcs, c, &io, TFJ_APIPATH_CORE, "services", on_svc,
			       tfj_slim_service)))
		goto out;
	rc = new_informer(&c->netpols, c, &io, TFJ_NETPOL_API_PATH, "networkpolicies", on_netpol,
			  tfj_slim_netpol);
	if (rc == 0 && c->pcfg.gang) {
		/* PodGroups carry no label of ours (Kubeflow's have none either),
		 * so all of them are cached, slim (metadata and spec). Without the
		 * CRD the collection is empty and absent, not an error. */
		io.label_selector = NULL;
		io.index_label = NULL;
		io.absent_ok = 1;
		rc = new_informer(&c->podgroups, c, &io,
				  tfj_podgroup_api_path(c->pcfg.gang->api), "podgroups",
				  on_podgroup, tfj_slim_podgroup);
	}
out:
	if (rc) {
		tfj_controller_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

int tfj_controller_start(struct tfj_controller *c, long sync_timeout_ms)
{
	int rc;

	if (c->running)
		return 0;
	if (!c->started) {
		if ((rc = tfj_nsinformer_start(c->pods)) || (rc = tfj_nsinformer_start(c->svcs)) ||
		    (rc = tfj_nsinformer_start(c->netpols)) ||
		    (c->podgroups && (rc = tfj_nsinformer_start(c->podgroups))) ||
		    (rc = tfj_nsinformer_start(c->jobs)))
			return rc;
		c->started = 1;
	}
	/* Children first: a TFJob reconciled before its pods are cached would be
	 * planned as if it had none. Workers start only after all four synced;
	 * on TFJ_ETIMEOUT the caller simply calls start again. */
	if ((rc = tfj_nsinformer_wait_synced(c->pods, sync_timeout_ms)) ||
	    (rc = tfj_nsinformer_wait_synced(c->svcs, sync_timeout_ms)) ||
	    (rc = tfj_nsinformer_wait_synced(c->netpols, sync_timeout_ms)) ||
	    (c->podgroups && (rc = tfj_nsinformer_wait_synced(c->podgroups, sync_timeout_ms))) ||
	    (rc = tfj_nsinformer_wait_synced(c->jobs, sync_timeout_ms)))
		return rc;
	if ((rc = tfj_queue_run(c->q, c->workers, worker_fn, c)))
		return rc;
	c->running = 1;
	tfj_log_info("caches synced; workers started");
	return 0;
}

void tfj_controller_stop(struct tfj_controller *c)
{
	if (!c)
		return;
	if (c->q)
		tfj_queue_stop(c->q);
	tfj_nsinformer_stop(c->jobs);
	tfj_nsinformer_stop(c->pods);
	tfj_nsinformer_stop(c->svcs);
	tfj_nsinformer_stop(c->netpols);
	if (c->podgroups)
		tfj_nsinformer_stop(c->podgroups);
	c->started = 0;
	c->running = 0;
}

void tfj_controller_free(struct tfj_controller *c)
{
	if (!c)
		return;
	tfj_controller_stop(c);
	/* After the workers: nothing queues events any more. */
	tfj_events_free(c->events);
	tfj_poison_free(c->poison);
	tfj_nsinformer_free(c->jobs);
	tfj_nsinformer_free(c->pods);
	tfj_nsinformer_free(c->svcs);
	tfj_nsinformer_free(c->netpols);
	tfj_nsinformer_free(c->podgroups);
	tfj_guardmemo_free(c->guards); /* after the informers: on_job forgets in it */
	tfj_queue_free(c->q);
	tfj_jobmetrics_free(c->jm); /* after the workers, which count in it */
	tfj_expect_free(c->exp);
	tfj_strmap_free(&c->cf, free);
	pthread_mutex_destroy(&c->cf_mu);
	free(c->ns);
	free(c->domain);
	free(c->opname);
	free(c->instance);
	free(c->report_addr);
	free(c->report_aud);
	free(c->agent_image);
	free(c->report_ca_cm);
	free(c->manager);
	free(c->gang_name);
	free(c);
}

void tfj_controller_set_capublish(struct tfj_controller *c, struct tfj_capublish *p)
{
	c->capub = p;
	c->ap.capub = p;
	c->pcfg.report_ca = p != NULL;
}

void tfj_controller_set_progress(struct tfj_controller *c, struct tfj_progress *p)
{
	c->prog = p;
}

int tfj_controller_get_job_text(char **out, size_t *len, struct tfj_controller *c,
				const char *ns, const char *name)
{
	return tfj_nsinformer_get_text(out, len, c->jobs, ns, name);
}

cJSON *tfj_controller_get_pod(struct tfj_controller *c, const char *ns, const char *name)
{
	return tfj_nsinformer_get(c->pods, ns, name);
}

void tfj_controller_enqueue(struct tfj_controller *c, const char *key, uint64_t delay_ms)
{
	if (delay_ms)
		tfj_queue_add_after(c->q, key, delay_ms);
	else
		tfj_queue_add(c->q, key);
}

/* The informers there are (podgroups only with gang scheduling) into infs; their number. */
static size_t informers(const struct tfj_controller *c, struct tfj_nsinformer *infs[5])
{
	size_t n = 0;

	infs[n++] = c->jobs;
	infs[n++] = c->pods;
	infs[n++] = c->svcs;
	infs[n++] = c->netpols;
	if (c->podgroups)
		infs[n++] = c->podgroups;
	return n;
}

int tfj_controller_ready(struct tfj_controller *c)
{
	struct tfj_nsinformer *infs[5];
	size_t n;

	if (!c || !c->jobs)
		return 0;
	n = informers(c, infs);
	for (size_t i = 0; i < n; i++) {
		int64_t idle = tfj_nsinformer_idle_ms(infs[i]);
		if (!tfj_nsinformer_synced(infs[i]) || idle < 0 || idle > c->stale_ms)
			return 0;
	}
	return 1;
}

int tfj_controller_dump(struct tfj_controller *c, struct tfj_buf *out)
{
	struct tfj_nsinformer *infs[5];
	size_t n = informers(c, infs);
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++) {
		struct tfj_buf one;
		const char *p, *nl;

		tfj_buf_init(&one, out->max);
		rc = tfj_nsinformer_dump(infs[i], &one);
		/* Each "key rv" line prefixed with the informer's name. */
		for (p = one.ptr; rc == 0 && p && p < one.ptr + one.len; p = nl + 1) {
			nl = memchr(p, '\n', (size_t)(one.ptr + one.len - p));
			if (!nl)
				break;
			rc = tfj_buf_printf(out, "%s %.*s\n", tfj_nsinformer_name(infs[i]),
					    (int)(nl - p), p);
		}
		tfj_buf_free(&one);
	}
	return rc;
}

/* ---- metrics ---- */

#define LD(x) ((unsigned long long)atomic_load(&(x)))

int tfj_controller_flush_events(struct tfj_controller *c, long timeout_ms)
{
	return tfj_events_flush(c->events, timeout_ms);
}

int tfj_controller_idle(struct tfj_controller *c, uint64_t *work)
{
	struct tfj_queue_stats qs;

	tfj_queue_stats(c->q, &qs);
	*work = qs.adds + qs.work_count;
	return qs.depth == 0 && qs.processing == 0;
}

int tfj_controller_metrics(struct tfj_controller *c, struct tfj_buf *out)
{
	struct tfj_queue_stats qs;
	struct tfj_nsinformer *infs[5];
	size_t n = informers(c, infs);
	int rc = 0;

	tfj_queue_stats(c->q, &qs);
	rc |= tfj_apply_metrics(&c->ap, out);
	rc |= tfj_buf_printf(out,
		"# HELP tfjob_operator_reconcile_total Reconciles by result.\n"
		"# TYPE tfjob_operator_reconcile_total counter\n"
		"tfjob_operator_reconcile_total{result=\"success\"} %llu\n"
		"tfjob_operator_reconcile_total{result=\"error\"} %llu\n"
		"tfjob_operator_reconcile_total{result=\"skipped\"} %llu\n"
		"tfjob_operator_reconcile_total{result=\"requeue_after\"} %llu\n"
		"# HELP tfjob_operator_reconcile_errors_total Reconciles that failed.\n"
		"# TYPE tfjob_operator_reconcile_errors_total counter\n"
		"tfjob_operator_reconcile_errors_total %llu\n",
		LD(c->rec_ok), LD(c->rec_err), LD(c->rec_skipped), LD(c->rec_requeued),
		LD(c->rec_err));
	rc |= tfj_buf_puts(out,
		"# HELP tfjob_operator_reconcile_duration_seconds Time spent in one reconcile.\n"
		"# TYPE tfjob_operator_reconcile_duration_seconds histogram\n");
	for (size_t i = 0; i < NBUCKETS; i++)
		rc |= tfj_buf_printf(out,
			"tfjob_operator_reconcile_duration_seconds_bucket{le=\"%g\"} %llu\n",
			dur_buckets[i], LD(c->rec_buckets[i]));
	rc |= tfj_buf_printf(out,
		"tfjob_operator_reconcile_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
		"tfjob_operator_reconcile_duration_seconds_sum %.6f\n"
		"tfjob_operator_reconcile_duration_seconds_count %llu\n",
		LD(c->rec_count), (double)LD(c->rec_us_sum) / 1e6, LD(c->rec_count));
	rc |= tfj_buf_printf(out,
		"# HELP tfjob_operator_workqueue_depth Keys waiting for a worker.\n"
		"# TYPE tfjob_operator_workqueue_depth gauge\n"
		"tfjob_operator_workqueue_depth %zu\n"
		"# HELP tfjob_operator_workqueue_delayed Keys waiting for a delay.\n"
		"# TYPE tfjob_operator_workqueue_delayed gauge\n"
		"tfjob_operator_workqueue_delayed %zu\n"
		"# HELP tfjob_operator_workqueue_adds_total Keys added.\n"
		"# TYPE tfjob_operator_workqueue_adds_total counter\n"
		"tfjob_operator_workqueue_adds_total %llu\n"
		"# HELP tfjob_operator_workqueue_retries_total Rate-limited re-adds.\n"
		"# TYPE tfjob_operator_workqueue_retries_total counter\n"
		"tfjob_operator_workqueue_retries_total %llu\n"
		"# HELP tfjob_operator_workqueue_latency_seconds Time keys waited in the queue.\n"
		"# TYPE tfjob_operator_workqueue_latency_seconds summary\n"
		"tfjob_operator_workqueue_latency_seconds_sum %.6f\n"
		"tfjob_operator_workqueue_latency_seconds_count %llu\n",
		qs.depth, qs.delayed, (unsigned long long)qs.adds, (unsigned long long)qs.retries,
		(double)qs.wait_us_sum / 1e6, (unsigned long long)qs.wait_count);
	{
		static const char *fam[4][3] = {
			{ "informer_objects", "gauge", "Objects in an informer cache." },
			{ "informer_cache_bytes", "gauge",
			  "Bytes an informer cache holds (the trimmed objects' JSON text)." },
			{ "informer_relists_total", "counter", "Relists forced by 410 or bad events." },
			{ "informer_errors_total", "counter", "Failed LIST or WATCH calls." },
		};
		for (int f = 0; f < 4; f++) {
			rc |= tfj_buf_printf(out, "# HELP tfjob_operator_%s %s\n"
					     "# TYPE tfjob_operator_%s %s\n",
					     fam[f][0], fam[f][2], fam[f][0], fam[f][1]);
			for (size_t i = 0; i < n; i++) {
				struct tfj_informer_stats s;
				unsigned long long v;
				tfj_nsinformer_stats(infs[i], &s);
				v = f == 0 ? s.size : f == 1 ? s.bytes : f == 2 ? s.relists : s.errors;
				rc |= tfj_buf_printf(out, "tfjob_operator_%s{informer=\"%s\"} %llu\n",
						     fam[f][0], tfj_nsinformer_name(infs[i]), v);
			}
		}
	}
	rc |= tfj_buf_puts(out, "# HELP tfjob_operator_informer_rejected_total Objects an informer "
			   "could not decode (skipped), by reason.\n"
			   "# TYPE tfjob_operator_informer_rejected_total counter\n");
	for (int i = 0; i < 3; i++) {
		struct tfj_informer_stats s;
		tfj_nsinformer_stats(infs[i], &s);
		for (int r = 1; r < TFJ_OBJDECODE_NREASONS; r++)
			rc |= tfj_buf_printf(out, "tfjob_operator_informer_rejected_total"
					     "{informer=\"%s\",reason=\"%s\"} %llu\n",
					     tfj_nsinformer_name(infs[i]),
					     tfj_objdecode_reason_name((enum tfj_objdecode_reason)r),
					     (unsigned long long)s.rejected[r]);
	}
	rc |= tfj_buf_puts(out, "# HELP tfjob_operator_informer_idle_seconds Time since an "
			   "informer's LIST/WATCH last worked (-1: never).\n"
			   "# TYPE tfjob_operator_informer_idle_seconds gauge\n");
	for (int i = 0; i < 3; i++) {
		int64_t idle = tfj_nsinformer_idle_ms(infs[i]);
		rc |= tfj_buf_printf(out, "tfjob_operator_informer_idle_seconds{informer=\"%s\"} "
				     "%.3f\n", tfj_nsinformer_name(infs[i]),
				     idle < 0 ? -1.0 : (double)idle / 1000.0);
	}
	rc |= tfj_buf_printf(out, "# HELP tfjob_operator_invalid_spec_total TFJobs marked Failed "
			     "because they could not be decoded.\n"
			     "# TYPE tfjob_operator_invalid_spec_total counter\n"
			     "tfjob_operator_invalid_spec_total %llu\n",
			     (unsigned long long)tfj_poison_written(c->poison));
	return rc ? TFJ_ETOOBIG : 0;
}
