/*
 * test_objindex.c - the label index's sets against a brute-force model:
 * after every add (new, or in place of an old pointer) and removal, each
 * key's set holds exactly the pointers the model says, once each.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kube/objindex.h"
#include "tfj_test.h"

#define KEYS 7
#define PTRS 64

/* Pointers to compare, never read. */
static char obj[PTRS];

/* 1 when key k's set is exactly the model's: each pointer it should hold, once. */
static int set_matches(const struct tfj_objindex *x, int k, const int *model)
{
	char key[32];
	void *const *set;
	size_t n, want = 0;

	snprintf(key, sizeof(key), "ns/job-%d", k);
	n = tfj_objindex_get(&set, x, key);
	for (int i = 0; i < PTRS; i++) {
		size_t seen = 0;

		for (size_t j = 0; j < n; j++)
			seen += set[j] == &obj[i];
		if (seen != (model[i] == k))
			return 0;
		want += model[i] == k;
	}
	return n == want && (n > 0 || set == NULL);
}

static void test_model(void)
{
	struct tfj_objindex x = TFJ_OBJINDEX_INIT;
	int model[PTRS]; /* the key each pointer is under, -1 none */
	const char *kept;
	char key[32];

	for (int i = 0; i < PTRS; i++)
		model[i] = -1;
	for (int step = 0; step < 20000; step++) {
		int i = (int)tfj_test_below(PTRS), k = (int)tfj_test_below(KEYS);
		int j = (int)tfj_test_below(PTRS);

		switch (tfj_test_below(3)) {
		case 0: /* a new object under k, if i is under none */
			if (model[i] >= 0)
				break;
			snprintf(key, sizeof(key), "ns/job-%d", k);
			TFJ_CHECK_INT(tfj_objindex_add(&kept, &x, key, &obj[i], NULL), 0);
			/* The index's own copy of the key, not the caller's buffer. */
			TFJ_CHECK(kept && kept != key && !strcmp(kept, key));
			model[i] = k;
			break;
		case 1: /* i replaced by j (not indexed) under i's key, in place */
			if (model[i] < 0 || model[j] >= 0)
				break;
			snprintf(key, sizeof(key), "ns/job-%d", model[i]);
			TFJ_CHECK_INT(tfj_objindex_add(&kept, &x, key, &obj[j], &obj[i]), 0);
			TFJ_CHECK(kept && kept != key && !strcmp(kept, key));
			model[j] = model[i];
			model[i] = -1;
			break;
		default: /* i removed from k: only takes it out when it is there */
			snprintf(key, sizeof(key), "ns/job-%d", k);
			tfj_objindex_del(&x, key, &obj[i]);
			if (model[i] == k)
				model[i] = -1;
			break;
		}
		if (step % 97 == 0)
			for (int q = 0; q < KEYS; q++)
				TFJ_CHECK(set_matches(&x, q, model));
	}
	for (int q = 0; q < KEYS; q++)
		TFJ_CHECK(set_matches(&x, q, model));
	tfj_objindex_free(&x);
}

/* An emptied set goes: its key reads as absent, and the map holds nothing. */
static void test_empty_set_goes(void)
{
	struct tfj_objindex x = TFJ_OBJINDEX_INIT;
	void *const *set;
	const char *kept, *first = NULL;

	/* The copy handed out stays where it is while the set grows. */
	for (int i = 0; i < 10; i++) {
		TFJ_CHECK_INT(tfj_objindex_add(&kept, &x, "ns/a", &obj[i], NULL), 0);
		first = first ? first : kept;
		TFJ_CHECK(kept == first);
	}
	TFJ_CHECK_STR(first, "ns/a");
	TFJ_CHECK_EQ(tfj_objindex_get(&set, &x, "ns/a"), 10);
	/* An old pointer that is not there: added, not replaced. */
	TFJ_CHECK_INT(tfj_objindex_add(&kept, &x, "ns/a", &obj[10], &obj[40]), 0);
	TFJ_CHECK_EQ(tfj_objindex_get(&set, &x, "ns/a"), 11);
	for (int i = 0; i <= 10; i++)
		tfj_objindex_del(&x, "ns/a", &obj[i]);
	TFJ_CHECK_EQ(tfj_objindex_get(&set, &x, "ns/a"), 0);
	TFJ_CHECK(set == NULL);
	TFJ_CHECK_EQ(x.sets.n, 0);
	tfj_objindex_del(&x, "ns/none", &obj[0]);
	tfj_objindex_free(&x);
	tfj_objindex_free(NULL);
}

int main(void)
{
	TFJ_RUN(test_model);
	TFJ_RUN(test_empty_set_goes);
	return tfj_test_finish();
}
