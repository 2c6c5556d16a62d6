/*
 * pssecret.h - the per-job ps secret: the Secret the operator creates for
 * each TFJob and how its pods get it.
 *
 * Every task of a job sends the secret on each call to a parameter server
 * and the ps refuses calls without it (runtime/src/wire/psauth.h), so a pod
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
 * The same Secret carries the job's TLS material for the ps traffic
 * (docs/security.md, "Training traffic"): `ca.crt`, a CA made for this job
 * alone (its key is thrown away once it signed), and `tls.crt`/`tls.key`,
 * the ps serving certificate it signed, whose subjectAltNames are the ps
 * hosts of TF_CONFIG without the port (tfj_pssecret_tls_names). A ps serves
 * TLS with tls.crt/tls.key; workers, chief and evaluator verify the ps
 * against ca.crt and the host they dial, and send the token inside TLS.
 * The certificate lives as long as the Secret (TFJ_PSSECRET_CERT_LIFE_S,
 * far beyond any job): it is never rotated, the job is its lifetime.
 *
 * In the pod: a secret volume `tfjob-ps-secret` (mode 0444: the container
 * may run as any user) mounted read-only at /var/run/secrets/tfjob-ps in
 * the tensorflow container, TFJOB_PS_SECRET_FILE=/var/run/secrets/
 * tfjob-ps/token and TFJOB_PS_TLS_DIR=/var/run/secrets/tfjob-ps in its env
 * (replacing any of the template's). A stock TensorFlow image ignores them.
 *
 * Pure: no I/O; the random bytes and the certificates (made at the edge,
 * app/apply.c, with tfj/certgen.h) come in as arguments.
 * Ownership: *out is a new cJSON tree the caller deletes with
 * tfj_pssecret_body_free (which wipes the token and the key).
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
#define TFJ_PSSECRET_TLS_ENV "TFJOB_PS_TLS_DIR"
#define TFJ_PSSECRET_CA_KEY "ca.crt"
#define TFJ_PSSECRET_CERT_KEY "tls.crt"
#define TFJ_PSSECRET_TLSKEY_KEY "tls.key"
/* The CA's and the certificate's lifetime: ten years, longer than any job. */
#define TFJ_PSSECRET_CERT_LIFE_S (3650LL * 86400)
/* Longest subjectAltName tfj_pssecret_tls_names writes, NUL included. */
#define TFJ_PSSECRET_SAN_MAX 254
/*
 * Exact ps names in the certificate, at most: tfj/certgen.h's cap. A job
 * with more parameter servers gets one wildcard for its namespace's
 * services instead, which keeps the Secret small (a few KiB whatever the
 * job); the CA is the job's own, so the wildcard is trusted by this job's
 * pods only.
 */
#define TFJ_PSSECRET_MAX_SANS 8

/* The job's ps certificate, PEM (borrowed). */
struct tfj_pssecret_tls {
	const char *ca_pem;
	const char *cert_pem;
	const char *key_pem;
};

/* "<job>-ps-secret" into out; TFJ_ETOOBIG when it does not fit. */
int tfj_pssecret_name(char *out, size_t outlen, const struct tfj_tfjob *job);

/*
 * The names the ps certificate is made for: the host of each ps address in
 * TF_CONFIG (tfj_names_host without ":port"; `domain` as the pods get it,
 * NULL or "" for the short form), or "*.<ns>.svc[.<domain>]" when the job
 * has no ps or more than TFJ_PSSECRET_MAX_SANS. *n is set to how many.
 */
int tfj_pssecret_tls_names(char names[TFJ_PSSECRET_MAX_SANS][TFJ_PSSECRET_SAN_MAX], size_t *n,
			   const struct tfj_tfjob *job, const char *domain);

/*
 * The Secret for job, holding rnd (TFJ_PSSECRET_BYTES bytes) as hex and the
 * ps certificate `tls` (all three PEMs required; TFJ_EINVAL otherwise).
 * operator_name NULL = the default (podspec.h).
 */
int tfj_pssecret_body(cJSON **out, const struct tfj_tfjob *job, const char *operator_name,
		      const uint8_t rnd[TFJ_PSSECRET_BYTES], const struct tfj_pssecret_tls *tls);

/* Wipes the token and the key in a body from tfj_pssecret_body and deletes it. Accepts NULL. */
void tfj_pssecret_body_free(cJSON *s);

/* Adds the volume to pod spec `spec` and the mount and env to its container `ctr`. */
int tfj_pssecret_pod(cJSON *spec, cJSON *ctr, const struct tfj_tfjob *job);

#endif
