/*
 * test_towers.c - in-graph replication (worker/towers.h): N towers on one
 * batch give the gradients and loss of one tower on the whole batch, up to
 * float rounding, for even and uneven splits and a batch smaller than the
 * tower count; a NaN in the parameters fails every split as it fails one.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj_test.h>

#include "compute/model.h"
#include "worker/towers.h"

#define IN 64
#define CLASSES 10
#define ROWS 67 /* prime: no tower count splits it evenly */

static struct tfj_model_spec spec;
static struct tfj_compute *comp;
static struct tfj_model *model;
static size_t nt;
static float *params[TFJ_MODEL_MAX_TENSORS], *want[TFJ_MODEL_MAX_TENSORS],
	*got[TFJ_MODEL_MAX_TENSORS];
static float x[ROWS * IN];
static uint8_t y[ROWS];

/* A deterministic pseudo-random float in [-1, 1). */
static float rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((*s >> 40) & 0xffffff) / 8388608.0f - 1.0f;
}

static void setup(void)
{
	uint64_t s = 42;
	size_t i, j;

	TFJ_CHECK_OK(tfj_model_spec_parse(&spec, "mlp", "32,16", IN, CLASSES));
	TFJ_CHECK_OK(tfj_compute_open(&comp, "cpu", 0));
	TFJ_CHECK_OK(tfj_model_new(&model, &spec, comp));
	nt = tfj_model_num_tensors(model);
	for (i = 0; i < nt; i++) {
		size_t c = tfj_model_tensor(model, i)->count;

		params[i] = calloc(c, sizeof(float));
		want[i] = calloc(c, sizeof(float));
		got[i] = calloc(c, sizeof(float));
		TFJ_CHECK(params[i] && want[i] && got[i]);
	}
	TFJ_CHECK_OK(tfj_model_init_params(model, 7, params));
	for (i = 0; i < ROWS; i++) {
		for (j = 0; j < IN; j++)
			x[i * IN + j] = rnd(&s);
		y[i] = (uint8_t)(i % CLASSES);
	}
}

/* Largest |got - want| over all tensors, relative to the largest |want|. */
static double rel_diff(void)
{
	double d = 0, m = 0;
	size_t i, j;

	for (i = 0; i < nt; i++) {
		for (j = 0; j < tfj_model_tensor(model, i)->count; j++) {
			d = fmax(d, fabs((double)got[i][j] - want[i][j]));
			m = fmax(m, fabs((double)want[i][j]));
		}
	}
	return m > 0 ? d / m : d;
}

static void check_towers(int n, size_t rows)
{
	struct tfj_towers *tw = NULL;
	float lw, lg;

	TFJ_CHECK_OK(tfj_model_grad(model, (const float *const *)params, x, y, rows, want, &lw));
	TFJ_CHECK_OK(tfj_towers_new(&tw, &spec, "cpu", n));
	/* Twice: the second step reuses the towers' threads and buffers. */
	TFJ_CHECK_OK(tfj_towers_grad(tw, (const float *const *)params, x, y, rows, got, &lg, NULL, NULL));
	TFJ_CHECK_OK(tfj_towers_grad(tw, (const float *const *)params, x, y, rows, got, &lg, NULL, NULL));
	printf("  %d towers, %zu rows: loss %.7f vs %.7f, gradient rel. diff %.2e\n", n, rows, lg,
	       lw, rel_diff());
	TFJ_CHECK_NEAR(lg, lw, 1e-5 * fabs(lw) + 1e-6);
	TFJ_CHECK_LT(rel_diff(), 1e-5);
	tfj_towers_free(tw);
}

static void test_same_update(void)
{
	check_towers(2, ROWS);
	check_towers(3, ROWS);
	check_towers(4, 64);
	check_towers(TFJ_TOWERS_MAX, ROWS);
	/* Fewer rows than towers: the empty towers sit out. */
	check_towers(4, 3);
	check_towers(2, 1);
}

static void test_fails_like_one(void)
{
	struct tfj_towers *tw = NULL;
	float l, saved = params[0][0];

	TFJ_CHECK_INT(tfj_towers_new(&tw, &spec, "cpu", 1), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_towers_new(&tw, &spec, "cpu", TFJ_TOWERS_MAX + 1), TFJ_EINVAL);
	TFJ_CHECK_NULL(tw);
	TFJ_CHECK_OK(tfj_towers_new(&tw, &spec, "cpu", 3));
	TFJ_CHECK_INT(tfj_towers_grad(tw, (const float *const *)params, x, y, 0, got, &l, NULL, NULL),
		      TFJ_EINVAL);
	params[0][0] = NAN;
	TFJ_CHECK_INT(tfj_model_grad(model, (const float *const *)params, x, y, ROWS, want, &l),
		      TFJ_ENUMERIC);
	TFJ_CHECK_INT(tfj_towers_grad(tw, (const float *const *)params, x, y, ROWS, got, &l, NULL, NULL),
		      TFJ_ENUMERIC);
	params[0][0] = saved;
	TFJ_CHECK_OK(tfj_towers_grad(tw, (const float *const *)params, x, y, ROWS, got, &l, NULL, NULL));
	tfj_towers_free(tw);
	tfj_towers_free(NULL);
}

int main(void)
{
	size_t i;

	setup();
	TFJ_RUN(test_same_update);
	TFJ_RUN(test_fails_like_one);
	for (i = 0; i < nt; i++) {
		free(params[i]);
		free(want[i]);
		free(got[i]);
	}
	tfj_model_free(model);
	tfj_compute_free(comp);
	return tfj_test_finish();
}
