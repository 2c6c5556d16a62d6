/*
 * slim.h - informer transforms: what of a pod, service or TFJob is cached.
 *
 * The informers keep every object they watch for the life of the process,
 * and a pod as the API server sends it is mostly fields the controller never
 * reads (metadata.managedFields, the whole pod spec, volume and probe
 * definitions, init container statuses). These functions build the small
 * copy the cache holds instead, so memory grows by a small cost per job.
 *
 * What each keeps is exactly what its readers look at (docs/operator.md,
 * "Memory"); a reader that needs another field must add it here:
 *   pods      metadata (name, namespace, uid, resourceVersion,
 *             deletionTimestamp, deletionGracePeriodSeconds, the labels
 *             job-name, replica-type and replica-index (tfjob/podspec.h's
 *             TFJ_LABEL_*), the controller ownerReference's
 *             apiVersion, kind, name and uid, and the first 64 finalizers),
 *             spec.nodeName (Kueue's marks, and the events about a lost
 *             node, planlost.h) and spec.schedulingGates[].name (the first
 *             64; Kueue's marks, tfjob/kueue.h)
 *             and status.phase, .reason, .conditions[].{type,status,reason}
 *             of the types the pod reader looks at (DisruptionTarget,
 *             Kueue's TerminationTarget; podstate.h),
 *             .containerStatuses[].{name,restartCount,state,lastState} with
 *             the states cut to running.startedAt and terminated.{exitCode,
 *             reason,message,finishedAt} (podstate.c, tokenreview.c,
 *             controller.c); a list or state with nothing kept is left
 *             out, which its readers take as the same. No apiVersion and
 *             kind: a cache holds one kind.
 *   services  the same metadata; no type, spec or status (podstate.c).
 *   NetworkPolicies  the same metadata, no type, and instead of the spec its
 *             digest under TFJ_NETPOL_DIGEST_KEY (tfjob/netpol.h's
 *             tfj_netpol_current compares only that; an update sends the
 *             whole wanted spec), when the spec prints in
 *             TFJ_SLIM_NETPOL_SPEC_MAX bytes: a bigger one is not ours and
 *             is cached without a digest, which the planner replaces.
 *   PodGroups apiVersion, kind, the same metadata plus generation,
 *             creationTimestamp and the operator's five labels (what they
 *             kept before the cuts for #30, which left PodGroups alone),
 *             and the spec whole, when it prints in
 *             TFJ_SLIM_PODGROUP_SPEC_MAX bytes (tfjob/podgroup.h's
 *             tfj_podgroup_plan compares and keeps fields of it; a bigger
 *             one is cached without a spec, which the planner replaces).
 *   TFJobs    everything but metadata.managedFields and the
 *             kubectl.kubernetes.io/last-applied-configuration annotation;
 *             a spec over TFJ_TFJOB_MAX_SPEC_BYTES is replaced by its size
 *             (tfjob.h's TFJ_TFJOB_OVERSIZE_KEY), so the job still fails
 *             with InvalidSpec and the cache holds no spec nobody serves.
 *
 * Fields of the wrong JSON type are left out rather than copied, so the
 * cache holds nothing the readers' type-checked getters would refuse.
 *
 * All five are pure: they never modify `obj` and return a new tree the
 * caller owns (cJSON_Delete), or NULL when out of memory or when obj is
 * not a JSON object.
 */
#ifndef TFJ_SLIM_H
#define TFJ_SLIM_H

#include <cjson/cJSON.h>

#define TFJ_SLIM_LAST_APPLIED "kubectl.kubernetes.io/last-applied-configuration"
#define TFJ_SLIM_NETPOL_SPEC_MAX 4096
#define TFJ_SLIM_PODGROUP_SPEC_MAX 4096

cJSON *tfj_slim_pod(const cJSON *obj);
cJSON *tfj_slim_service(const cJSON *obj);
cJSON *tfj_slim_netpol(const cJSON *obj);
cJSON *tfj_slim_podgroup(const cJSON *obj);
cJSON *tfj_slim_tfjob(const cJSON *obj);

#endif
