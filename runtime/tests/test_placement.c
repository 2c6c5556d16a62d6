/*
 * test_placement.c - round-robin and balanced placement: coverage, balance,
 * splitting of large tensors, determinism and bad input.
 */
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

#include "task/placement.h"
#include "tfj_test.h"

/* Every element of every variable is held exactly once, slices in order. */
static void check_cover(const struct tfj_placement *p, const size_t *counts, size_t nvars)
{
	size_t v, i, *next = calloc(nvars, sizeof(*next)), *per = calloc(p->nps, sizeof(*per));

	for (i = 0; i < p->nslices; i++) {
		const struct tfj_place_slice *s = &p->slices[i];

		TFJ_CHECK_LT(s->var, nvars);
		TFJ_CHECK_GT(s->count, 0);
		TFJ_CHECK_LT(s->ps, p->nps);
		if (s->var >= nvars || s->ps >= p->nps)
			continue;
		TFJ_CHECK_INT(s->offset, next[s->var]);
		TFJ_CHECK_INT(s->shard_off, per[s->ps]);
		next[s->var] = s->offset + s->count;
		per[s->ps] += s->count;
	}
	for (v = 0; v < nvars; v++)
		TFJ_CHECK_INT(next[v], counts[v]);
	for (i = 0; i < p->nps; i++)
		TFJ_CHECK_INT(per[i], p->ps_size[i]);
	free(next);
	free(per);
}

/* The MLP 784-256-10 layout. */
static const size_t mlp[] = { 784 * 256, 256, 256 * 10, 10 };

static void test_round_robin(void)
{
	struct tfj_placement p;

	TFJ_CHECK_INT(tfj_placement_build(&p, mlp, 4, 2, TFJ_PLACE_ROUND_ROBIN, 1024), 0);
	check_cover(&p, mlp, 4);
	TFJ_CHECK_INT(p.nslices, 4);
	TFJ_CHECK_INT(p.slices[0].ps, 0);
	TFJ_CHECK_INT(p.slices[1].ps, 1);
	TFJ_CHECK_INT(p.slices[2].ps, 0);
	TFJ_CHECK_INT(p.slices[3].ps, 1);
	/* The big kernel makes ps 0 hold almost everything. */
	TFJ_CHECK_GT(tfj_placement_imbalance(&p), 1.9);
	tfj_placement_free(&p);
}

static void test_balanced_splits_large_tensor(void)
{
	struct tfj_placement p;
	size_t nps;

	for (nps = 1; nps <= 7; nps++) {
		TFJ_CHECK_INT(tfj_placement_build(&p, mlp, 4, nps, TFJ_PLACE_BALANCED, 1024), 0);
		check_cover(&p, mlp, 4);
		/* Within min_slice of perfect on every ps. */
		TFJ_CHECK_LT(tfj_placement_imbalance(&p), 1.0 + 1024.0 * (double)nps / 203530.0 + 1e-9);
		if (nps > 1) {
			/* The 784x256 kernel is cut between ps tasks. */
			TFJ_CHECK(p.slices[0].var == 0 && p.slices[1].var == 0);
		}
		tfj_placement_free(&p);
	}
}

static void test_balanced_keeps_small_tensors_whole(void)
{
	/* Cuts near a bias snap to its boundary instead of shredding it. */
	static const size_t c[] = { 1000, 10, 1000, 10 };
	struct tfj_placement p;
	size_t i;

	TFJ_CHECK_INT(tfj_placement_build(&p, c, 4, 2, TFJ_PLACE_BALANCED, 64), 0);
	check_cover(&p, c, 4);
	for (i = 0; i < p.nslices; i++)
		if (p.slices[i].var == 1 || p.slices[i].var == 3)
			TFJ_CHECK_INT(p.slices[i].count, 10);
	TFJ_CHECK_INT(p.ps_size[0], 1010);
	tfj_placement_free(&p);
}

static void test_random_layouts(void)
{
	int round;

	for (round = 0; round < 300; round++) {
		size_t nvars = 1 + tfj_test_below(12), nps = 1 + tfj_test_below(9), i;
		size_t counts[12];
		struct tfj_placement a, b;
		enum tfj_place_kind kind = tfj_test_below(2) ? TFJ_PLACE_BALANCED : TFJ_PLACE_ROUND_ROBIN;

		for (i = 0; i < nvars; i++)
			counts[i] = 1 + tfj_test_below(tfj_test_below(2) ? 20 : 50000);
		TFJ_CHECK_INT(tfj_placement_build(&a, counts, nvars, nps, kind, tfj_test_below(300)), 0);
		check_cover(&a, counts, nvars);
		TFJ_CHECK_INT(tfj_placement_build(&b, counts, nvars, nps, kind, 0), 0);
		if (kind == TFJ_PLACE_ROUND_ROBIN)
			TFJ_CHECK(tfj_placement_hash(&a, 1) == tfj_placement_hash(&b, 1));
		tfj_placement_free(&a);
		tfj_placement_free(&b);
	}
}

static void test_hash_and_errors(void)
{
	struct tfj_placement a, b;
	enum tfj_place_kind k;
	static const size_t zero[] = { 5, 0 };

	TFJ_CHECK_INT(tfj_placement_build(&a, mlp, 4, 2, TFJ_PLACE_BALANCED, 1024), 0);
	TFJ_CHECK_INT(tfj_placement_build(&b, mlp, 4, 3, TFJ_PLACE_BALANCED, 1024), 0);
	TFJ_CHECK(tfj_placement_hash(&a, 7) != tfj_placement_hash(&b, 7));
	tfj_placement_free(&a);
	tfj_placement_free(&b);
	TFJ_CHECK_INT(tfj_placement_build(&a, mlp, 4, 0, TFJ_PLACE_BALANCED, 1), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_placement_build(&a, zero, 2, 1, TFJ_PLACE_BALANCED, 1), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_placement_build(&a, mlp, 0, 1, TFJ_PLACE_BALANCED, 1), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_placement_parse(&k, "rr"), 0);
	TFJ_CHECK_INT(k, TFJ_PLACE_ROUND_ROBIN);
	TFJ_CHECK_INT(tfj_placement_parse(&k, "balanced"), 0);
	TFJ_CHECK_INT(k, TFJ_PLACE_BALANCED);
	TFJ_CHECK_INT(tfj_placement_parse(&k, "random"), TFJ_EINVAL);
	tfj_placement_free(NULL);
}

int main(void)
{
	TFJ_RUN(test_round_robin);
	TFJ_RUN(test_balanced_splits_large_tensor);
	TFJ_RUN(test_balanced_keeps_small_tensors_whole);
	TFJ_RUN(test_random_layouts);
	TFJ_RUN(test_hash_and_errors);
	return tfj_test_finish();
}
