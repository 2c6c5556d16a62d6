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
/*
 * Where the informer's slim copy (app/slim.h) keeps the digest of the
 * observed spec instead of the spec: "sha256:" and 64 hex digits.
 */
#define TFJ_NETPOL_DIGEST_KEY "specDigest"
#define TFJ_NETPOL_DIGEST_MAX 72

/* "<job>-training" into out; TFJ_ETOOBIG when it does not fit. */
int tfj_netpol_name(char *out, size_t outlen, const struct tfj_tfjob *job);

/* The NetworkPolicy for a valid job (o may be NULL: defaults, as in podspec.h). */
int tfj_netpol_body(cJSON **out, const struct tfj_tfjob *job, const struct tfj_podspec_opts *o);

/*
 * The digest of a NetworkPolicy spec into out (TFJ_NETPOL_DIGEST_MAX
 * bytes or more): "sha256:" and the SHA-256, in hex, of the spec printed
 * compactly with every object's members sorted by key, so two specs have
 * the same digest exactly when they hold the same members and values and
 * the same arrays in the same order, whatever order the API server prints
 * members in (what cJSON_Compare calls equal). TFJ_ETOOBIG when that text
 * is longer than cap bytes or the spec nests deeper than 32 levels (no
 * spec of ours is near either), TFJ_EINVAL when spec is not an object,
 * TFJ_ENOMEM. Pure.
 */
int tfj_netpol_spec_digest(char *out, size_t outlen, const cJSON *spec, size_t cap);

/*
 * 1 when the observed NetworkPolicy `np` has the spec tfj_netpol_body
 * builds for job now, 0 when it differs (the job's ports changed, or
 * someone edited or trimmed the policy), a negative error when the job has
 * no valid spec or memory runs out. np is the informer's slim copy
 * (app/slim.h), whose TFJ_NETPOL_DIGEST_KEY stands for the spec, or a
 * whole policy, whose spec is digested here; one with neither is not
 * current. The planner updates a policy that is not current (plan.h).
 */
int tfj_netpol_current(const cJSON *np, const struct tfj_tfjob *job,
		       const struct tfj_podspec_opts *o);

#endif
