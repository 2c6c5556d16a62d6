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

/* The force DELETE_POD of pods[i] with its NodeLost event. 0 or TFJ_ENOMEM. */
int tfj_planlost_force_delete(struct tfj_planctx *c, size_t i);

#endif
