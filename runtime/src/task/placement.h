/*
 * placement.h - which parameter server holds which part of which variable.
 *
 * A placement is a list of slices (variable, element offset, count, ps) that
 * together cover every element of every variable exactly once. Two
 * strategies:
 *   - round-robin: variable i lives whole on ps i % nps (TensorFlow's
 *     replica_device_setter default). Cheap, but one large kernel makes one
 *     ps the bottleneck.
 *   - balanced (the default): the variables are laid end to end and cut
 *     into nps runs of nearly equal size, so a large tensor is split across
 *     ps tasks. Cut points snap to a variable boundary when that is within
 *     `min_slice` elements, so small tensors (biases) are never shredded.
 * Every task computes the placement from the same flags, so it is never
 * sent over the wire; its fingerprint is (see tfj_placement_hash).
 *
 * Ownership: a placement owns its slice array; tfj_placement_free().
 */
#ifndef TFJ_PLACEMENT_H
#define TFJ_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

#define TFJ_PLACE_MAX_PS 1024
#define TFJ_PLACE_MAX_VARS 4096

enum tfj_place_kind { TFJ_PLACE_BALANCED = 0, TFJ_PLACE_ROUND_ROBIN = 1 };

struct tfj_place_slice {
	uint32_t var;     /* variable index */
	size_t offset;    /* first element within the variable */
	size_t count;     /* elements, > 0 */
	uint32_t ps;      /* ps task holding it */
	size_t shard_off; /* offset of the slice inside its ps's flat buffer */
};

struct tfj_placement {
	struct tfj_place_slice *slices; /* ordered by (var, offset) */
	size_t nslices;
	size_t nps;
	size_t *ps_size;                /* nps entries: elements per ps */
};

/* Parses "balanced" or "round_robin" (also "round-robin", "rr"). */
int tfj_placement_parse(enum tfj_place_kind *out, const char *s);
const char *tfj_placement_name(enum tfj_place_kind kind);

/*
 * Builds the placement of nvars variables of counts[i] elements (each > 0)
 * over nps (1..TFJ_PLACE_MAX_PS) parameter servers.
 */
int tfj_placement_build(struct tfj_placement *out, const size_t *counts, size_t nvars,
			size_t nps, enum tfj_place_kind kind, size_t min_slice);

/* Elements of the most loaded ps divided by the mean (1.0 = perfect). */
double tfj_placement_imbalance(const struct tfj_placement *p);

/* FNV-1a over the slice table: equal placements, equal hashes. */
uint64_t tfj_placement_hash(const struct tfj_placement *p, uint64_t seed);

void tfj_placement_free(struct tfj_placement *p);

#endif
