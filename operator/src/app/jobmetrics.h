/*
 * jobmetrics.h - job counters by namespace under Kubeflow's names, and pod
 * restarts by exit code, for /metrics.
 *
 * Dashboards and alerts built for Kubeflow's training-operator read
 * training_operator_jobs_{created,deleted,successful,failed,restarted}_total
 * labelled job_namespace and framework (the label names of Kubeflow's
 * pkg/common/metrics.go; framework is always "tensorflow" here). The
 * operator's own tfjob_operator_jobs_*_total stay as they are; these count
 * the same transitions, split by the job's namespace:
 *  - created: the job got its Created condition (once per job);
 *  - successful / failed: the Succeeded / Failed condition (once per job);
 *  - restarted: a replica pod deleted to be restarted (a retryable exit,
 *    OnFailure/Always, or a hung replica);
 *  - deleted: the operator deleted the TFJob (ttlSecondsAfterFinished).
 * docs/compatibility.md says where Kubeflow counts differently.
 *
 * Cardinality is bounded: at most `max_ns` namespaces get series of their
 * own, in the order they were first counted; events of any later
 * namespace (or a value that is not a namespace name) are counted under
 * job_namespace="_other", which no namespace can be called.
 *
 * Jobs by phase: tfjob_operator_jobs{phase} is a gauge of the jobs this
 * operator reconciles, by the phase their last applied plan left
 * (Created, Running, Restarting, Suspended, Succeeded, Failed; the STATE
 * column), all six always shown. The controller notes each job's phase
 * after a plan was applied and forgets the job when it is deleted or left
 * to another controller; at most TFJ_JOBMETRICS_MAX_JOBS jobs are noted
 * (past that, new jobs are not shown in the gauge until others go).
 *
 * Restarts by exit code: tfjob_operator_pod_restarts_total{exit_code} with
 * "0".."255" (the tensorflow container's exit code), "other" (outside that
 * range) and "none" (no exit code: a hung replica, or a pod deleted before
 * its container ended). At most 258 series.
 *
 * Threads: every call may come from any thread at once (one mutex).
 * Ownership: the caller owns the struct; namespaces are copied.
 */
#ifndef TFJ_JOBMETRICS_H
#define TFJ_JOBMETRICS_H

#include <stddef.h>
#include <stdint.h>

#include <tfj/buf.h>

#define TFJ_JOBMETRICS_MAX_NS_DEFAULT 256
#define TFJ_JOBMETRICS_OTHER_NS "_other"
#define TFJ_JOBMETRICS_EXIT_NONE (-1)
#define TFJ_JOBMETRICS_MAX_JOBS 65536

enum tfj_jobmetric {
	TFJ_JM_CREATED,
	TFJ_JM_DELETED,
	TFJ_JM_SUCCESSFUL,
	TFJ_JM_FAILED,
	TFJ_JM_RESTARTED,
	TFJ_JM_COUNT
};

struct tfj_jobmetrics;

/* max_ns 0 means TFJ_JOBMETRICS_MAX_NS_DEFAULT. */
int tfj_jobmetrics_new(struct tfj_jobmetrics **out, size_t max_ns);
void tfj_jobmetrics_free(struct tfj_jobmetrics *m);

/* Counts one `which` event of a job in namespace ns. NULL m: nothing. */
void tfj_jobmetrics_inc(struct tfj_jobmetrics *m, const char *ns, enum tfj_jobmetric which);

/* Counts one pod restart; exit_code TFJ_JOBMETRICS_EXIT_NONE when unknown. */
void tfj_jobmetrics_restart(struct tfj_jobmetrics *m, int exit_code);

/*
 * Notes the phase of job `key` ("ns/name"); a phase that is none of the six
 * (NULL, "") forgets the job. NULL m: nothing.
 */
void tfj_jobmetrics_phase(struct tfj_jobmetrics *m, const char *key, const char *phase);

/* Forgets job `key` (deleted, or not ours). NULL m: nothing. */
void tfj_jobmetrics_forget(struct tfj_jobmetrics *m, const char *key);

/*
 * Appends the families as Prometheus text: the HELP and TYPE lines always
 * (a scrape shows the names before the first job), a sample per series
 * counted so far. NULL m: nothing.
 */
int tfj_jobmetrics_render(struct tfj_jobmetrics *m, struct tfj_buf *out);

#endif
