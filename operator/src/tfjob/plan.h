/*
 * plan.h - the desired-state planner: THE pure function of the operator.
 *
 *   plan = f(TFJob, observed pods, observed services, now, config)
 *
 * It reads nothing but its arguments and writes nothing but the plan: no
 * clock, no API calls, no globals. The same inputs give the same plan, byte
 * for byte, so a reconcile can run any number of times from any state.
 * Expectations (creates/deletes not yet visible in the cache) are the
 * caller's job: plan only once the cache has caught up.
 *
 * How the caller (controller.c) applies a plan:
 *  - Actions are in apply order: WRITE_STATUS first (it records completed
 *    indexes and restart counts that later deletes would otherwise lose),
 *    then job-level EVENTs, deletes, the PodGroup's delete, create or
 *    update, the report CA, the ps Secret, the NetworkPolicy's create or
 *    update, service creates, pod creates, DELETE_JOB, and REQUEUE last.
 *  - If the WRITE_STATUS fails (conflict or anything else), stop: skip the
 *    remaining actions and requeue. The next plan is computed from fresh
 *    state.
 *  - CREATE_*: build the object with tfj_plan_child_body just before it is
 *    sent, POST it to the namespace and free it; 409 AlreadyExists is
 *    success. A plan holds no child bodies: a pod is a full copy of its
 *    template plus a TF_CONFIG naming the whole cluster, so building them
 *    all at once would cost the plan's creates times that.
 *  - DELETE_*: DELETE `name` with preconditions.uid = `uid` (so a pod that
 *    was already recreated under the same name is never deleted by mistake),
 *    propagationPolicy Background; 404 NotFound and 409 Conflict (uid
 *    mismatch) are success.
 *  - Each create/delete carries an event (ev_type/ev_reason/ev_message) to
 *    emit when the request succeeded; on failure emit a Warning
 *    FailedCreatePod/FailedDeletePod etc. of your own.
 *  - WRITE_STATUS: `body` is the complete new .status object; write it via
 *    the status subresource.
 *  - CREATE_NETPOL: POST the body tfj_plan_child_body builds (409: ours
 *    is success, adopt.h). UPDATE_NETPOL: merge-patch the policy `name`
 *    to that body's spec. Neither holds back the pod creates when it
 *    fails: record the failure (createfail.h's tfj_createfail_netpol) for
 *    the next plan's NetworkPolicyFailure condition, emit a Warning
 *    FailedCreateNetworkPolicy / FailedUpdateNetworkPolicy, and go on.
 * *  - CREATE_PODGROUP: POST `body` (the whole PodGroup, small, so the plan
 *    holds it) to the PodGroup API (gang scheduling); 409 is success (the
 *    cache shows it next). A 404 means the API is not served: a Warning
 *    PodGroupUnavailable event, record it (createfail.h's
 *    tfj_createfail_podgroup: the next plans block the job) and create no
 *    pod of this plan; any other failure: a Warning FailedCreatePodGroup
 *    and no pod of this plan either (no pod of a gang without its group).
 *    UPDATE_PODGROUP: replace the spec of PodGroup `name` (uid `uid`) with
 *    `body` (the spec); 404 and 409 are no failure. DELETE_PODGROUP: as
 *    DELETE_* below. A plan that deletes a PodGroup left by an earlier job
 *    of the same name creates no pod: the next plan, once the cache saw it
 *    go, creates the job's own.
 *  - PUBLISH_CA: bring the namespace's report CA ConfigMap up to date
 *    (report/capublish.h); when that fails, create no pod of this plan
 *    (they mount it) and retry with backoff.
 *  - CREATE_SECRET: the job's ps Secret (tfjob/pssecret.h), body built with
 *    fresh randomness just before the POST. The plan's ps_secret names
 *    it: POST it under that name (a recheck: 201 made it again, 409 is
 *    success). ps_secret "": POST it with generateName, and record the
 *    name the API server gave it in the TFJob's status.psSecretName (a
 *    status write as WRITE_STATUS's, of the status with that field set)
 *    before any pod: this plan's pods mount that recorded name (pass it to
 *    tfj_plan_child_body).
 *    When it fails, create no pod of this plan (they mount it).
 *  - EVENT: emit on the TFJob as is; with ev_once only when the same event
 *    (type, reason, message) was not emitted before.
 *  - DELETE_POD with force: as DELETE_* with gracePeriodSeconds 0 (the
 *    pod's node is presumed lost, planlost.h).
 *  - DELETE_JOB: TTL expired; DELETE the TFJob with preconditions.uid.
 *  - RELEASE_POD: take Kueue's finalizer off pod `name` (uid `uid`), found
 *    at metadata.finalizers[`index`] (tfjob/plankueue.h): a JSON patch
 *    that tests the uid and the entry before it removes it; 404 and a
 *    failed test are no failure (the next plan looks again).
 *  - REQUEUE: add the key back after `after_ms` (the nearest timer:
 *    activeDeadlineSeconds or ttlSecondsAfterFinished).
 *
 * Ownership: the plan owns every action and every body; tfj_plan_free()
 * releases them. The input is only read; the plan points at its job until
 * the plan is freed (tfj_plan_child_body reads it).
 */
