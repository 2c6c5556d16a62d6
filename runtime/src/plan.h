/*
 * plan.h - the training plan every task derives from the same flags: the
 * model's variables, their placement on the ps tasks and a fingerprint of
 * everything two tasks must agree on (the layout hash carried by every
 * request; a mismatch is refused with FAILED_PRECONDITION).
 *
 * Ownership: a plan owns its arrays; tfj_plan_free().
 */
#ifndef TFJ_PLAN_H
#define TFJ_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "placement.h"
#include "rtconfig.h"

struct tfj_plan {
	size_t nvars;
	struct tfj_tensor_info *vars; /* nvars, in model order */
	size_t *counts;               /* nvars element counts */
	size_t total;                 /* elements over all variables */
	struct tfj_placement place;
	uint64_t layout_hash;
};

int tfj_plan_build(struct tfj_plan *out, const struct tfj_rtconfig *cfg);
void tfj_plan_free(struct tfj_plan *p);

#endif
