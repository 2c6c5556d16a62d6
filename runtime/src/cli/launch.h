/*
 * launch.h - `tfjob-runtime launch`: a whole training cluster as local
 * processes on 127.0.0.1.
 *
 * Picks free loopback ports, writes one TF_CONFIG per task with the shared
 * codec (tfj_tfconfig_encode), starts every task as `<exe> train <flags>`,
 * streams their output prefixed with the task ("[worker:1] ..."), and
 * behaves like the operator's ExitCode restart policy: a task that exits
 * with a retryable code (128-255, tfj/exitcode.h) is restarted (up to
 * max_restarts), a permanent failure stops the whole cluster. When the
 * coordinator has finished it prints the figures: final test accuracy,
 * examples/s, wall time, and one `TFJ_RESULT {...}` line.
 *
 * A chaos hook kills one task with SIGKILL after some seconds, or once the
 * coordinator reported a given global step (optionally letting the restart
 * policy bring it back); the integration tests use the step form, which
 * lands mid-run however fast the machine trains, to show that training
 * survives a lost worker or ps.
 */
#ifndef TFJ_LAUNCH_H
#define TFJ_LAUNCH_H

#include <stdint.h>
#include <stdio.h>

#define TFJ_LAUNCH_MAX_TASKS 64

struct tfj_launch_opts {
	int nps, nworkers, chief, evaluator;
	double timeout_s;        /* whole run; 0 = 1800 s */
	const char *exe;         /* runtime binary ("/proc/self/exe" from the CLI) */
	int nfwd;                /* flags handed to every task */
	char *const *fwd;
	char kill_task[32];      /* e.g. "worker:1"; "" = no chaos */
	double kill_after_s;
	int64_t kill_at_step;    /* > 0: kill once the coordinator reports this step instead */
	int max_restarts;        /* per task, for retryable exits */
	int quiet;               /* echo only TFJ_PROGRESS lines and errors */
	FILE *out;               /* where output goes (stdout when NULL) */
};

struct tfj_launch_result {
	int exit_code;           /* 0, or the code of the task that failed the run */
	int have_final;          /* the coordinator printed its final record */
	double test_accuracy;
	double examples_per_sec;
	int64_t step;
	double wall_s;
	int restarts;            /* restarts done by the policy */
	double eval_accuracy;    /* last evaluator record (-1 when none) */
};

/* Parses launch's own flags; everything else is forwarded to the tasks. */
int tfj_launch_parse(struct tfj_launch_opts *o, int argc, char **argv);

/* Runs the cluster; returns 0 or a TFJ_E* code for launch's own failures. */
int tfj_launch_run(const struct tfj_launch_opts *o, struct tfj_launch_result *res);

/* Frees what tfj_launch_parse allocated. */
void tfj_launch_opts_free(struct tfj_launch_opts *o);

#endif
