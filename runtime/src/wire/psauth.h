/*
 * psauth.h - the per-job ps secret: every ps call carries it, every ps
 * checks it.
 *
 * The operator creates one Secret per TFJob (random, never logged) and
 * mounts it into the job's pods; TFJOB_PS_SECRET_FILE names the file.
 * Clients send it as `authorization: Bearer <secret>` metadata on every
 * call, and the ps compares it in constant time before it decodes the
 * request, so a pod that is not part of the job can neither Pull the
 * weights nor Push, Init or Finish (docs/runtime-protocol.md,
 * docs/security.md). This does not depend on the network: it holds where
 * no NetworkPolicy is enforced.
 *
 * Without TFJOB_PS_SECRET_FILE (local launch, tests) the check is off and
 * the ps says so in its log. A file that is named but cannot be read, or
 * holds something that cannot be a secret, is an error: a job whose
 * secret went missing must not fall back to accepting anyone.
 *
 * The check is one function over the call's metadata
 * (tfj_psauth_check_md), so any transport that has the metadata of a call
 * (unary or a stream's first message) can call it.
 */
#ifndef TFJ_PSAUTH_H
#define TFJ_PSAUTH_H

#include <stddef.h>
#include <stdint.h>

#include <grpc/grpc.h>

/* The environment variable naming the secret file. */
#define TFJ_PSAUTH_ENV "TFJOB_PS_SECRET_FILE"
/* Bounds of a secret: printable ASCII without spaces (it travels as a header value). */
#define TFJ_PSAUTH_MIN_BYTES 16
#define TFJ_PSAUTH_MAX_BYTES 512

struct tfj_psauth {
	char *secret;      /* NULL: check off (owned, wiped on free) */
	size_t len;
	uint64_t accepted; /* calls that carried the secret */
	uint64_t refused;  /* calls without it or with a wrong one */
};

/*
 * Loads the secret from `path`; NULL or "" turns the check off. TFJ_EINVAL
 * for a secret that is too short, too long or not printable; the errors of
 * tfj_file_read_secret otherwise. The detail never contains the secret.
 */
int tfj_psauth_load(struct tfj_psauth *a, const char *path);
/* tfj_psauth_load(getenv(TFJ_PSAUTH_ENV)). */
int tfj_psauth_from_env(struct tfj_psauth *a);
void tfj_psauth_free(struct tfj_psauth *a);

/* Whether a secret is loaded. */
int tfj_psauth_on(const struct tfj_psauth *a);

/*
 * Checks one `authorization` value ("Bearer <secret>"; val NULL: none sent)
 * and counts the outcome. 0 when it matches or the check is off,
 * TFJ_EAUTH otherwise. The comparison takes the same time wherever the
 * first differing byte is.
 */
int tfj_psauth_check(struct tfj_psauth *a, const char *val, size_t len);
/* tfj_psauth_check on the `authorization` entry of a call's metadata. */
int tfj_psauth_check_md(struct tfj_psauth *a, const grpc_metadata_array *md);

#endif
