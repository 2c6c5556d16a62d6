/*
 * towers.h - in-graph replication inside one worker (`--towers N`).
 *
 * The seeds' second way to replicate: one client builds the model once per
 * compute device ("tower"); each tower computes the gradients of its slice
 * of the batch, the worker averages them and pushes one update per step. It
 * complements between-graph replication (one process per worker, what
 * TF_CONFIG describes): TF_CONFIG and the operator do not change.
 *
 * Here a tower is a compute handle and model of its own (its own workspace)
 * and a thread: tower 0 runs on the caller's thread, towers 1..N-1 on
 * threads of their own; all towers read the same parameters. Slices differ by at most
 * one row; the average is weighted by slice size, so the result is the
 * gradient and mean loss of the whole batch, as one tower computes them, up
 * to float rounding. On the CPU each tower runs OpenBLAS single-threaded on
 * its thread, so N towers use N cores.
 *
 * Ownership: tfj_towers_new returns an object freed by tfj_towers_free
 * (NULL accepted); it borrows nothing. Threading: tfj_towers_grad is called
 * by one thread at a time (the worker's step loop).
 */
#ifndef TFJ_TOWERS_H
#define TFJ_TOWERS_H

#include <stddef.h>
#include <stdint.h>

#include "compute/model.h"

#define TFJ_TOWERS_MAX 16

struct tfj_towers;

/* N (2..TFJ_TOWERS_MAX) towers of the model `spec` on compute `device`. */
int tfj_towers_new(struct tfj_towers **out, const struct tfj_model_spec *spec, const char *device,
		   int n);

void tfj_towers_free(struct tfj_towers *tw);

/*
 * tfj_model_grad over the towers: the batch x (n rows), y split between
 * them (a tower whose slice is empty sits out), the gradients averaged into
 * grads (caller-allocated, the model's shapes), the mean loss into *loss.
 * Errors as tfj_model_grad's (the first tower's error by tower order).
 * As tfj_model_grad_ready, ready(ud, ...) (may be NULL) is told of each
 * layer, last first; the towers finish together, so all come after the
 * average, on the caller's thread.
 */
int tfj_towers_grad(struct tfj_towers *tw, const float *const *params, const float *x,
		    const uint8_t *y, size_t n, float *const *grads, float *loss,
		    tfj_model_ready_fn ready, void *ud);

#endif
