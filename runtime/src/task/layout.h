/*
 * layout.h - the task layout every task derives from the same flags: the
 * model's variables, their placement on the ps tasks and a fingerprint of
 * everything two tasks must agree on (the layout hash carried by every
 * request; a mismatch is refused with FAILED_PRECONDITION).
 *
 * (Named apart from the operator's plan, operator/src/tfjob/plan.h, so the
 * two binaries share no type or include guard name.)
 *
 * Ownership: a layout owns its arrays; tfj_layout_free().
 */
#ifndef TFJ_LAYOUT_H
#define TFJ_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "compute/model.h"
#include "task/placement.h"
#include "task/rtconfig.h"

struct tfj_layout {
	size_t nvars;
	struct tfj_tensor_info *vars; /* nvars, in model order */
	size_t *counts;               /* nvars element counts */
	size_t total;                 /* elements over all variables */
	struct tfj_placement place;
	uint64_t layout_hash;
};

int tfj_layout_build(struct tfj_layout *out, const struct tfj_rtconfig *cfg);
void tfj_layout_free(struct tfj_layout *p);

#endif
