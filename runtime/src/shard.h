/*
 * shard.h - the state of one parameter server: its slices of the model,
 * their optimizer state, the step counter and (sync mode) the gradient
 * aggregator. Pure logic, no transport: psserver.c feeds it decoded
 * requests, the tests feed it directly.
 *
 * Async mode applies every valid gradient on arrival and counts a step per
 * push. Sync mode hands gradients to the aggregator (syncagg.h) and applies
 * the mean once replicas_to_aggregate of them are in.
 *
 * Ownership: the shard owns its arrays and borrows the plan and config,
 * which must outlive it; tfj_shard_free().
 */
#ifndef TFJ_SHARD_H
#define TFJ_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "checkpoint.h"
#include "optim.h"
#include "plan.h"
#include "rtconfig.h"
#include "syncagg.h"
#include "tfj_runtime.pb-c.h"

struct tfj_shard {
	uint32_t id;
	const struct tfj_plan *plan;
	const struct tfj_rtconfig *cfg;
	size_t nslices;
	const struct tfj_place_slice **slices; /* this ps's slices, in plan order */
	size_t n;                  /* floats held */
	float *param;              /* n floats */
	float *state;              /* optimizer state, per slice at state_off[i] */
	size_t *state_off;
	float *grad;               /* n floats of scratch (aligned copy of a push) */
	int initialized;
	int finished;
	int64_t step;              /* global step of this shard */
	int64_t opt_t;             /* updates the optimizer state has seen */
	uint64_t version;          /* bumps whenever param changes */
	struct tfj_syncagg agg;    /* sync mode only */
	uint64_t applied, stale, duplicate;
};

int tfj_shard_init(struct tfj_shard *s, const struct tfj_plan *plan,
		   const struct tfj_rtconfig *cfg, uint32_t id);
void tfj_shard_free(struct tfj_shard *s);

/* Checks that `slices` match this shard's table exactly (var, offset, count, bytes). */
int tfj_shard_check_slices(const struct tfj_shard *s, Tfj__Runtime__V1__Slice *const *slices,
			   size_t n);

/* Sets the values (Init): resets optimizer state and the aggregator. */
int tfj_shard_load(struct tfj_shard *s, Tfj__Runtime__V1__Slice *const *slices, size_t n,
		   int64_t step);

/* Takes this shard's part of a checkpoint of the whole model. */
int tfj_shard_restore(struct tfj_shard *s, const struct tfj_ckpt *ck);

/*
 * Handles one gradient push; *result is the PushResult. A NaN/Inf gradient
 * is refused with TFJ_ENUMERIC before anything changes.
 */
int tfj_shard_push(struct tfj_shard *s, const Tfj__Runtime__V1__PushRequest *req,
		   Tfj__Runtime__V1__PushResult *result);

/* Fills msgs[i] (nslices entries) to describe `values` (n floats) as this shard's slices. */
void tfj_shard_describe(const struct tfj_shard *s, Tfj__Runtime__V1__Slice *msgs,
			Tfj__Runtime__V1__Slice **ptrs, const float *values);

#endif
