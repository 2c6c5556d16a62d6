/*
 * exitcode.h - what tfjob-runtime's exit status means.
 *
 * The operator's ExitCode restart policy (and the agent) read the exit status
 * of a task: 1-127 is a permanent failure (restarting the same pod with the
 * same input cannot help), 128-255 is retryable (a restart may succeed, e.g.
 * once a peer is back). Every failure path of the runtime ends in one of the
 * codes below; docs/runtime-exit-codes.md is the table for users.
 *
 * Codes 129-159 are also what a shell reports for a task killed by a signal
 * (128 + signal number), which the policy rightly treats as retryable; the
 * runtime's own retryable codes avoid the common ones (137 SIGKILL, 139
 * SIGSEGV, 143 SIGTERM) so the two stay distinguishable in logs.
 */
#ifndef TFJ_EXITCODE_H
#define TFJ_EXITCODE_H

enum tfj_exit {
	TFJ_EXIT_OK = 0,
	/* Permanent (1-127). */
	TFJ_EXIT_INTERNAL = 1,    /* a bug or an unexpected internal state */
	TFJ_EXIT_USAGE = 2,       /* unknown flag, bad value, malformed TF_CONFIG */
	TFJ_EXIT_DATA = 3,        /* dataset missing or malformed */
	TFJ_EXIT_NUMERIC = 4,     /* loss or parameters became NaN/Inf */
	TFJ_EXIT_MISMATCH = 5,    /* peers disagree on model/placement/protocol */
	TFJ_EXIT_CHECKPOINT = 6,  /* checkpoint present but corrupt or incompatible */
	TFJ_EXIT_DEVICE = 7,      /* the requested compute device is unusable */
	/* Retryable (128-255). */
	TFJ_EXIT_UNAVAILABLE = 138, /* a peer stayed unreachable past the deadline */
	TFJ_EXIT_IO = 140,          /* transient I/O failure (checkpoint write, port) */
	TFJ_EXIT_NOMEM = 142,       /* out of memory */
	TFJ_EXIT_ABORTED = 144      /* interrupted (SIGINT/SIGTERM) before finishing */
};

/* 1 if the operator's ExitCode policy would restart a task with this code. */
static inline int tfj_exit_retryable(int code)
{
	return code >= 128 && code <= 255;
}

/*
 * Maps a negative TFJ_E* error code (err.h) to the exit code of the failure
 * class it belongs to; 0 maps to TFJ_EXIT_OK. Implemented in exitcode.c.
 */
int tfj_exitcode_from_err(int err);

/* Stable short name of an exit code ("usage", "unavailable", ...). */
const char *tfj_exitcode_name(int code);

#endif