#ifndef TFJ_PLAN_H
#define TFJ_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include <tfj/progrec.h>

#include "tfjob/createfail.h"
#include "tfjob/podspec.h"
#include "tfjob/progeta.h"
#include "tfjob/tfjob.h"

struct tfj_gang;

/* Most actions in one plan; a plan that would need more is an error. */
#define TFJ_PLAN_MAX_ACTIONS (8 * TFJ_TFJOB_MAX_REPLICAS + 64)

enum tfj_action_kind {
	TFJ_ACT_WRITE_STATUS = 0,
	TFJ_ACT_EVENT,
	TFJ_ACT_DELETE_POD,
	TFJ_ACT_DELETE_SERVICE,
	/* Gang scheduling: the job's PodGroup, before any pod (podgroup.h). */
	TFJ_ACT_DELETE_PODGROUP,
	TFJ_ACT_CREATE_PODGROUP,
	TFJ_ACT_UPDATE_PODGROUP,
	TFJ_ACT_PUBLISH_CA,
	TFJ_ACT_CREATE_SECRET,
	TFJ_ACT_CREATE_NETPOL,
	TFJ_ACT_UPDATE_NETPOL,
	TFJ_ACT_CREATE_SERVICE,
	TFJ_ACT_CREATE_POD,
	TFJ_ACT_DELETE_JOB,
	TFJ_ACT_RELEASE_POD,
	TFJ_ACT_REQUEUE
};

/* Why a child is deleted (for the event, logs and metrics). */
enum tfj_delete_reason {
	TFJ_DEL_NONE = 0,
	TFJ_DEL_RESTART,     /* failed and the restart policy restarts it */
	TFJ_DEL_DISRUPTION,  /* evicted/preempted/node lost: recreated, not counted */
	TFJ_DEL_CLEANUP,     /* job finished (cleanPodPolicy) or child not wanted */
	TFJ_DEL_SUSPEND      /* runPolicy.suspend */
};

struct tfj_action {
	enum tfj_action_kind kind;
	enum tfj_delete_reason reason;  /* DELETE_POD / DELETE_SERVICE */
	int exit_code;                  /* DELETE_POD: the failed tensorflow container's exit
					 * code, -1 when there is none (hung, still running) */
	char name[64];                  /* child or job name ("" for status/event/requeue) */
	char uid[128];                  /* delete precondition ("" when unknown) */
	int rtype, index;               /* CREATE_*: the replica (enum tfj_rtype, index) */
	cJSON *body;                    /* WRITE_STATUS: .status; CREATE_PODGROUP: the
					 * PodGroup; UPDATE_PODGROUP: its spec; NULL for the
					 * other CREATE_*, whose object tfj_plan_child_body
					 * builds when it is sent */
	const char *ev_type;            /* "Normal" or "Warning"; NULL if no event */
	const char *ev_reason;          /* static string, e.g. "SuccessfulCreatePod" */
	char *ev_message;               /* owned */
	int ev_once;                    /* EVENT: post it only when the same event was not
					 * posted before (the planner repeats it every plan
					 * while its cause lasts; planlost.h) */
	int force;                      /* DELETE_POD: gracePeriodSeconds 0 (planlost.h) */
	int64_t after_ms;               /* REQUEUE */
};

