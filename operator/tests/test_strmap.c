/*
 * test_strmap.c - the string hash map against a brute-force model.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/strmap.h"
#include "tfj_test.h"

#define N 2000

static int count(void *ud, const char *k, void *v)
{
	(*(int *)ud)++;
	return 0;
}

static void test_model(void)
{
	struct tfj_strmap m = TFJ_STRMAP_INIT;
	static intptr_t model[N]; /* 0 absent, else value */
	char key[32];

	for (int step = 0; step < 20000; step++) {
		int i = (int)tfj_test_below(N);
		intptr_t v = (intptr_t)tfj_test_below(1000) + 1;
		void *old = NULL;
		snprintf(key, sizeof(key), "ns/key-%d", i);
		switch (tfj_test_below(3)) {
		case 0:
			TFJ_CHECK_INT(tfj_strmap_put(&m, key, (void *)v, &old), 0);
			TFJ_CHECK_INT((intptr_t)old, model[i]);
			model[i] = v;
			break;
		case 1:
			TFJ_CHECK_INT((intptr_t)tfj_strmap_del(&m, key), model[i]);
			model[i] = 0;
			break;
		default:
			TFJ_CHECK_INT((intptr_t)tfj_strmap_get(&m, key), model[i]);
			TFJ_CHECK_INT(tfj_strmap_has(&m, key), model[i] != 0);
		}
	}
	{
		size_t live = 0;
		int seen = 0;
		for (int i = 0; i < N; i++)
			live += model[i] != 0;
		TFJ_CHECK_INT(m.n, live);
		tfj_strmap_each(&m, count, &seen);
		TFJ_CHECK_INT(seen, live);
	}
	tfj_strmap_free(&m, NULL);
	TFJ_CHECK(tfj_strmap_get(&m, "x") == NULL);
	TFJ_CHECK(tfj_strmap_del(&m, "x") == NULL);
}

int main(void)
{
	TFJ_RUN(test_model);
	return tfj_test_finish();
}
