/*
 * fuzz_tfjob.c - libFuzzer target for the TFJob decoder, and the planner
 * behind it: any input must decode or fail cleanly, and a decoded job must
 * plan without crashing (with no pods, then with one pod per replica the
 * plan asked for, so the observation path is exercised too).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tfjob/plan.h"
#include "tfjob/tfjob.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const cJSON *pods[64];
	struct tfj_tfjob job;
	struct tfj_plan plan, again;
	struct tfj_plan_input in;
	size_t i, n = 0;

	if (tfj_tfjob_decode(&job, (const char *)data, size))
		return 0;
	memset(&in, 0, sizeof(in));
	in.job = &job;
	in.now_ms = 1700000000000LL;
	if (tfj_plan_compute(&plan, &in) == 0) {
		for (i = 0; i < plan.n && n < 64; i++)
			if (plan.actions[i].kind == TFJ_ACT_CREATE_POD)
				pods[n++] = plan.actions[i].body;
		in.pods = pods;
		in.npods = n;
		in.now_ms += 1000;
		if (tfj_plan_compute(&again, &in) == 0)
			tfj_plan_free(&again);
		tfj_plan_free(&plan);
	}
	tfj_tfjob_free(&job);
	return 0;
}
