/*
 * fuzz_tfjob.c - libFuzzer target for the TFJob decoder, and the planner
 * behind it: any input must decode or fail cleanly, and a decoded job must
 * plan without crashing (with no pods, then with one pod per replica the
 * plan asked for, so the observation path is exercised too). Kueue's
 * pod-group mode (tfjob/kueue.h) is on for inputs of odd length, and each
 * pod the first plan creates is built, so the queue and group-name rules
 * see every annotation and label the fuzzer finds.
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
	struct tfj_plan_config cfg;
	cJSON *body;
	size_t i, n = 0;

	if (tfj_tfjob_decode(&job, (const char *)data, size))
		return 0;
	memset(&in, 0, sizeof(in));
	in.job = &job;
	in.now_ms = 1700000000000LL;
	memset(&cfg, 0, sizeof(cfg));
	cfg.kueue_pod_groups = size & 1;
	in.cfg = &cfg;
	if (tfj_plan_compute(&plan, &in) == 0) {
		for (i = 0; i < plan.n && n < 64; i++) {
			if (plan.actions[i].kind != TFJ_ACT_CREATE_POD)
				continue;
			pods[n++] = plan.actions[i].body;
			if (i < 8 && tfj_plan_child_body(&body, &plan, &plan.actions[i], NULL) == 0)
				cJSON_Delete(body);
		}
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
