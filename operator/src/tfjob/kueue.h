/*
 * kueue.h - Kueue's pod-group integration: the marks the operator puts on a
 * job's pods, and what it reads back from pods Kueue handles
 * (docs/kueue.md, "Pod-group mode").
 *
 * Kueue admits a TFJob in one of two ways. Its `kubeflow.org/tfjob`
 * integration suspends and resumes the TFJob itself (plan.c's suspend
 * rules); nothing here is used then. Its plain `pod` integration admits a
 * group of pods: every pod of the job carries
 *   label      kueue.x-k8s.io/queue-name            <LocalQueue>
 *   label      kueue.x-k8s.io/pod-group-name        tfj_kueue_group_name()
 *   annotation kueue.x-k8s.io/pod-group-total-count <all replicas of the job>
 * and Kueue's webhook gates each new pod (scheduling gate
 * kueue.x-k8s.io/admission, finalizer kueue.x-k8s.io/managed) until the
 * whole group is admitted.
 *
 * Pod-group mode is on for a job when the operator runs with
 * --kueue-pod-groups and the job names its LocalQueue in the annotation
 * tfjob.kubeflow.org/kueue-queue-name, or (when Kueue's TFJob integration
 * is off, from Kueue v0.19) in the label kueue.x-k8s.io/queue-name. The
 * annotation exists because Kueue reads that label on the TFJob itself
 * while its TFJob integration is on: such a job is Kueue's as a TFJob, and
 * Kueue's pod webhook then leaves its pods alone (their owner is managed).
 *
 * Pure. Ownership: returned strings point into the job's tree.
 */
#ifndef TFJ_KUEUE_H
#define TFJ_KUEUE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "tfjob/tfjob.h"

#define TFJ_KUEUE_ANN_QUEUE "tfjob.kubeflow.org/kueue-queue-name"
#define TFJ_KUEUE_LABEL_QUEUE "kueue.x-k8s.io/queue-name"
#define TFJ_KUEUE_LABEL_GROUP "kueue.x-k8s.io/pod-group-name"
#define TFJ_KUEUE_ANN_TOTAL "kueue.x-k8s.io/pod-group-total-count"
#define TFJ_KUEUE_GATE "kueue.x-k8s.io/admission"
#define TFJ_KUEUE_FINALIZER "kueue.x-k8s.io/managed"

/*
 * The LocalQueue of the job's pod group into *out (pointing into the job's
 * tree), or NULL when the job is not in pod-group mode (pod_groups 0, or
 * no queue named). TFJ_EINVAL with a message when the annotation is no
 * valid label value (at most 63 characters, [A-Za-z0-9._-], starting and
 * ending with a letter or digit): the pods would be refused for it, so the
 * planner fails the job (InvalidSpec). An unreadable label is no queue
 * (the API server checked it).
 */
int tfj_kueue_queue(const char **out, const struct tfj_tfjob *job, int pod_groups);

/*
 * The pod-group name (out >= 64 bytes): `<job>-<first 8 characters of the
 * uid>`, or `tfjob-<uid>` when that would not fit in a label value. Stable
 * for the life of the job (pods made again after a failure or a preemption
 * join the same group, as Kueue wants of replacement pods) and never the
 * name of an earlier job of the same name, whose Workload may linger.
 */
int tfj_kueue_group_name(char *out, size_t n, const struct tfj_tfjob *job);

/* Puts the queue label, the group label and the total count on a pod's metadata. */
int tfj_kueue_pod(cJSON *meta, const struct tfj_tfjob *job, const char *queue);

#endif
