/*
 * planprog.h - the planner's use of the report channel (plan.h's
 * `progress` input): the status progress block, hang detection and the
 * "training done" signal. Internals of plan.c, pure like it.
 *
 *  - status.progress is rewritten at most once per TFJ_PLAN_PROGRESS_MIN_S
 *    (a requeue brings newer values in later), so a job reporting every
 *    second costs one status write per few seconds, not one per report.
 *  - Hang detection (spec.runPolicy.progressDeadlineSeconds, only while the
 *    channel is on), on evidence only: a running chief, master or worker
 *    pod is hung when its agent's heartbeats kept arriving for that long
 *    without progress, counted from the latest of its container's start,
 *    its last progress and the start of this process's reconciling. It is
 *    restarted like a retryable failure (counted against backoffLimit).
 *    Missing reports are no evidence: a pod no report arrived for (channel
 *    down, TokenReviews failing, no agent, an operator restart or failover)
 *    is never judged. ps and evaluator report no steps and are never judged.
 *  - Training done: the lead replica (chief/master 0, else worker 0) of the
 *    current pod reported Exit with code 0. The replicas stoprule.h stops
 *    are then no longer judged or recreated; they keep running until the
 *    job has succeeded. The pod is written to
 *    status.progress.trainingDonePodUID, so a restarted operator or a new
 *    leader that never heard the Exit still knows.
 *  - Lingering after success (tfj_planprog_linger): once the job has
 *    succeeded, the agents of those replicas are told to stop (the
 *    Heartbeat reply, app/reporthub.c) and their pods end Succeeded; the
 *    planner deletes only what no agent can end: restartPolicy Always pods
 *    at once, pods no agent has reported for after
 *    TFJ_PLANPROG_STOP_GRACE_S, and any still running after
 *    TFJ_PLANPROG_STOP_MAX_S. Both count from the success or from when this
 *    operator started hearing reports, whichever is later.
 *  - The final figures survive a lost channel (tfj_planprog_final): when
 *    the lead replica's pod completed and its agent's termination message
 *    (kubelet's record) names a later step than the status holds, the
 *    status takes that step and the message's loss and accuracy. Reports
 *    are best effort; the termination message is durable. Works with the
 *    channel off too.
 *  - Durability (plan.h's progress_durable): whether the status this plan
 *    leaves holds everything in the progress input; the operator acks an
 *    agent's records only then (report/progress.h).
 */
#ifndef TFJ_PLANPROG_H
#define TFJ_PLANPROG_H

#include <stddef.h>

#include "tfjob/planact.h"

/* The report of the pod with this uid, or NULL. */
const struct tfj_plan_replica_report *tfj_planprog_find(const struct tfj_planctx *c,
							 const char *pod_uid);

/* Gives failed pods without a termination message the reason of their Exit report. */
void tfj_planprog_reasons(struct tfj_planctx *c);

/* Moves the newest progress into c->st.progress when the rate allows. */
void tfj_planprog_progress(struct tfj_planctx *c);

/* The lead replica's final figures from its termination message, when newer. */
void tfj_planprog_final(struct tfj_planctx *c);

/*
 * 1 when pods[i] (running) is hung; detail gets the message. Otherwise 0,
 * and a requeue is set for when it would be.
 */
int tfj_planprog_hung(struct tfj_planctx *c, size_t i, char *detail, size_t n);

/*
 * 1 when the lead replica's current pod reported a successful exit, to this
 * process (the progress input) or before (status.progress.trainingDonePodUID
 * names that pod).
 */
int tfj_planprog_training_done(const struct tfj_planctx *c);

/* tfj_planprog_training_done, and when 1 records the pod in c->st.progress. */
int tfj_planprog_done(struct tfj_planctx *c);

/* ps and evaluator: they report no training steps. */
int tfj_planprog_auxiliary(int type);

/*
 * Seconds after success before the pod of a stopped replica that no agent
 * has reported for is deleted: time for a process to end on its own (the
 * runtime's ps lingers a few seconds after the chief's Finish) before the
 * only way left to end it is taken.
 */
#define TFJ_PLANPROG_STOP_GRACE_S 60
/* The bound for any stopped replica's pod, agent or not (a broken channel). */
#define TFJ_PLANPROG_STOP_MAX_S 300

/*
 * For a succeeded job: deletes the stopped replicas' pods no agent can end
 * (see above) and requeues for the next deadline. Pure like the planner.
 */
int tfj_planprog_linger(struct tfj_planctx *c);

#endif
