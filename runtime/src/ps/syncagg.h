/*
 * syncagg.h - gradient aggregation of one ps shard in synchronous mode,
 * after TensorFlow's SyncReplicasOptimizer.
 *
 * The shard is at step s. A gradient tagged with step s from a replica that
 * has not contributed to s yet is summed into the accumulator; a gradient
 * tagged with any other step is stale (computed on parameters that no longer
 * exist) and dropped; a second gradient from the same replica for s is a
 * duplicate (a restarted worker re-sending) and dropped too. When k
 * gradients are in (replicas_to_aggregate), their mean is applied and the
 * shard moves to s + 1. With k < n replicas the slowest n - k are the
 * "backup workers": their late gradients arrive stale and are dropped, so
 * the step never waits for them.
 *
 * The caller checks first (tfj_syncagg_check), validates and accumulates
 * the data, then commits, so a malformed request never half-counts.
 *
 * Ownership: the aggregator owns its accumulator; tfj_syncagg_free().
 */
#ifndef TFJ_SYNCAGG_H
#define TFJ_SYNCAGG_H

#include <stddef.h>
#include <stdint.h>

enum tfj_syncagg_verdict {
	TFJ_SYNCAGG_ACCEPT = 0,   /* will be aggregated into the current step */
	TFJ_SYNCAGG_STALE = 1,    /* other step: drop */
	TFJ_SYNCAGG_DUPLICATE = 2 /* replica already counted for this step: drop */
};

struct tfj_syncagg {
	size_t n;          /* floats per gradient */
	float *sum;        /* n floats */
	int64_t step;      /* step being aggregated */
	uint32_t k;        /* gradients per step */
	uint32_t nrep;     /* replicas */
	uint8_t *seen;     /* nrep flags */
	uint32_t count;    /* gradients in the accumulator */
	uint64_t dropped_stale, dropped_dup;
};

/* 1 <= k <= nreplicas <= 65536, n >= 1. */
int tfj_syncagg_init(struct tfj_syncagg *a, size_t n, uint32_t k, uint32_t nreplicas,
		     int64_t step);

/* What would happen to a gradient of `step` from `replica` (counts drops). */
enum tfj_syncagg_verdict tfj_syncagg_check(struct tfj_syncagg *a, int64_t step,
					   uint32_t replica);

/*
 * Adds `count` floats, stored little-endian at `bytes` (any alignment), into
 * sum[off..off+count). The caller has checked the bounds.
 */
void tfj_syncagg_add(struct tfj_syncagg *a, size_t off, const uint8_t *bytes, size_t count);

/* Counts the replica's gradient; returns 1 when the step is complete. */
int tfj_syncagg_commit(struct tfj_syncagg *a, uint32_t replica);

/* Turns the sum into the mean of the committed gradients; returns it. */
const float *tfj_syncagg_mean(struct tfj_syncagg *a);

/* Moves to the next step (or `step` when restoring) with an empty accumulator. */
void tfj_syncagg_reset(struct tfj_syncagg *a, int64_t step);

void tfj_syncagg_free(struct tfj_syncagg *a);

#endif
