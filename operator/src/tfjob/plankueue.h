/*
 * plankueue.h - the planner's rules for Kueue's pod-group mode
 * (tfjob/kueue.h, docs/kueue.md).
 *
 * Queued: Kueue gates every new pod of the group (scheduling gate
 * kueue.x-k8s.io/admission) until the group is admitted, and again after it
 * preempted the group. While some live pod of the job is gated and none
 * runs or has a node, the job waits for Kueue as a suspended one does:
 * activeDeadlineSeconds does not run (startTime is cleared and set again
 * when the group is admitted) and nothing counts as a failure.
 *
 * Release: Kueue's webhook puts its finalizer kueue.x-k8s.io/managed on
 * every pod of the group and takes it off a failed or deleted pod only once
 * a replacement pod exists. The operator's replacement has the same name as
 * the pod it replaces, so it can only be made once the old pod is gone: the
 * operator takes the finalizer off its own pods once they are being deleted
 * and have settled (Succeeded or Failed, or never got a node), which Kueue
 * has then seen. Only with --kueue-pod-groups (the operator needs patch on
 * pods for it).
 */
#ifndef TFJ_PLANKUEUE_H
#define TFJ_PLANKUEUE_H

#include "tfjob/planact.h"

/*
 * 0, or TFJ_EINVAL with the reason in msg when the job's queue annotation
 * is no LocalQueue name (pod-group mode only): the job fails InvalidSpec.
 */
int tfj_plankueue_check(char *msg, size_t n, const struct tfj_planctx *c);

/* 1 when the job's pod group waits for Kueue's admission (above). */
int tfj_plankueue_queued(const struct tfj_planctx *c);

/*
 * Kueue's TFJob integration looks up the replica types by Kubeflow's exact
 * keys (Chief, Master, PS, Worker, Evaluator); a job labelled with a queue
 * whose key is spelled otherwise ("worker") is never admitted. Called when
 * the job becomes suspended: a Warning event KueueReplicaTypeCase naming
 * the key, so the job does not wait without a word.
 */
int tfj_plankueue_warn_keys(struct tfj_planctx *c);

/* RELEASE_POD for every settled pod being deleted that holds Kueue's finalizer. */
int tfj_plankueue_release(struct tfj_planctx *c);

#endif
