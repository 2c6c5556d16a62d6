/*
 * shard.h - the state of one parameter server: its slices of the model,
 * their optimizer state, the step counter and (sync mode) the gradient
 * aggregator. Pure logic, no transport: the ps server (service.c) feeds it
 * decoded requests, the tests feed it directly.
 *
 * Async mode applies every valid gradient on arrival and counts a step per
 * push. A push may come in parts (PushRequest.more, docs/runtime-protocol.md):
 * each part is a contiguous run of the shard's buffer (its slices laid end
 * to end; a part may begin or end inside a slice), applied at once; the
 * step is counted by the part that has `more` false. Sync mode hands
 * gradients to the aggregator (syncagg.h) and applies the mean once
 * replicas_to_aggregate of them are in.
 *
 * Tensors arrive as split-decoded wire tensors (wire.h), still in the
 * received gRPC slices. A push is read from there twice, in place (runs of
 * floats at whatever alignment the message put them; only a float split
 * across two slices is copied): once to refuse NaN/Inf before anything
 * changes, once to apply the update (or add to the sync aggregate); the
 * gradient is never copied. Init goes through the
 * gradient scratch, so a bad value leaves the parameters as they were.
 *
 * Ownership: the shard owns its arrays and borrows the layout and config,
 * which must outlive it; tfj_shard_free(). A prewrite hook may replace
 * `param` with a buffer it owns (service.c does, so that Pull answers can
 * send the parameters without a snapshot copy); it must then set `param`
 * to NULL before tfj_shard_free().
 */
#ifndef TFJ_SHARD_H
#define TFJ_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "data/checkpoint.h"
#include "compute/optim.h"
#include "task/layout.h"
#include "task/rtconfig.h"
#include "ps/syncagg.h"
#include "tfj_runtime.pb-c.h"
#include "wire/wire.h"
#include "wire/wiresplit.h"

/* Most floats handled per step when a push is read in place from the received slices. */
#define TFJ_SHARD_CHUNK 8192

struct tfj_shard {
	uint32_t id;
	const struct tfj_layout *layout;
	const struct tfj_rtconfig *cfg;
	size_t nslices;
	const struct tfj_place_slice **slices; /* this ps's slices, in layout order */
	size_t n;                  /* floats held */
	float *param;              /* n floats */
	float *state;              /* optimizer state, per slice at state_off[i] */
	size_t *state_off;
	float *grad;               /* n floats of scratch (aligned copy of an Init) */
	int initialized;
	int finished;
	int64_t step;              /* global step of this shard */
	int64_t opt_t;             /* updates the optimizer state has seen */
	uint64_t version;          /* bumps whenever param changes */
	struct tfj_syncagg agg;    /* sync mode only */
	uint64_t applied, stale, duplicate;
	uint64_t parts;            /* async: parts applied that had more to come */
	/*
	 * Called right before `param` changes; it may point `param` at another
	 * buffer holding the same values. Nonzero = refuse the change. NULL = none.
	 */
	int (*prewrite)(struct tfj_shard *s, void *ud);
	void *prewrite_ud;
};

int tfj_shard_init(struct tfj_shard *s, const struct tfj_layout *layout,
		   const struct tfj_rtconfig *cfg, uint32_t id);
void tfj_shard_free(struct tfj_shard *s);

/* Checks that the tensors match this shard's table exactly (var, offset, count, bytes). */
int tfj_shard_check_slices(const struct tfj_shard *s, const struct tfj_wire_tensor *t,
			   size_t n);

/* Optimizer state floats per parameter: 0 sgd, 1 momentum, 2 Adam. */
size_t tfj_shard_state_k(const struct tfj_shard *s);

/*
 * Sets the values (Init) and resets the aggregator. With nst = 0 the
 * optimizer state starts afresh; otherwise st holds one state tensor per
 * slice (same var/offset/count, tfj_shard_state_k() blocks of count floats,
 * see InitRequest.state) that becomes the state, with optim_steps updates
 * seen. Non-finite values (and a negative Adam second moment) are refused
 * before anything changes.
 */
int tfj_shard_load(struct tfj_shard *s, const struct tfj_wire_tensor *t, size_t n,
		   int64_t step, const struct tfj_wire_tensor *st, size_t nst,
		   int64_t optim_steps);

/*
 * Takes this shard's part of a checkpoint of the whole model. The optimizer
 * state comes from the checkpoint when it holds state of this optimizer
 * for every variable of the shard (*with_state = 1); otherwise it starts
 * afresh (*with_state = 0), which is not an error.
 */
int tfj_shard_restore(int *with_state, struct tfj_shard *s, const struct tfj_ckpt *ck);

/*
 * Handles one gradient push: req carries the header fields (its own slices
 * list is ignored), t the n gradient tensors; *result is the PushResult. A
 * NaN/Inf gradient is refused with TFJ_ENUMERIC before anything changes.
 * In async training a push may be a part (req->more, or anything but the
 * whole slice list): t must then be one contiguous run of the shard's
 * buffer, each tensor inside one slice (a piece of a slice, or a whole
 * one); a refused part leaves earlier parts of the same step applied.
 * Sync training refuses parts (TFJ_EINVAL).
 */
int tfj_shard_push(struct tfj_shard *s, const Tfj__Runtime__V1__PushRequest *req,
		   const struct tfj_wire_tensor *t, size_t n,
		   Tfj__Runtime__V1__PushResult *result);

/* Fills msgs[i] (nslices entries) to describe `values` (n floats) as this shard's slices. */
void tfj_shard_describe(const struct tfj_shard *s, Tfj__Runtime__V1__Slice *msgs,
			Tfj__Runtime__V1__Slice **ptrs, const float *values);

/*
 * Fills msgs[i] (nslices entries) to describe the optimizer state, one
 * entry per slice (PullResponse.state). Returns the number of entries:
 * nslices, or 0 when the optimizer keeps no state.
 */
size_t tfj_shard_describe_state(const struct tfj_shard *s, Tfj__Runtime__V1__Slice *msgs,
				Tfj__Runtime__V1__Slice **ptrs);

#endif
