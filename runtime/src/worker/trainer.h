/*
 * trainer.h - the worker, chief and evaluator tasks.
 *
 * Worker (and chief, which trains as replica 0): pull all shards, compute
 * the gradient of one batch of its data shard, push it to all shards,
 * repeat until the global step (ps 0's step) reaches max_steps or the
 * chief finished. In sync mode the pull after a push waits on the ps for
 * the next step (a parked Pull), as SyncReplicasOptimizer's token queue
 * makes workers wait.
 *
 * The coordinator (the chief, or worker 0 when there is none) additionally
 * initialises the ps tasks once (from the newest checkpoint when there is
 * one, else seeded), re-initialises a ps that comes back empty, saves
 * checkpoints every --checkpoint_steps / --checkpoint_secs, evaluates the
 * final model on the test set and sends Finish to every ps.
 *
 * Evaluator: waits on the ps for new steps (bounded by --eval_secs),
 * evaluates the pulled parameters on the test set and reports accuracy,
 * until the chief finishes.
 *
 * Unreachable peers are retried with exponential backoff (100 ms doubling
 * to 2 s) and given up after --peer_timeout with TFJ_EXIT_UNAVAILABLE.
 */
#ifndef TFJ_TRAINER_H
#define TFJ_TRAINER_H

#include "task/rtconfig.h"

/* Runs a worker or chief task; returns an exit code (tfj/exitcode.h). */
int tfj_trainer_main(const struct tfj_rtconfig *cfg);

/* Runs an evaluator task; returns an exit code. */
int tfj_evaluator_main(const struct tfj_rtconfig *cfg);

#endif
