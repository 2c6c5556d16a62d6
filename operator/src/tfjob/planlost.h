/*
 * planlost.h - the planner's rules for replicas the cluster took away:
 * preemption, eviction (drains), taint-manager deletion, and pods left on a
 * node that stopped answering. Internals of plan.c, pure like it.
 *
 *  - Announce: a disrupted pod of an open slot (podstate.h: a
 *    DisruptionTarget condition or a disruption reason) gets one Warning
 *    event on the TFJob saying who took it and why (reason Preempted,
 *    Evicted, TaintEviction, NodeLost, NodeShutdown or Disrupted), that it
 *    is recreated under the same name and that it does not count against
 *    backoffLimit. The planner asks for it in every plan while the pod is
 *    there; the action carries ev_once, so the event is posted once per
 *    pod (its uid is in the message).
 *  - Lost node: a terminating pod blocks its slot (the replacement has the
 *    same name) until the object is gone. A kubelet removes it by the end
 *    of its grace period (deletionTimestamp); one that cannot be reached
 *    never does, and neither Kubernetes nor Kubeflow frees the slot then
 *    unless the Node object is deleted or tainted out-of-service (pod GC).
 *    The planner force-deletes (gracePeriodSeconds 0, uid precondition)
 *    such a pod once both hold: it is still there lost_pod_timeout_s past
 *    its deletionTimestamp, and no report of its agent arrived within
 *    lost_pod_timeout_s (a live agent proves the copy still runs, and it
 *    is then never force-deleted). Until then a requeue at the due time.
 *    The deletion is a disruption: a Warning NodeLost event, the replica is
 *    made again by the next plan, nothing counts against backoffLimit.
 *  - A peer taken away: a replica that exits with TFJ_EXIT_UNAVAILABLE
 *    (138, tfjob-agent and the runtime: a peer could not be reached for
 *    --peer-timeout) while another replica of the job is down for a
 *    reason outside both programs is a victim of that disruption, not a
 *    failure of its own: it is recreated like a disrupted pod, with one
 *    Warning PeerUnavailable event, and does not count against
 *    backoffLimit. "Down" is what the API shows: the other pod is
 *    disrupted or terminating, it runs but something other than its
 *    kubelet marked it not ready (the node lifecycle controller does so
 *    to every pod of a node that stopped reporting, minutes before the
 *    taint manager evicts them), its slot has no pod, or its pod was
 *    made after this one (a replacement made while this one ran, which
 *    may still be starting or restoring its checkpoint). Without this,
 *    every worker of a job whose ps sits on a lost node fails once per
 *    --peer-timeout until the ps is replaced and backoffLimit ends the
 *    job. It stays bounded: a replacement pod made after the other
 *    replica's no longer qualifies under the last rule, and a pod that
 *    stays unschedulable under none.
 *    A replica can give up before the control plane notices a lost node
 *    (node-monitor-grace-period, 50 s by default, against a short
 *    --peer-timeout): an exit 138 with no peer down but one running
 *    (only a running pod can sit on a node not yet noticed lost) is
 *    judged only TFJ_PLANLOST_PEER_WAIT_S after its finishedAt (the pod
 *    is left as it is until then, with a requeue), and counted as usual
 *    if still no peer is down. With no peer running (a ps that never
 *    started) it is judged at once.
 *    The reasoning (why this never runs two copies under the documented
 *    timeouts, and what Kubernetes and Kubeflow do) is in
 *    docs/reliability.md, "Node loss, drain and preemption".
 */
#ifndef TFJ_PLANLOST_H
#define TFJ_PLANLOST_H

#include <stddef.h>
#include <stdint.h>

#include "tfjob/planact.h"

/* The operator's default for plan.h's lost_pod_timeout_s (--lost-pod-timeout). */
#define TFJ_PLAN_LOST_POD_TIMEOUT_S 300

/* Event reason of the force deletion. */
#define TFJ_PLANLOST_REASON "NodeLost"

/*
 * Appends the once-only Warning event for pods[i] when it is disrupted;
 * nothing otherwise. 0 or TFJ_ENOMEM.
 */
int tfj_planlost_announce(struct tfj_planctx *c, size_t i);

/*
 * For a terminating pods[i] in an open slot of a job that goes on: 1 when
 * it is to be force-deleted now, 0 to wait (a requeue at the due time is
 * asked when there is one).
 */
int tfj_planlost_due(struct tfj_planctx *c, size_t i);

/* How long after its exit a replica that gave up on its peers waits to be judged. */
#define TFJ_PLANLOST_PEER_WAIT_S 60

/* What tfj_planlost_peer_victim found. */
enum tfj_planlost_peer {
	TFJ_PLANLOST_OWN_FAILURE = 0,   /* the usual rules apply */
	TFJ_PLANLOST_VICTIM = 1,        /* recreate it as a disruption */
	TFJ_PLANLOST_JUDGE_LATER = 2    /* leave it as it is until the requeue it asked for */
};

/*
 * For a failed pods[i] of an open slot: when it exited with
 * TFJ_EXIT_UNAVAILABLE while another replica of the job is down (above),
 * appends the once-only PeerUnavailable event, sets pods[i].why to
 * TFJ_PLANLOST_PEER_REASON and returns TFJ_PLANLOST_VICTIM;
 * TFJ_PLANLOST_JUDGE_LATER when no peer is down yet but one runs (judged
 * at the requeue this asks for); TFJ_PLANLOST_OWN_FAILURE otherwise; or
 * TFJ_ENOMEM.
 */
int tfj_planlost_peer_victim(struct tfj_planctx *c, size_t i);

/* Event reason (and pod why) of a replica that exited because a peer was down. */
#define TFJ_PLANLOST_PEER_REASON "PeerUnavailable"

/* The force DELETE_POD of pods[i] with its NodeLost event. 0 or TFJ_ENOMEM. */
int tfj_planlost_force_delete(struct tfj_planctx *c, size_t i);

#endif
