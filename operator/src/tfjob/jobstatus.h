/*
 * jobstatus.h - the TFJob .status model: conditions, replica statuses,
 * times, and the printed phase.
 *
 * The JSON form is the reference's (conditions, replicaStatuses, startTime,
 * completionTime) plus additive fields the CRD declares:
 *   .status.phase                 Created|Running|Restarting|Suspended|
 *                                 Succeeded|Failed (the STATE column)
 *   .status.observedGeneration
 *   .status.replicaSummary        "ps 2/2 worker 3/4": running or done over
 *                                 wanted, per type (the REPLICAS column)
 *   .status.replicaStatuses.<T>.restarts          pod recreations after failures
 *                                                 plus container restarts of
 *                                                 pods already gone
 *   .status.replicaStatuses.<T>.completedIndexes  "0,2-4": indexes whose pod
 *                                                 succeeded; never rerun
 *
 *   .status.progress                  training progress from the report channel:
 *                                     globalStep, loss, accuracy, examplesPerSecond,
 *                                     lastReportTime (the STEP and ACCURACY columns),
 *                                     totalSteps, progressPercentage and
 *                                     estimatedRemainingSeconds (PROGRESS and ETA;
 *                                     absent when the total is unknown: progeta.h),
 *                                     lastUpdatedTime and metrics[] (KEP-2779's
 *                                     names; lastUpdatedTime = lastReportTime; the
 *                                     metrics: loss, accuracy, examples_per_second
 *                                     from the fields above, then the trainer's
 *                                     other named metrics, at most 16),
 *                                     trainingDonePodUID (the lead replica's pod that
 *                                     reported Exit 0: "training done", kept here so a
 *                                     restarted operator or a new leader still knows)
 *   .status.psSecretName              the job's ps Secret, the name the API server gave
 *                                     it (tfjob/pssecret.h); the pods mount it. Encoded
 *                                     here, so every status write keeps it; read by
 *                                     tfjob/tfjob.c, which checks it against the job's
 *                                     name (tfj_jobstatus_decode leaves it empty)
 *
 * Conditions are kept one per type and written in a fixed order, so the
 * same state always encodes to the same JSON and the planner can compare old
 * and new status to write only on change. A condition's lastUpdateTime and
 * lastTransitionTime move only when its status, reason or message change.
 *
 * Ownership: plain values, no heap; copy with `=`.
 */
#ifndef TFJ_JOBSTATUS_H
#define TFJ_JOBSTATUS_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include <tfj/progrec.h>

#define TFJ_JOBSTATUS_TYPES 5      /* = TFJ_RT_COUNT, kept here to avoid a cycle */
#define TFJ_JOBSTATUS_MAX_INDEX 4096 /* = TFJ_TFJOB_MAX_REPLICAS */
#define TFJ_JOBSTATUS_REASON_MAX 64
#define TFJ_JOBSTATUS_MESSAGE_MAX 512
#define TFJ_JOBSTATUS_PS_SECRET_MAX 254 /* a DNS-1123 subdomain and its NUL */

enum tfj_cond {
	TFJ_COND_CREATED = 0,
	TFJ_COND_RUNNING,
	TFJ_COND_RESTARTING,
	TFJ_COND_SUSPENDED,
	TFJ_COND_SUCCEEDED,
	TFJ_COND_FAILED,
	/* Creates of pods/services keep failing with a permanent error (Pod
	 * Security, quota, a missing PriorityClass, a name taken): True with the
	 * API server's message, removed once creates succeed (createfail.h). As
	 * Kubernetes' ReplicaSet does; it never changes the phase. */
	TFJ_COND_REPLICA_FAILURE,
	/* The job's NetworkPolicy (tfjob/netpol.h) could not be created or
	 * updated: True with the API server's message, removed once the policy
	 * is seen current (plan.h). The pods are not held back; it never
	 * changes the phase. */
	TFJ_COND_NETWORK_POLICY_FAILURE,
	TFJ_COND_COUNT
};

struct tfj_condition {
	int present;
	int status;                  /* 1 "True", 0 "False" */
	char reason[TFJ_JOBSTATUS_REASON_MAX];
	char message[TFJ_JOBSTATUS_MESSAGE_MAX];
	int64_t last_update;         /* unix seconds, 0 = unset */
	int64_t last_transition;
};

struct tfj_replica_status {
	int present;
	int active;
	int succeeded;               /* = number of completed indexes */
	int failed;
	int64_t restarts;
	int expected;                /* spec replicas; set by the planner, not decoded */
	unsigned char completed[TFJ_JOBSTATUS_MAX_INDEX / 8]; /* bitmap */
};

