/*
 * termmsg.h - the termination message Kubernetes copies into pod status.
 *
 * On exit the agent writes one compact JSON object to the container's
 * terminationMessagePath (/dev/termination-log by default):
 *   {"reason":"PeerWaitTimeout","exitCode":138,"retryable":true,
 *    "lastStep":1200,"signal":0,"message":"..."}
 * `retryable` is tfj_exitcode_retryable(exitCode) (tfj/exitcode.h).
 * `lastStep` is omitted when no progress was seen, `message` when empty.
 * `loss` and `accuracy` (the last progress record's, finite only) follow
 * when known: with lastStep they are the final figures, durable in the pod
 * status even when no report reached the operator (it falls back on them,
 * operator/src/tfjob/planprog.h).
 * Kubernetes keeps at most 4096 bytes, so the encoder shortens `message`
 * (never the other fields) until the whole document fits. Every string is
 * made valid UTF-8 first (invalid bytes become '?').
 *
 * Ownership: the caller owns every buffer; nothing is allocated for it.
 */
#ifndef TFJ_TERMMSG_H
#define TFJ_TERMMSG_H

#include <stddef.h>
#include <stdint.h>

#define TFJ_TERMMSG_MAX 4096u
#define TFJ_TERMMSG_DEFAULT_PATH "/dev/termination-log"

struct tfj_termmsg {
	const char *reason;     /* CamelCase, e.g. "Completed", "Error" */
	int exit_code;          /* the agent's exit code, 0-255 */
	int signal;             /* signal that killed the command, 0 if none */
	int has_last_step;
	int64_t last_step;
	const char *message;    /* free text, may be NULL */
	int has_loss, has_accuracy;
	double loss, accuracy;  /* written only when finite */
};

/*
 * Encodes into out (size outlen, at most TFJ_TERMMSG_MAX + 1 used) and
 * returns the length, or TFJ_ETOOBIG if even an empty message cannot fit
 * into min(outlen - 1, TFJ_TERMMSG_MAX) bytes.
 */
int tfj_termmsg_encode(char *out, size_t outlen, const struct tfj_termmsg *m);

/* Encodes and writes to `path` (truncating). TFJ_EIO with a detail on failure. */
int tfj_termmsg_write(const char *path, const struct tfj_termmsg *m);

/* Copies `in` replacing invalid UTF-8 and control bytes other than \n \t by '?'. */
size_t tfj_termmsg_sanitize(char *out, size_t outlen, const char *in);

#endif
