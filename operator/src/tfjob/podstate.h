/*
 * podstate.h - what the planner needs to know about an observed pod or
 * service, read once from the cached JSON.
 *
 * A pod is "disrupted" when something other than its own program ended it:
 * eviction, preemption, taint-manager deletion, node loss, a
 * DisruptionTarget condition, or Kueue's TerminationTarget condition (a pod
 * group Kueue evicted or preempted, docs/kueue.md). Disruptions are retried
 * without counting against backoffLimit (trainer#999, #1560).
 *
 * Ownership: the string pointers point into the pod's cJSON tree and live as
 * long as it; the fixed buffers are copies.
 */
#ifndef TFJ_PODSTATE_H
#define TFJ_PODSTATE_H

#include <stdint.h>
#include <cjson/cJSON.h>

#include "tfjob/tfjob.h"

/* The pod condition Kueue sets on the pods of a group it stops. */
#define TFJ_PODSTATE_KUEUE_STOP "TerminationTarget"
/* Readers look at no more than this many of a pod's conditions. */
#define TFJ_PODSTATE_MAX_CONDITIONS 64

enum tfj_pod_phase {
	TFJ_POD_PENDING = 0,
	TFJ_POD_RUNNING,
	TFJ_POD_SUCCEEDED,
	TFJ_POD_FAILED,
	TFJ_POD_UNKNOWN
};

struct tfj_podstate {
	const char *name;
	const char *uid;             /* "" when absent */
	int type;                    /* enum tfj_rtype from the replica-type label, or -1 */
	int index;                   /* replica-index label, or -1 */
	enum tfj_pod_phase phase;
	int deleting;                /* deletionTimestamp set */
	/*
	 * The tensorflow container ended after the pod's deletion was asked
	 * for (finishedAt >= deletionTimestamp - deletionGracePeriodSeconds):
	 * its program stopped because of the SIGTERM, so an exit 0 is no
	 * completed replica (a trainer that exits 0 on SIGTERM, a suspend, a
	 * kubectl delete pod).
	 */
	int ended_by_delete;
	int64_t delete_asked;        /* unix seconds the deletion was asked, 0 = none */
	/*
	 * deletionTimestamp itself, unix seconds (0 = none): the end of the
	 * grace period, by which a working kubelet has stopped the containers
	 * and removed the pod. A pod still there well after it sits on a node
	 * whose kubelet does not answer (planlost.h).
	 */
	int64_t delete_due;
	int disrupted;
	char why[64];                /* disruption or pod reason ("Evicted"), may be "" */
	/* The reason of a DisruptionTarget=True condition ("PreemptionByScheduler"), or "". */
	char target[64];
	char node[254];              /* spec.nodeName, "" when not scheduled */
	/*
	 * The pod runs (its tensorflow container started) but a Ready
	 * condition that is not "True" was set by someone other than its
	 * kubelet (whose reasons are ContainersNotReady, PodCompleted and
	 * ReadinessGatesNotReady): the node lifecycle controller marks so
	 * every pod of a node that stopped reporting, long before the taint
	 * manager evicts them. Its peers cannot reach it (planlost.h).
	 */
	int node_unready;
	int64_t created;             /* creationTimestamp, unix seconds; 0 = unknown */
	/* The `tensorflow` container's last termination, if any. */
	int has_exit;                /* 2: the tensorflow container, 1: another one */
	int exit_code;
	char exit_reason[64];        /* "OOMKilled", "Error", ... */
	char container[64];          /* container the failure is reported for */
	int64_t finished_at;         /* that termination's finishedAt, unix s; 0 = unknown */
	int64_t restarts;            /* sum of containers' restartCount */
	/*
	 * tfjob-agent's termination message (docs/agent.md) of the tensorflow
	 * container: {"reason": ..., "message": ...}; "" when there is none.
	 * The message is cut to fit and has its line breaks turned into "; ".
	 */
	char agent_reason[64];
	char agent_message[256];
	/*
	 * The final figures in that termination message (lastStep, loss,
	 * accuracy), with finished_at above: the status falls back on them
	 * when no report brought them (planprog.h).
	 */
	int has_term_step, has_term_loss, has_term_accuracy;
	int64_t term_step;
	double term_loss, term_accuracy;
	int64_t running_since_ms;    /* tensorflow container state.running.startedAt; 0 = not running */
	/* What Kueue's pod integration put on the pod (tfjob/kueue.h). */
	int gated;                   /* spec.schedulingGates holds kueue.x-k8s.io/admission */
	int scheduled;               /* spec.nodeName is set */
	int kueue_finalizer;         /* 1 + index of kueue.x-k8s.io/managed in
				      * metadata.finalizers; 0 = not there */
};

/*
 * Reads a pod. Fails (TFJ_EINVAL/TFJ_ETYPE) only when the pod has no name;
 * anything else odd (bad labels, unknown phase) is recorded as unknown type
 * or phase so the planner can treat the pod as not ours to plan.
 */
int tfj_podstate_read(struct tfj_podstate *out, const cJSON *pod);
/*
 * 1 when tfj_podstate_read looks at a pod condition of this type, status
 * and reason ("" when absent): DisruptionTarget and TFJ_PODSTATE_KUEUE_STOP
 * whatever their status; Ready only when it is not "True" and its reason
 * is none of its kubelet's (node_unready above: the rare case, so neither
 * a running nor a completed pod's cache entry carries it), else 0. The pod
 * cache keeps only those (app/slim.c), so the two cannot drift apart. Pure.
 */
int tfj_podstate_reads_condition(const char *type, const char *status, const char *reason);

/* Reads a service: name, uid, labels and deleting only. */
int tfj_podstate_read_service(struct tfj_podstate *out, const cJSON *svc);

#endif