struct tfj_plan {
	struct tfj_action *actions;
	size_t n;
	size_t cap;
	/* Summary for logs and metrics. */
	int finished;                   /* the job is Succeeded or Failed after this plan */
	const char *phase;              /* status.phase after this plan (static string) */
	/*
	 * The status this plan leaves (once applied) holds everything the
	 * progress input told: values, training done. 0 when the write rate
	 * held progress back, or the plan did not look at it.
	 */
	int progress_durable;
	/*
	 * What tfj_plan_child_body builds the children from: the input's job
	 * (not owned; it must outlive the plan's use) and the pod options.
	 */
	const struct tfj_tfjob *job;
	struct tfj_podspec_opts opts;
	/*
	 * The job's ps Secret (pssecret.h), its recorded status.psSecretName
	 * (or the older operator's name the plan records): the pods of this
	 * plan mount it, CREATE_SECRET posts it. "" = none yet: CREATE_SECRET
	 * makes one and the pods mount the name it records.
	 */
	char ps_secret[TFJ_JOBSTATUS_PS_SECRET_MAX];
};

struct tfj_plan_config {
	const char *operator_name;   /* label training.kubeflow.org/operator-name; NULL = "tfjob-controller" */
	const char *cluster_domain;  /* appended to service hosts; NULL or "" = short "<svc>.<ns>.svc" */
	int default_port;            /* 0 = 2222 */
	const char *manager;         /* runPolicy.managedBy we own; NULL = TFJ_TFJOB_MANAGER */
	int max_creates;             /* pods+services created per plan; 0 = TFJ_PLAN_MAX_CREATES */
	const char *report_addr;     /* TFJOB_REPORT_ADDR for pods; NULL/"" = no injection */
	const char *report_audience; /* token audience; NULL = "tfjob-report" */
	int report_insecure;         /* plaintext channel: pods get no CA (podspec.h) */
	const char *report_ca_configmap; /* the CA ConfigMap pods mount (podspec.h); NULL = default */
	const struct tfj_gang *gang; /* gang scheduling: pods' scheduler and PodGroup
				      * marks (podgroup.h), and the job's PodGroup
				      * from the input's podgroup; NULL = off */
	const char *agent_image;     /* injected agent's image (tfjob/inject.h); NULL = none */
	int agent_inject_default;    /* inject into jobs without the agent annotation */
	int kueue_pod_groups;        /* Kueue pod-group mode for jobs that name a queue (tfjob/kueue.h) */
	int ps_secret;               /* the planner keeps the job's ps Secret: its name
				      * (status.psSecretName), CREATE_SECRET from the
				      * input's ps_secret_known, and pods only once the
				      * name is recorded */
	int report_ca;               /* the caller publishes the report CA per namespace
				      * (TLS channel): the input's report_ca_current */
	/*
	 * How long past the end of its grace period (deletionTimestamp) a
	 * terminating pod of a running job may stay, and how long its agent
	 * must have been silent, before the planner force-deletes it and
	 * recreates the replica (planlost.h). 0 = never: wait for the kubelet,
	 * node deletion or the out-of-service taint, as a StatefulSet does.
	 * The operator's --lost-pod-timeout (TFJ_PLAN_LOST_POD_TIMEOUT_S).
	 */
	int64_t lost_pod_timeout_s;
	int netpol;                  /* the planner keeps each job's NetworkPolicy
				      * (tfjob/netpol.h) from the input's netpols;
				      * 0 = the caller does not watch them (tests) */
};

