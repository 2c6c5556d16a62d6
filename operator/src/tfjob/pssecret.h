/*
 * pssecret.h - the per-job ps secret: the Secret the operator creates for
 * each TFJob and how its pods get it.
 *
 * Every task of a job sends the secret on each call to a parameter server
 * and the ps refuses calls without it (runtime/src/psauth.h), so a pod
 * outside the job cannot Pull the weights, Push, Init or Finish a ps even
 * where no NetworkPolicy is enforced (docs/security.md).
 *
 * The Secret `<job>-ps-secret` (type Opaque, immutable) holds one key,
 * `token`: 32 random bytes from the kernel (getrandom, at the edge:
 * app/apply.c) written as 64 hex digits, because the runtime sends it as
 * a header value. It carries the job-name and operator-name labels and the
 * TFJob's controller reference, so it is deleted with the job. It is
 * created once, before the job's first pod, and never logged.
 *
 * In the pod: a secret volume `tfjob-ps-secret` (mode 0444: the container
 * may run as any user) mounted read-only at /var/run/secrets/tfjob-ps in
 * the tensorflow container, and TFJOB_PS_SECRET_FILE=/var/run/secrets/
 * tfjob-ps/token in its env (replacing any of the template's).
 *
 * Pure: no I/O; the random bytes come in as an argument.
 * Ownership: *out is a new cJSON tree the caller deletes.
 */
#ifndef TFJ_PSSECRET_H
#define TFJ_PSSECRET_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "tfjob/tfjob.h"

#define TFJ_PSSECRET_BYTES 32
#define TFJ_PSSECRET_SUFFIX "-ps-secret"
#define TFJ_PSSECRET_KEY "token"
#define TFJ_PSSECRET_VOLUME "tfjob-ps-secret"
#define TFJ_PSSECRET_DIR "/var/run/secrets/tfjob-ps"
#define TFJ_PSSECRET_FILE "/var/run/secrets/tfjob-ps/token"
#define TFJ_PSSECRET_ENV "TFJOB_PS_SECRET_FILE"

/* "<job>-ps-secret" into out; TFJ_ETOOBIG when it does not fit. */
int tfj_pssecret_name(char *out, size_t outlen, const struct tfj_tfjob *job);

/*
 * The Secret for job, holding rnd (TFJ_PSSECRET_BYTES bytes) as hex.
 * operator_name NULL = the default (podspec.h).
 */
int tfj_pssecret_body(cJSON **out, const struct tfj_tfjob *job, const char *operator_name,
		      const uint8_t rnd[TFJ_PSSECRET_BYTES]);

/* Wipes the token in a body from tfj_pssecret_body and deletes it. Accepts NULL. */
void tfj_pssecret_body_free(cJSON *s);

/* Adds the volume to pod spec `spec` and the mount and env to its container `ctr`. */
int tfj_pssecret_pod(cJSON *spec, cJSON *ctr, const struct tfj_tfjob *job);

#endif
