/*
 * podgroup.h - gang scheduling: the PodGroup of a TFJob and what its pods
 * carry so a gang scheduler admits them all at once or not at all.
 *
 * Two PodGroup APIs, as in Kubeflow training-operator v1.9
 * (--gang-scheduler-name):
 *  - scheduler-plugins' coscheduling plugin, scheduling.x-k8s.io/v1alpha1:
 *    spec {minMember, minResources, scheduleTimeoutSeconds}; pods get
 *    schedulerName = the flag's value and the label
 *    scheduling.x-k8s.io/pod-group = <job>. Any name but "volcano" selects
 *    it (the name is the scheduler's profile name).
 *  - Volcano, scheduling.volcano.sh/v1beta1: spec {minMember, queue
 *    (default "default", an existing PodGroup's queue is kept),
 *    priorityClassName, minResources}; pods get schedulerName "volcano" and
 *    the annotations scheduling.k8s.io/group-name = <job> and
 *    volcano.sh/task-spec = <lower type>.
 * A schedulerName the pod template sets is kept (the user chose another
 * scheduler). The pods' marks are put by podspec (tfj_podspec_opts.gang).
 *
 * From runPolicy.schedulingPolicy: minMember = minAvailable, default every
 * replica of the job; minResources = the policy's, else the sum of the
 * container requests (limits where a container has no requests) of the
 * first minMember pods in the planner's type order (Chief, Master, PS,
 * Worker, Evaluator). Kubeflow orders by the templates' PriorityClass value
 * instead, which needs a PriorityClass lookup; with equal priorities (the
 * usual case) its order is unspecified, ours is fixed.
 *
 * One PodGroup per TFJob, named after it, owned by it (controller
 * ownerReference: the garbage collector removes it with the job), with the
 * job's annotations (but kubectl's last-applied-configuration). It exists
 * while the job is valid, not suspended and not finished, as in Kubeflow,
 * which deletes it on suspend and at the end.
 *
 * Pure: no I/O. Ownership: returned trees belong to the caller.
 */
#ifndef TFJ_PODGROUP_H
#define TFJ_PODGROUP_H

#include <cjson/cJSON.h>

#include "tfjob/tfjob.h"

enum tfj_podgroup_api {
	TFJ_PODGROUP_OFF = 0,
	TFJ_PODGROUP_SCHEDULER_PLUGINS,
	TFJ_PODGROUP_VOLCANO
};

#define TFJ_PODGROUP_SP_API "scheduling.x-k8s.io/v1alpha1"
#define TFJ_PODGROUP_VOLCANO_API "scheduling.volcano.sh/v1beta1"
#define TFJ_PODGROUP_SP_LABEL "scheduling.x-k8s.io/pod-group"
#define TFJ_PODGROUP_VOLCANO_GROUP "scheduling.k8s.io/group-name"
#define TFJ_PODGROUP_VOLCANO_TASK "volcano.sh/task-spec"
#define TFJ_PODGROUP_VOLCANO_SCHEDULER "volcano"
#define TFJ_PODGROUP_DEFAULT_QUEUE "default"

/* Gang scheduling settings (--gang-scheduler-name). Zeroed = off. */
struct tfj_gang {
	enum tfj_podgroup_api api;
	const char *scheduler;   /* pods' schedulerName; borrowed */
};

/*
 * Parses --gang-scheduler-name: "" or "none" = off, "volcano" = Volcano,
 * any other DNS-1123 subdomain = scheduler-plugins under that scheduler
 * name. out->scheduler points into s (or a static string).
 */
int tfj_podgroup_parse(struct tfj_gang *out, const char *s);

/* "/apis/<group>/<version>" of the PodGroup API, or NULL when off. */
const char *tfj_podgroup_api_path(enum tfj_podgroup_api api);
/* "scheduler-plugins", "volcano" or "off" (logs, events, docs). */
const char *tfj_podgroup_api_name(enum tfj_podgroup_api api);

/* 1 when the job should have a PodGroup now (valid, not suspended, not finished). */
int tfj_podgroup_wanted(const struct tfj_tfjob *job);

/*
 * The PodGroup body for job. TFJ_EINVAL (with a detail) when the
 * schedulingPolicy is unusable (minAvailable not a non-negative integer, a
 * minResources value that is not a quantity, ...).
 */
int tfj_podgroup_body(cJSON **out, const struct tfj_tfjob *job, const struct tfj_gang *g);

enum tfj_podgroup_op {
	TFJ_PODGROUP_NOOP = 0,
	TFJ_PODGROUP_CREATE,  /* POST body */
	TFJ_PODGROUP_UPDATE,  /* body: the observed object, spec replaced (gang.c patches the spec) */
	TFJ_PODGROUP_DELETE   /* DELETE the observed object (precondition: its uid) */
};

/*
 * What to do given the observed PodGroup (NULL when there is none): create
 * it, bring its spec to the desired one, delete it (not wanted, or left by
 * an earlier TFJob of the same name), or nothing. *body is set for CREATE
 * and UPDATE, NULL otherwise.
 */
int tfj_podgroup_plan(enum tfj_podgroup_op *op, cJSON **body, const struct tfj_tfjob *job,
		      const cJSON *observed, const struct tfj_gang *g);

/* "create", "update", "delete", "none" */
const char *tfj_podgroup_op_name(enum tfj_podgroup_op op);

#endif
