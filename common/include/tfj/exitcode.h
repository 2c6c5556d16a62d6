/*
 * exitcode.h - what a task's exit status means, for every binary.
 *
 * This is the one contract between the processes of a job about exit codes:
 * tfjob-runtime ends every failure path in one of the codes below, the agent
 * uses the same values for its own failures (and the shell's 126/127 when
 * the command cannot be run), and the operator's ExitCode restart policy
 * decides with tfj_exitcode_retryable() whether a restart can help.
 *
 * The rule: 1-127 is a permanent failure (restarting the same pod with the
 * same input cannot help), 128-255 is retryable (a restart may succeed, e.g.
 * once a peer is back). Codes 129-159 are also what a shell reports for a
 * task killed by a signal (128 + signal number), which the rule rightly
 * treats as retryable; the retryable codes below avoid the common ones
 * (137 SIGKILL, 139 SIGSEGV, 143 SIGTERM) so the two stay distinguishable in
 * logs. docs/runtime-exit-codes.md and docs/agent.md are the tables for users.
 */
#ifndef TFJ_EXITCODE_H
#define TFJ_EXITCODE_H

/*
 * One X-macro table: symbol, value, short name; the meaning is the comment.
 * The values are written out because they are a contract with running pods
 * and with users' scripts: never renumber one. 126 and 127 are the shell's
 * codes for a command that cannot be executed or does not exist; the agent
 * reports them itself because it runs the command without a shell.
 */
#define TFJ_EXIT_TABLE(X)                                                            \
	X(TFJ_EXIT_OK,          0,   "ok")          /* finished */                    \
	/* Permanent (1-127). */                                                      \
	X(TFJ_EXIT_INTERNAL,    1,   "internal")    /* a bug, unexpected state */     \
	X(TFJ_EXIT_USAGE,       2,   "usage")       /* bad flag, bad TF_CONFIG */     \
	X(TFJ_EXIT_DATA,        3,   "data")        /* dataset missing/malformed */   \
	X(TFJ_EXIT_NUMERIC,     4,   "numeric")     /* loss or params NaN/Inf */      \
	X(TFJ_EXIT_MISMATCH,    5,   "mismatch")    /* peers disagree on layout */    \
	X(TFJ_EXIT_CHECKPOINT,  6,   "checkpoint")  /* checkpoint corrupt/unfit */    \
	X(TFJ_EXIT_DEVICE,      7,   "device")      /* compute device unusable */     \
	X(TFJ_EXIT_NOEXEC,      126, "noexec")      /* command cannot be executed */  \
	X(TFJ_EXIT_NOTFOUND,    127, "notfound")    /* command not found */           \
	/* Retryable (128-255). */                                                    \
	X(TFJ_EXIT_UNAVAILABLE, 138, "unavailable") /* peer unreachable too long */   \
	X(TFJ_EXIT_IO,          140, "io")          /* transient I/O, port in use */  \
	X(TFJ_EXIT_NOMEM,       142, "nomem")       /* out of memory */               \
	X(TFJ_EXIT_ABORTED,     144, "aborted")     /* SIGINT/SIGTERM before done */

enum tfj_exit {
#define TFJ_EXIT_ENUM(sym, val, name) sym = (val),
	TFJ_EXIT_TABLE(TFJ_EXIT_ENUM)
#undef TFJ_EXIT_ENUM
};

/* The bounds of the retryable range (inclusive). */
#define TFJ_EXIT_RETRYABLE_MIN 128
#define TFJ_EXIT_RETRYABLE_MAX 255

/*
 * 1 if the operator's ExitCode policy restarts a task that exited with
 * `code` (128-255: the retryable codes above and death by a signal), else 0.
 */
int tfj_exitcode_retryable(int code);

/*
 * Maps a negative TFJ_E* error code (err.h) to the exit code of the failure
 * class it belongs to; 0 maps to TFJ_EXIT_OK and unknown codes to
 * TFJ_EXIT_INTERNAL.
 */
int tfj_exitcode_from_err(int err);

/* Stable short name of an exit code ("usage", "unavailable", ...); "unknown"
 * for a code not in the table. Static storage. */
const char *tfj_exitcode_name(int code);

#endif
