/*
 * pssecret.h - the per-job ps secret: the Secret the operator creates for
 * each TFJob and how its pods get it.
 *
 * Every task of a job sends the secret on each call to a parameter server
 * and the ps refuses calls without it (runtime/src/wire/psauth.h), so a pod
 * outside the job cannot Pull the weights, Push, Init or Finish a ps even
 * where no NetworkPolicy is enforced (docs/security.md).
 *
 * The Secret (type Opaque, immutable) holds one key,
 * `token`: 32 random bytes from the kernel (getrandom, at the edge:
 * app/apply.c) written as 64 hex digits, because the runtime sends it as
 * a header value. It carries the job-name and operator-name labels and the
 * TFJob's controller reference, so it is deleted with the job. It is never
 * logged.
 *
 * Its name: the operator POSTs it with `metadata.generateName`
 * "<job>-ps-" (tfj_pssecret_prefix), so the API server picks a name that
 * nobody can have taken before, and records the name it got in the TFJob's
 * status.psSecretName; the pods mount the recorded name, so no pod is made
 * before it is recorded (the plan that makes it creates its pods right
 * after the record, tfjob/plan.h). A Secret someone else made can
 * therefore never be mistaken for the job's: the operator may not read
 * Secrets, and needs no look at one. Jobs started by an operator that
 * used the fixed name `<job>-ps-secret` (TFJ_PSSECRET_LEGACY_SUFFIX) keep
 * it: the planner records that name for a job that has pods and no
 * recorded name, so its running and new pods share one token.
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
/* Every name the job's Secret may have starts with "<job>" and this. */
#define TFJ_PSSECRET_SUFFIX "-ps-"
/* The fixed name of the Secret of a job an older operator started. */
#define TFJ_PSSECRET_LEGACY_SUFFIX "-ps-secret"
/* A Secret's name, NUL included (a DNS-1123 subdomain: 253 characters). */
#define TFJ_PSSECRET_NAME_MAX 254
/*
 * The API server cuts a generateName to this many characters before it
 * appends its 5 random ones, so the prefix of a long job's Secret is cut
 * the same way here (tfj_pssecret_prefix).
 */
#define TFJ_PSSECRET_GENERATE_MAX 58
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

/*
 * The generateName of the job's Secret, "<job>-ps-", cut to
 * TFJ_PSSECRET_GENERATE_MAX characters as the API server cuts it; every
 * name the Secret may get starts with it. TFJ_ETOOBIG when out is short.
 */
int tfj_pssecret_prefix(char *out, size_t outlen, const char *job_name);

/* "<job>-ps-secret" (an older operator's fixed name); TFJ_ETOOBIG when it does not fit. */
int tfj_pssecret_legacy_name(char *out, size_t outlen, const char *job_name);

/*
 * Whether `name` can be the Secret of job `job_name`: a DNS-1123
 * subdomain that starts with tfj_pssecret_prefix. 0, or TFJ_EINVAL with
 * why (a sentence, cut to whylen) saying what is wrong.
 */
int tfj_pssecret_name_check(char *why, size_t whylen, const char *job_name, const char *name);

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
 * `name` NULL or "": the body has metadata.generateName
 * (tfj_pssecret_prefix) and no name, for the API server to pick one;
 * otherwise it is named `name` (a recorded name made again). operator_name
 * NULL = the default (podspec.h).
 */
int tfj_pssecret_body(cJSON **out, const struct tfj_tfjob *job, const char *operator_name,
		      const char *name, const uint8_t rnd[TFJ_PSSECRET_BYTES],
		      const struct tfj_pssecret_tls *tls);

/* Wipes the token and the key in a body from tfj_pssecret_body and deletes it. Accepts NULL. */
void tfj_pssecret_body_free(cJSON *s);

/*
 * Adds the volume of Secret `name` to pod spec `spec` and the mount and
 * env to its container `ctr`.
 */
int tfj_pssecret_pod(cJSON *spec, cJSON *ctr, const char *name);

#endif