struct tfj_progress_status {
	int present;
	int has_step, has_loss, has_accuracy, has_eps, has_total, has_pct, has_eta;
	int64_t step;
	double loss, accuracy, eps;
	int64_t total;               /* totalSteps, >= 1 */
	int pct;                     /* progressPercentage, 0-100 */
	int64_t eta;                 /* estimatedRemainingSeconds, >= 0 */
	/* The trainer's other named metrics, values as written ("%.6g"). */
	struct { char name[TFJ_PROGREC_METRIC_NAME]; char value[32]; } metric[TFJ_PROGREC_METRICS_MAX];
	unsigned nmetric;
	int64_t last_report;         /* unix seconds */
	char done_pod[64];           /* trainingDonePodUID; "" = training not done */
};

struct tfj_job_status {
	struct tfj_condition cond[TFJ_COND_COUNT];
	struct tfj_replica_status rs[TFJ_JOBSTATUS_TYPES]; /* indexed by enum tfj_rtype */
	int64_t start_time;          /* unix seconds, 0 = unset */
	int64_t completion_time;
	int64_t observed_generation;
	struct tfj_progress_status progress;
	char ps_secret[TFJ_JOBSTATUS_PS_SECRET_MAX]; /* psSecretName; "" = none */
};

/* "Created", "Running", ... */
const char *tfj_jobstatus_cond_name(enum tfj_cond c);

/*
 * Reads an existing .status object. Unknown fields and unknown condition
 * types are ignored; malformed known fields are an error (TFJ_ETYPE,
 * TFJ_ERANGE, TFJ_EPARSE) and *out is left zeroed. `status` may be NULL.
 */
int tfj_jobstatus_decode(struct tfj_job_status *out, const cJSON *status);

/* Encodes the status object; *out is a new tree the caller deletes. */
int tfj_jobstatus_encode(cJSON **out, const struct tfj_job_status *st);

/*
 * Sets a condition. Timestamps move only if status/reason/message changed.
 * Setting Running or Restarting True sets the other False (they exclude
 * each other); setting Succeeded or Failed True sets Running and
 * Restarting False. Setting Succeeded True when Failed is already True (or
 * the reverse) is refused with TFJ_ESTATE: a job ends once.
 */
int tfj_jobstatus_set(struct tfj_job_status *st, enum tfj_cond c, int status,
		      const char *reason, const char *message, int64_t now);

/* Removes condition c (it is not written any more). */
void tfj_jobstatus_remove(struct tfj_job_status *st, enum tfj_cond c);

/* 1 if the condition is present and True. */
int tfj_jobstatus_is(const struct tfj_job_status *st, enum tfj_cond c);

/* 1 if Succeeded or Failed is True. */
int tfj_jobstatus_finished(const struct tfj_job_status *st);

/*
 * The phase printed as STATE: Failed, Succeeded, Suspended, Restarting,
 * Running or Created by priority among True conditions; "" when none.
 */
const char *tfj_jobstatus_phase(const struct tfj_job_status *st);

/* Completed-index bitmap helpers (index < TFJ_JOBSTATUS_MAX_INDEX). */
int tfj_jobstatus_completed(const struct tfj_replica_status *rs, int index);
void tfj_jobstatus_mark_completed(struct tfj_replica_status *rs, int index);
/* Parses "0,2-4" into the bitmap (bounded by `limit` indexes). */
int tfj_jobstatus_parse_indexes(struct tfj_replica_status *rs, const char *s, int limit);
/* Writes the bitmap as "0,2-4" ("" when empty); *out malloc'd. */
int tfj_jobstatus_format_indexes(char **out, const struct tfj_replica_status *rs);

/* RFC 3339 UTC timestamps ("2026-11-22T02:28:17Z", fractions accepted). */
int tfj_jobstatus_parse_time(int64_t *out, const char *s);
/* Writes "YYYY-MM-DDTHH:MM:SSZ" into out (outlen >= 21). */
int tfj_jobstatus_format_time(char *out, size_t outlen, int64_t t);

/*
 * An RFC 3339 time under key (absent: *out = 0); and its
 * writer, which writes nothing for 0. Shared with progstatus.c.
 */
int tfj_jobstatus_get_time(int64_t *out, const cJSON *obj, const char *key);
int tfj_jobstatus_put_time(cJSON *obj, const char *key, int64_t t);

#endif