/*
 * Creates per plan. Every pod carries a TF_CONFIG that lists the whole
 * cluster, so a 4096-replica job would otherwise need ~4096^2 host strings
 * in one plan; the rest is created by the next reconciles (the new pods'
 * watch events trigger them, and the plan asks for a short requeue too).
 */
#define TFJ_PLAN_MAX_CREATES 128
#define TFJ_PLAN_BATCH_REQUEUE_MS 1000
/*
 * And at most about this many bytes of child bodies per plan (estimated
 * from the template's size and the TF_CONFIG's host count), so the work and
 * the traffic one reconcile makes are bounded whatever the templates hold;
 * one create always fits.
 */
#define TFJ_PLAN_MAX_CREATE_BYTES (16u << 20)

/*
 * What the report channel knows about a job (report.h, progress.h); the
 * planner reads it like any other observation. NULL in the input means the
 * channel is off: no progress block, no hang detection.
 */
struct tfj_plan_replica_report {
	char pod_uid[64];             /* the pod that reported (authenticated) */
	int type, index;              /* enum tfj_rtype and index it reported as */
	int64_t progress_ms;          /* operator clock when its progress last advanced; 0 = never */
	int64_t agent_ms;             /* the agent's time of that record (to see it change) */
	int64_t heard_ms;             /* operator clock of its newest report of any kind
				       * (the evidence hang detection needs); 0 = none */
	int exited;                   /* an Exit report arrived */
	int exit_code;
	char reason[64];              /* the agent's reason ("Error", "OOMKilled", ...) */
	char message[256];
	uint64_t seq;                 /* store sequence of its newest progress record */
	uint64_t exit_seq;            /* and of its Exit report */
};

/* A trainer's named metric (report/reportmsg.h's bounds). */
struct tfj_plan_metric {
	char name[TFJ_PROGREC_METRIC_NAME];
	double value;
};

struct tfj_plan_progress {
	int has_step, has_loss, has_accuracy, has_eps, has_total;
	int64_t step;
	double loss, accuracy, eps;
	int64_t total;                /* training length in steps (has_total) */
	struct tfj_progeta_window rate; /* the job step's recent samples (progeta.h) */
	struct tfj_plan_metric metrics[TFJ_PROGREC_METRICS_MAX]; /* the newest report's named metrics */
	unsigned nmetrics;
	int64_t report_ms;            /* operator clock of the newest of these values; 0 = none */
	int64_t since_ms;             /* since when reports have been received: hang clocks
				       * never start earlier (an operator restart or a new
				       * leader has seen no progress yet) */
	const struct tfj_plan_replica_report *replicas;
	size_t nreplicas;
	uint64_t seq;                 /* the store's record count at the snapshot
				       * (progress.h's tfj_progress_persisted) */
};

/* status.progress is rewritten at most once per this many seconds. */
#define TFJ_PLAN_PROGRESS_MIN_S 5

