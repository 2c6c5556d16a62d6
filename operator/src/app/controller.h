/*
 * controller.h - the TFJob controller: informers, work queue, reconcile.
 *
 * Three informers (TFJobs; pods and services labelled
 * training.kubeflow.org/job-name) feed a work queue of TFJob keys. A worker
 * reconciles one key at a time:
 *
 *   1. read the TFJob and its owned pods/services from the caches;
 *   2. skip if gone or being deleted, wait if expectations are pending;
 *   3. plan = tfj_plan_compute(job, pods, services, now)  (pure, plan.h);
 *   4. apply the plan's actions in order. This is the only code that writes
 *      children: 409 AlreadyExists on create and 404 (or a uid-precondition
 *      409) on delete count as success; every write is recorded in the
 *      expectations first so a stale cache never repeats it;
 *   5. the status is written through /status (PUT with resourceVersion) only
 *      when the plan says it changed; a 409 retries with a fresh read of the
 *      TFJob from the API server (up to 3 attempts);
 *   6. requeue after the plan's nearest timer.
 *
 * Ownership: the controller borrows the kube clients (they must outlive the
 * controller) and owns its informers, queue, expectations and the event
 * recorder (events.h), whose thread posts what the reconciles queue.
 */
#ifndef TFJ_CONTROLLER_H
#define TFJ_CONTROLLER_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include <tfj/buf.h>

#include "kube/kube.h"

struct tfj_controller_opts {
	const char *namespace;       /* watch only these namespaces (comma-separated list,
					one informer each, nsinformer.h); NULL/"" = all */
	int workers;                 /* reconcile threads (default 4) */
	const char *cluster_domain;  /* for TF_CONFIG hosts; NULL = short form */
	const char *operator_name;   /* label value; NULL = planner default */
	const char *instance;        /* reportingInstance of events (hostname); may be NULL */
	double queue_qps;            /* global retry rate (default 10) */
	int queue_burst;             /* default 100 */
	long watch_timeout_s;        /* informer watch length (default 300) */
	const char *report_addr;     /* TFJOB_REPORT_ADDR injected into pods; NULL = channel off */
	const char *report_audience; /* token audience for the pods' projected token */
	int report_insecure;         /* plaintext report channel: pods get no CA */
	const char *report_ca_configmap; /* the CA ConfigMap pods mount; NULL =
					  * <operator name>-report-ca (podspec.h) */
	const char *manager;         /* runPolicy.managedBy we own; NULL = TFJ_TFJOB_MANAGER */
	const char *gang_scheduler;  /* --gang-scheduler-name (podgroup.h); NULL/"" = off */
	const char *agent_image;     /* image of the injected agent; NULL = none */
	int agent_inject_default;    /* inject into jobs without the agent annotation */
	int kueue_pod_groups;        /* Kueue pod-group mode (tfjob/kueue.h) */
	long lost_pod_timeout_s;     /* plan.h's lost_pod_timeout_s; 0 = never force-delete */
	struct tfj_kube *event_kube; /* client for Events, with its own rate (events.h); NULL = k */
	long guard_recheck_ms;       /* trust in a job's known Secret and NetworkPolicy
					(app/guardmemo.h); 0 = the default */
	long informer_stale_s;       /* /readyz bound on an informer's last working LIST/WATCH
					(default TFJ_CONTROLLER_STALE_DEFAULT_S) */
};

/*
 * An informer whose LIST/WATCH has not worked for this long makes /readyz
 * fail. Longer than the informer's longest retry backoff (30 s) twice over,
 * so one failed reconnect or a restart of the API server that takes under
 * two minutes leaves the operator ready; an open watch counts as working
 * about once a second, so a quiet cluster never trips it.
 */
#define TFJ_CONTROLLER_STALE_DEFAULT_S 120

struct tfj_progress;

struct tfj_controller;

int tfj_controller_new(struct tfj_controller **out, struct tfj_kube *k,
		       const struct tfj_controller_opts *o);
/*
 * Starts the informers (first call) and waits up to sync_timeout_ms for
 * them to sync, then starts the workers. TFJ_ETIMEOUT when not synced yet:
 * call again. 0 once the workers run (further calls are no-ops).
 */
int tfj_controller_start(struct tfj_controller *c, long sync_timeout_ms);
/* Stops workers and informers; safe to call twice. */
void tfj_controller_stop(struct tfj_controller *c);
void tfj_controller_free(struct tfj_controller *c);

/*
 * 1 when all informers have synced and none has gone without a working
 * LIST/WATCH for longer than the staleness bound (used by /readyz).
 */
int tfj_controller_ready(struct tfj_controller *c);

/*
 * Appends every informer's cache as "<informer> <key> <resourceVersion>"
 * lines sorted by key (the /debug/informers endpoint; e2e compares it with
 * a fresh LIST).
 */
int tfj_controller_dump(struct tfj_controller *c, struct tfj_buf *out);

/*
 * One reconcile of key "ns/name" (what the workers call). 0 on success with
 * *requeue_after_ms the nearest timer (0 = none); negative to retry with
 * backoff. Exposed for tests.
 */
int tfj_controller_reconcile(struct tfj_controller *c, const char *key,
			     uint64_t *requeue_after_ms);

/*
 * The report channel's store (progress.h), read by every reconcile. Set it
 * before tfj_controller_start; the controller borrows it.
 */
void tfj_controller_set_progress(struct tfj_controller *c, struct tfj_progress *p);
/*
 * The report channel's CA publisher: each reconcile of an unfinished job
 * first makes sure the job's namespace holds the CA its pods mount (and is
 * retried with backoff until it does). Set before tfj_controller_start;
 * borrowed.
 */
struct tfj_capublish;
void tfj_controller_set_capublish(struct tfj_controller *c, struct tfj_capublish *p);

/* A copy of a cached pod (NULL when absent); the caller deletes it. */
cJSON *tfj_controller_get_pod(struct tfj_controller *c, const char *ns, const char *name);
/*
 * The cached TFJob as its compact JSON text (the caller frees *out), for
 * readers that want a few fields without a tree of the whole object.
 * TFJ_ENOTFOUND when not cached.
 */
int tfj_controller_get_job_text(char **out, size_t *len, struct tfj_controller *c,
				const char *ns, const char *name);

/* Reconciles key "ns/name" after delay_ms (0: now). */
/*
 * For the heap trim (heaptrim.h): *work gets a count that grows with every
 * key added to or processed by the work queue. Returns 1 when no key is
 * queued or being processed (keys waiting for a delay do not count), else 0.
 */
int tfj_controller_idle(struct tfj_controller *c, uint64_t *work);
void tfj_controller_enqueue(struct tfj_controller *c, const char *key, uint64_t delay_ms);

/* Waits until the events queued so far are posted (tests). 0 or TFJ_ETIMEOUT. */
int tfj_controller_flush_events(struct tfj_controller *c, long timeout_ms);

/* Appends Prometheus text: jobs, reconciles, queue and informer gauges. */
int tfj_controller_metrics(struct tfj_controller *c, struct tfj_buf *out);

/*
 * The TFJob key ("ns/name") that controls a child object (its controller
 * ownerReference of kind TFJob) into out; TFJ_ENOTFOUND if none. Pure.
 */
int tfj_controller_owner_key(char *out, size_t outlen, const void *child_json);

#endif
