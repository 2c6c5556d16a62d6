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
 * Bounded: at most `max_jobs` jobs (the least recently reported is dropped)
 * and TFJ_PROGRESS_MAX_REPLICAS pods per job (the oldest is dropped).
 *
 * Threads: all calls lock; the report server writes, reconcile workers read.
 * Ownership: snapshots are the caller's (tfj_progress_release).
 */
#ifndef TFJ_PROGRESS_H
#define TFJ_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "tfjob/plan.h"
#include "report/reportmsg.h"

#define TFJ_PROGRESS_MAX_REPLICAS 8192

struct tfj_progress;

int tfj_progress_new(struct tfj_progress **out, size_t max_jobs);
void tfj_progress_free(struct tfj_progress *p);

/* Records an authorized report from pod `pod_uid` at operator time now_ms. */
int tfj_progress_record(struct tfj_progress *p, const struct tfj_reportmsg *m,
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

#endif
