/*
 * progress.h - what the report channel learned, per TFJob, until the planner
 * reads it (plan.h's `progress` input).
 *
 * Keyed by the TFJob's uid, so a re-created job with the same name starts
 * empty. Per replica it keeps the last report of each pod (by pod uid): when
 * its progress last advanced (by the operator's clock, so agents' clocks do
 * not matter) and its Exit report. Job-level values: the newest step from a
 * chief, master or worker, and each other value (loss, accuracy,
 * examples/s) from the newest report that carried it (an evaluator's
 * accuracy counts).
 *
 * Bounded: at most `max_jobs` jobs (the least recently reported is dropped),
 * and per job the records of the pods that exist: the controller forgets a
 * pod's record when the pod is deleted (tfj_progress_forget_pod). A job
 * whose pods crash-loop for days (each restart a new pod uid) so keeps a
 * record per current pod, not one per pod it ever had. As a backstop for
 * records whose pod's deletion was never seen, a job holds at most
 * tfj_progress_limit's bound (twice its replicas and a margin) and never
 * more than TFJ_PROGRESS_MAX_REPLICAS records; past it, the record heard
 * from least recently goes, one with an Exit not yet in the status last.
 *
 * Threads: all calls lock; the report server writes, reconcile workers read.
 * Ownership: snapshots are the caller's (tfj_progress_release).
 */
#ifndef TFJ_PROGRESS_H
#define TFJ_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#include <tfj/buf.h>

#include "tfjob/plan.h"
#include "report/reportmsg.h"

#define TFJ_PROGRESS_MAX_REPLICAS 8192
/* Records a job may hold beyond twice its replicas (tfj_progress_limit). */
#define TFJ_PROGRESS_SPARE_RECORDS 16

struct tfj_progress;

int tfj_progress_new(struct tfj_progress **out, size_t max_jobs);
void tfj_progress_free(struct tfj_progress *p);

/*
 * Records an authorized report from pod `pod_uid` at operator time now_ms.
 * *created (may be NULL) is set to 1 when this report started the pod's
 * record: the pod may have been deleted between its authorization and now,
 * after its deletion forgot it, so the caller checks that the pod is still
 * cached and calls tfj_progress_forget_pod when it is not.
 */
int tfj_progress_record(int *created, struct tfj_progress *p, const struct tfj_reportmsg *m,
			const char *pod_uid, int64_t now_ms);

/*
 * Copies what is known about job `job_uid` into *out (an empty progress when
 * nothing). The replicas array is malloc'd; tfj_progress_release frees it.
 */
int tfj_progress_snapshot(struct tfj_progress *p, struct tfj_plan_progress *out,
			  const char *job_uid);
void tfj_progress_release(struct tfj_plan_progress *snap);

/*
 * Restarts the observation clock (snapshots' since_ms): call when this
 * process starts reconciling (start-up, or leadership gained), because
 * until then it has received no reports and must not call anyone hung.
 * tfj_progress_new starts it at creation.
 */
void tfj_progress_restart_clock(struct tfj_progress *p);

/*
 * Durability, for the acks agents wait for (docs/operator.md, "Report
 * channel"). A snapshot carries the store's sequence (`seq`); once the
 * status a plan computed from it is written (or was already there, and the
 * plan held nothing back: plan.h's progress_durable), the controller calls
 * tfj_progress_persisted with that sequence: every record of the job stored
 * before the snapshot is then in the status or superseded there (a ps's
 * step, a worker's non-zero Exit: the termination message is their record).
 * tfj_progress_ack says what of a pod's reports is durable: the agent's time
 * of its newest progress record (0 = not yet) and whether its Exit is.
 * A job dropped for space starts over, unacked: agents just resend.
 */
struct tfj_progress_ack {
	int64_t progress_ms;   /* the agent's unix_time_ms of the acked record */
	int exit;
};
void tfj_progress_persisted(struct tfj_progress *p, const char *job_uid, uint64_t seq);
void tfj_progress_ack(struct tfj_progress *p, struct tfj_progress_ack *out, const char *job_uid,
		      const char *pod_uid);

/* Drops a job (deleted). */
void tfj_progress_forget(struct tfj_progress *p, const char *job_uid);

/*
 * Drops the record of pod `pod_uid` of job `job_uid`: call once the pod is
 * gone from the pod cache (its informer DELETE). No plan needs it after
 * that: the planner reads a record only for a pod it observes. For that to
 * hold for a plan computing while the pod goes, the controller takes its
 * snapshot before it reads the pods: a pod it then sees was still cached
 * after the snapshot, so its record (an Exit it is about to act on) was in
 * it. The pod's agent is gone too, so no ack is owed to it.
 */
void tfj_progress_forget_pod(struct tfj_progress *p, const char *job_uid, const char *pod_uid);

/*
 * Bounds the records of job `job_uid` (when the store has it) to twice
 * `replicas` (its total replicas) plus TFJ_PROGRESS_SPARE_RECORDS, at most
 * TFJ_PROGRESS_MAX_REPLICAS: a replica has one pod at a time, and one more
 * while its predecessor terminates, so a job's live pods fit. The reconcile
 * calls it each time (the spec may change); records above it go at once.
 */
void tfj_progress_limit(struct tfj_progress *p, const char *job_uid, int replicas);

/* What the store holds, for /metrics. */
struct tfj_progress_stats {
	size_t jobs;      /* jobs with a record */
	size_t records;   /* pods' records, all jobs */
	size_t bytes;     /* approximate heap bytes: the job table and record arrays */
};
void tfj_progress_stats(struct tfj_progress *p, struct tfj_progress_stats *out);

/* tfjob_report_progress_{jobs,records,bytes}; nothing when p is NULL. */
int tfj_progress_metrics(struct tfj_progress *p, struct tfj_buf *out);

#endif
