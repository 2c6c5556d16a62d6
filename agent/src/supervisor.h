/*
 * supervisor.h - runs the training command as a child and acts as PID 1.
 *
 * The supervisor
 *  - starts the command in its own process group, with stdout and stderr
 *    piped through the agent (passed on unchanged, and shown to a callback
 *    for progress parsing);
 *  - forwards SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1 and SIGUSR2 to the
 *    child's process group (so a shell wrapper's children hear them too);
 *  - after the first SIGTERM/SIGINT/SIGQUIT gives the child `grace_s`
 *    seconds, then SIGKILLs the group;
 *  - reaps every child it is parent of, orphans re-parented to it included
 *    (it marks itself a child subreaper, which matters when it is not PID 1);
 *  - reports the exit status as a shell does: the exit code, or 128 + N for
 *    death by signal N; 127 when the command is not found, 126 when it
 *    cannot be executed.
 *
 * Signals arrive through a signalfd, so they must be blocked in every
 * thread: call tfj_supervisor_block_signals() before creating any thread.
 */
#ifndef TFJ_SUPERVISOR_H
#define TFJ_SUPERVISOR_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "progress.h"

#define TFJ_SUPERVISOR_GRACE_DEFAULT 25.0  /* below Kubernetes' 30 s default */
#define TFJ_SUPERVISOR_DRAIN_DEFAULT 2.0

/* Blocks the handled signals in the calling thread (and the threads it
 * creates later) and ignores SIGPIPE. The child gets them back at exec. */
void tfj_supervisor_block_signals(void);

/*
 * A non-blocking signalfd for SIGTERM, SIGINT and SIGQUIT, for waiting that
 * happens before the child starts (peer wait). Caller closes it.
 */
int tfj_supervisor_cancel_fd(void);

/* Shell-style exit code of a waitpid() status: code, or 128 + signal. */
int tfj_supervisor_exit_code(int wait_status);

/* 1 for the signals that start the grace period. */
int tfj_supervisor_is_terminating(int sig);

struct tfj_supervisor_opts {
	char *const *argv;      /* command, NULL-terminated; argv[0] searched in PATH */
	double grace_s;         /* SIGTERM -> SIGKILL delay */
	double drain_s;         /* output read after the child exited (grandchildren) */
	int out_fd, err_fd;     /* where the child's stdout/stderr go (1, 2) */
	int signal_group;       /* 1: forward to the process group, 0: to the child only */
	int tick_ms;            /* on_tick period; 0 = never */
	/* Called for every chunk of output after it was passed through. */
	void (*on_output)(void *ctx, enum tfj_progress_stream s, const char *data, size_t len);
	void (*on_tick)(void *ctx);
	void *ctx;
	/*
	 * With use_stop_fd: stop_fd turning readable (the operator's stop,
	 * reporter.h) ends the command as a terminating signal would (SIGTERM
	 * to the group, SIGKILL after grace_s), but the result says `stopped`
	 * so the caller can call it a success.
	 */
	int use_stop_fd;
	int stop_fd;
};

struct tfj_supervisor_result {
	int exit_code;          /* 0-255 */
	int signal;             /* signal that killed the child, 0 if it exited */
	int exec_errno;         /* non-zero: the command could not be started */
	int received;           /* first terminating signal the agent got, 0 if none */
	int killed;             /* the grace period ran out and the group was SIGKILLed */
	int stopped;            /* stop_fd asked to end the command while it ran */
	pid_t pid;
	uint64_t orphans_reaped;
};

/*
 * Runs the command to completion. Returns 0 when the command ran (whatever
 * its exit status) or could not be found/executed (exec_errno set, exit
 * code 127/126), and a negative code when the agent itself failed (pipe,
 * fork, signalfd), with a detail.
 */
int tfj_supervisor_run(struct tfj_supervisor_result *out, const struct tfj_supervisor_opts *o);

#endif