struct tfj_plan_input {
	const struct tfj_tfjob *job;
	const cJSON *const *pods;      /* pods owned by the job (controllerRef uid = job uid) */
	size_t npods;
	const cJSON *const *services;  /* services owned by the job */
	size_t nservices;
	/* NetworkPolicies owned by the job (slim copies, app/slim.h), read when
	 * cfg->netpol is set. The planner wants `<job>-training` with the spec
	 * netpol.h builds while the job runs (not once it finished, nor while
	 * it is suspended: an existing one is kept then, for pods that linger):
	 * CREATE_NETPOL when it is missing, UPDATE_NETPOL when its spec is not
	 * current (a changed tfjob-port), and the NetworkPolicyFailure
	 * condition from create_failure's netpol fields until it is current. */
	const cJSON *const *netpols;
	size_t nnetpols;
	/* The job's namespace holds the current report CA (read when
	 * cfg->report_ca): otherwise a running job's plan asks for PUBLISH_CA,
	 * before its pods, whether or not it creates any (a rotated CA reaches
	 * the running pods' agents that way). */
	int report_ca_current;
	/* The job's ps Secret, by the name its status records, is known to
	 * exist (read when cfg->ps_secret; the caller's memo, app/guardmemo.h):
	 * otherwise a plan that creates pods asks for CREATE_SECRET before
	 * them. A job with no recorded name (a new job) gets CREATE_SECRET
	 * whatever this says, and a running job with pods but no
	 * recorded name gets the older operator's `<job>-ps-secret` recorded
	 * (pssecret.h). */
	int ps_secret_known;
	int64_t now_ms;                /* wall clock, unix milliseconds */
	const struct tfj_plan_config *cfg; /* NULL = all defaults */
	const struct tfj_plan_progress *progress; /* NULL = report channel off */
	/* The job's permanent create failures (createfail.h): its ReplicaFailure
	 * condition. NULL = nothing known; the status keeps what it has. */
	const struct tfj_createfail *create_failure;
	/*
	 * Gang scheduling (read when cfg->gang): the cached PodGroup named after
	 * the job, whoever owns it (a slim copy, app/slim.h; NULL when there is
	 * none), and whether the PodGroup API is served (podgroup_api_absent:
	 * the informer's LIST found no such collection). While the job runs
	 * the planner wants its PodGroup (podgroup.h's tfj_podgroup_plan):
	 * CREATE_PODGROUP, UPDATE_PODGROUP or DELETE_PODGROUP (one left by an
	 * earlier job of the name; the job's own once it is suspended or
	 * finished). When no PodGroup can be made (API absent, or the last
	 * create found it so: create_failure's podgroup fields; or a
	 * schedulingPolicy that gives no PodGroup) it creates no pod, sets
	 * ReplicaFailure True with reason TFJ_PLAN_GANG_REASON_* and a message
	 * saying what to fix (a Warning event when it is new), and asks again
	 * after TFJ_CREATEFAIL_PODGROUP_MS; the condition goes once that passes.
	 */
	const cJSON *podgroup;
	int podgroup_api_absent;
};

#define TFJ_PLAN_GANG_REASON_UNAVAILABLE "PodGroupUnavailable"
#define TFJ_PLAN_GANG_REASON_INVALID "InvalidSchedulingPolicy"

/*
 * Computes the plan. On failure (TFJ_ENOMEM, TFJ_ETOOBIG, or TFJ_EINVAL
 * for a NULL job) *out is left empty. A plan with no actions means "nothing
 * to do": the job is in its desired state.
 */
int tfj_plan_compute(struct tfj_plan *out, const struct tfj_plan_input *in);

/*
 * 1 when the job is left to another controller (runPolicy.managedBy names
 * someone else than cfg's manager): the planner plans nothing for it, and
 * the caller writes nothing for it either, not even what the job's pods
 * would need (the report CA). cfg NULL = defaults.
 */
int tfj_plan_managed_elsewhere(const struct tfj_tfjob *job, const struct tfj_plan_config *cfg);

/*
 * The object a CREATE_POD, CREATE_SERVICE, CREATE_NETPOL or UPDATE_NETPOL
 * (its spec is the patch) action of plan p creates, built
 * from the plan's job and options (*out the caller's, cJSON_Delete). Build
 * it just before sending it and free it right after: a pod body is a full
 * copy of its template. A pod mounts the ps Secret `ps_secret` when it is
 * not NULL (the name this plan's CREATE_SECRET recorded), else the plan's
 * ps_secret. TFJ_EINVAL for any other action.
 */
int tfj_plan_child_body(cJSON **out, const struct tfj_plan *p, const struct tfj_action *a,
			const char *ps_secret);

/* Releases the actions and bodies and zeroes the plan. Accepts NULL. */
void tfj_plan_free(struct tfj_plan *plan);

/* "WriteStatus", "CreatePod", ... for logs. */
const char *tfj_plan_kind_name(enum tfj_action_kind k);
/* "restart", "disruption", "cleanup", "suspend", "" */
const char *tfj_plan_reason_name(enum tfj_delete_reason r);

#endif
