/*
 * trainloop.h - the step loops of a worker or chief task, and what a step
 * does around its compute: stop checks, the sync wait, the coordinator's
 * checkpoints, progress records and the step split (issue #18).
 *
 * Three loops, chosen by the configuration: the sequential one (pull,
 * compute, push; sync training always), --overlap=step (the transfer
 * thread pushes the last step and pulls the next while this one computes)
 * and --overlap=push (each layer pushed as the backward pass finishes it);
 * overlap.h says what each overlaps. trainer.c sets a struct tfj_train up
 * and runs one of them with tfj_trainloop_run().
 *
 * Ownership: struct tfj_train is the caller's (trainer.c frees what it
 * holds); the loops borrow it and leave the newest parameters in t->s.
 */
#ifndef TFJ_TRAINLOOP_H
#define TFJ_TRAINLOOP_H

#include <stddef.h>
#include <stdint.h>

#include <tfj/progrec.h>

#include "data/data.h"
#include "summary/summary.h"
#include "worker/towers.h"
#include "task/rtconfig.h"
#include "worker/session.h"

/* Checkpoint files are <dir>/model-<step>.ckpt (ckptdir.h). */
#define TFJ_TRAINLOOP_CKPT_PREFIX "model"

/*
 * One worker or chief task: what tfj_trainer_main's phases (trainer.c)
 * and the step loops share. The phases run in order: prepare_data,
 * prepare_coordinator (coordinator only), wait_for_ps, the loop
 * (tfj_trainloop_run), finish_coordinator (coordinator only). Each returns
 * 0 or a TFJ_E* code and may set s.exit_hint.
 */
struct tfj_train {
	const struct tfj_rtconfig *cfg;
	struct tfj_session s;
	struct tfj_dataset mine, test;   /* test: coordinator only */
	struct tfj_data_iter it;
	int it_ok;
	struct tfj_retry r;
	int64_t *min_step;               /* per ps: the step a pull waits for */
	int64_t max_steps, local;
	int pushed;                      /* has this task pushed at least once */
	int64_t computed;                /* batches computed (pushed or not) */
	/* Coordinator: where training starts, kept to refill a ps that restarts empty. */
	float **init_vals, **init_state;
	int64_t init_step, init_optim_steps;
	int64_t last_ckpt_step;
	double last_ckpt_t, t_train0;
	/* The current progress interval. */
	int64_t stale_total;
	double t_last, loss_acc;
	size_t loss_n, examples, ex_last;
	int64_t local_last;
	/*
	 * The step split (seconds, this interval and the whole run): compute,
	 * pull and push as measured where they run, wait = time the compute
	 * stood still for transfers (sequential: pull + push).
	 */
	double t_pull, t_comp, t_push, t_wait;
	double all_pull, all_comp, all_push, all_wait, all_t0;
	int64_t all_steps;
	int64_t parts;                   /* --overlap push: pushes sent, all parts counted */
	struct tfj_summary *sum;         /* coordinator with --logdir: TensorBoard run "train" */
	struct tfj_towers *towers;       /* --towers N > 1: the batch's gradients, in-graph */
};

/*
 * Runs the loop that t->cfg asks for until max_steps or the chief's
 * Finish, then logs the run's step split. 0 or the TFJ_E* error that
 * stopped it (with t->s.exit_hint set where known).
 */
int tfj_trainloop_run(struct tfj_train *t);

/*
 * Pulls parameters and optimizer state from every ps (retrying like any
 * pull) and writes them as one checkpoint in --checkpoint-dir, keeping the
 * newest few; path receives the file's name.
 */
int tfj_trainloop_save_checkpoint(struct tfj_session *s, char *path, size_t cap);

/* Ends a progress record and writes it to stdout at once (one fwrite, flushed). */
void tfj_trainloop_emit(struct tfj_progrec_writer *p);

/* Frees per-variable arrays (n of them); accepts NULL. */
void tfj_trainloop_free_values(float **v, size_t n);

#endif
