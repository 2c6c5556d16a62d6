/*
 * netpol.h - the NetworkPolicy the operator creates for each TFJob: its
 * training port only from pods of the same job.
 *
 * `<job>-training` (networking.k8s.io/v1, labels job-name and
 * operator-name, the TFJob's controller reference, so it goes with the
 * job) selects the job's pods (job-name + operator-name labels) and admits
 * ingress:
 *  - on the job's training ports (every replica type's tfjob-port, 2222
 *    by default; TCP) only from pods of the same job in the same namespace;
 *  - on every other TCP port (ranges with endPort around the training
 *    ports) and on UDP from anywhere, so a NetworkPolicy that exists to fence
 *    the parameter servers does not also cut a job's other listeners
 *    (TensorBoard, a metrics port) that nobody asked to fence.
 * Egress is not restricted. The policy is only as strong as labels are:
 * anyone who may create pods in the namespace can label a pod into the job,
 * which is why the ps also checks the job's secret (pssecret.h).
 *
 * Pure: no I/O. Ownership: *out is a new cJSON tree the caller deletes.
 */
#ifndef TFJ_NETPOL_H
#define TFJ_NETPOL_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "tfjob/podspec.h"
#include "tfjob/tfjob.h"

#define TFJ_NETPOL_SUFFIX "-training"
#define TFJ_NETPOL_API_PATH "/apis/networking.k8s.io/v1"

/* "<job>-training" into out; TFJ_ETOOBIG when it does not fit. */
int tfj_netpol_name(char *out, size_t outlen, const struct tfj_tfjob *job);

/* The NetworkPolicy for a valid job (o may be NULL: defaults, as in podspec.h). */
int tfj_netpol_body(cJSON **out, const struct tfj_tfjob *job, const struct tfj_podspec_opts *o);

/*
 * 1 when the observed NetworkPolicy `np` (the informer's slim copy,
 * app/slim.h: its spec is kept whole up to a size cap) has the spec
 * tfj_netpol_body builds for job now, 0 when it differs (the job's ports
 * changed, or someone edited or trimmed the policy), a negative error when
 * the job has no valid spec or memory runs out. The planner updates a
 * policy that is not current (plan.h).
 */
int tfj_netpol_current(const cJSON *np, const struct tfj_tfjob *job,
		       const struct tfj_podspec_opts *o);

#endif
