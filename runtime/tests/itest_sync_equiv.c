/*
 * itest_sync_equiv.c - two workers in sync mode compute exactly what one
 * worker would with the two batches combined.
 *
 * A real cluster (2 ps with the big kernel split between them, 2 workers,
 * SyncReplicasOptimizer-style aggregation of both replicas, SGD) trains for
 * a fixed number of steps and the chief checkpoints the result. The test
 * then replays the same steps in-process as ONE worker: at step t it takes
 * worker 0's and worker 1's batch t together (2B examples), computes the
 * gradient of the mean loss over all 2B and applies SGD. The parameters
 * must agree to float rounding.
 */
#include "itest_util.h"

#include <math.h>

#include "data/checkpoint.h"
#include "data/ckptdir.h"
#include "compute/compute.h"
#include "compute/model.h"
#include "compute/optim.h"

#define STEPS 25
#define BATCH 16
#define LIMIT 2000
#define SEED 7
#define LR 0.1f

static char dir[256];

static void reference(const struct tfj_ckpt *ck)
{
	struct tfj_compute *c = NULL;
	struct tfj_model *m = NULL;
	struct tfj_model_spec spec;
	struct tfj_dataset full = { 0 }, sh[2] = { { 0 } };
	struct tfj_data_iter it[2];
	struct tfj_optim_hparams hp;
	float *params[8], *grads[8], *xb, loss;
	uint8_t *yb;
	size_t nv, i, r, dim;
	int step;
	double maxdiff = 0, maxabs = 0;

	TFJ_CHECK_INT(tfj_compute_open(&c, "cpu", 0), 0);
	TFJ_CHECK_INT(tfj_model_spec_parse(&spec, "mlp", "32", 784, 10), 0);
	TFJ_CHECK_INT(tfj_model_new(&m, &spec, c), 0);
	nv = tfj_model_num_tensors(m);
	for (i = 0; i < nv; i++) {
		params[i] = calloc(tfj_model_tensor(m, i)->count, sizeof(float));
		grads[i] = calloc(tfj_model_tensor(m, i)->count, sizeof(float));
	}
	TFJ_CHECK_INT(tfj_model_init_params(m, SEED, params), 0);
	TFJ_CHECK_INT(tfj_data_load(&full, NULL, 1), 0);
	full.n = LIMIT;
	dim = full.dim;
	for (r = 0; r < 2; r++) {
		TFJ_CHECK_INT(tfj_data_shard(&sh[r], &full, r, 2), 0);
		TFJ_CHECK_INT(tfj_data_iter_init(&it[r], &sh[r], BATCH, SEED + r), 0);
	}
	xb = malloc(2 * BATCH * dim * sizeof(float));
	yb = malloc(2 * BATCH);
	tfj_optim_defaults(&hp, TFJ_OPTIM_SGD);
	hp.lr = LR;
	for (step = 0; step < STEPS; step++) {
		size_t rows = 0;

		for (r = 0; r < 2; r++) {
			const float *x;
			const uint8_t *y;
			size_t n;

			TFJ_CHECK_INT(tfj_data_iter_next(&it[r], &x, &y, &n), 0);
			TFJ_CHECK_INT(n, BATCH);
			memcpy(xb + rows * dim, x, n * dim * sizeof(float));
			memcpy(yb + rows, y, n);
			rows += n;
		}
		TFJ_CHECK_INT(tfj_model_grad(m, (const float *const *)params, xb, yb, rows, grads,
					     &loss), 0);
		for (i = 0; i < nv; i++)
			TFJ_CHECK_INT(tfj_optim_apply(TFJ_OPTIM_SGD, &hp, params[i], grads[i], NULL,
						      tfj_model_tensor(m, i)->count, step), 0);
	}
	for (i = 0; i < nv; i++) {
		const struct tfj_tensor_info *t = tfj_model_tensor(m, i);
		int vi = tfj_ckpt_find(ck, t->name);
		size_t j;

		TFJ_CHECK_GE(vi, 0);
		if (vi < 0)
			continue;
		TFJ_CHECK_INT(ck->vars[vi].count, t->count);
		for (j = 0; j < t->count; j++) {
			double d = fabs((double)ck->vars[vi].value[j] - (double)params[i][j]);

			if (d > maxdiff)
				maxdiff = d;
			if (fabs(params[i][j]) > maxabs)
				maxabs = fabs(params[i][j]);
		}
	}
	printf("max |distributed - combined-batch| = %.3g (parameters up to %.3g)\n", maxdiff,
	       maxabs);
	TFJ_CHECK_LT(maxdiff, 1e-5);
	for (i = 0; i < nv; i++) {
		free(params[i]);
		free(grads[i]);
	}
	for (r = 0; r < 2; r++) {
		tfj_data_iter_free(&it[r]);
		tfj_data_free(&sh[r]);
	}
	tfj_data_free(&full);
	free(xb);
	free(yb);
	tfj_model_free(m);
	tfj_compute_free(c);
}

static void test_sync_equals_combined_batch(void)
{
	struct tfj_launch_result res;
	struct tfj_ckpt ck = { 0 };
	char path[512];
	int64_t step = -1;
	char *flags[] = { "--model", "mlp", "--hidden", "32", "--optimizer", "sgd",
			  "--learning_rate", "0.1", "--lr_schedule", "constant", "--sync",
			  "--batch_size", "16",
			  "--max_steps", "25", "--train_limit", "2000", "--seed", "7",
			  "--min_slice", "64", "--checkpoint_dir", dir, NULL };

	TFJ_CHECK_INT(itest_launch(&res, 2, 2, 0, 0, NULL, 0, flags), 0);
	TFJ_CHECK_INT(res.exit_code, 0);
	TFJ_CHECK_INT(res.step, STEPS);
	TFJ_CHECK_INT(tfj_ckptdir_latest(path, sizeof(path), &step, dir, "model"), 0);
	TFJ_CHECK_INT(step, STEPS);
	TFJ_CHECK_INT(tfj_ckpt_load(&ck, path), 0);
	reference(&ck);
	tfj_ckpt_free(&ck);
}

int main(int argc, char **argv)
{
	ITEST_DISPATCH(argc, argv);
	itest_require_data();
	TFJ_CHECK_INT(tfj_testutil_tmpdir(dir, sizeof(dir), "tfj-itest"), 0);
	TFJ_RUN(test_sync_equals_combined_batch);
	tfj_testutil_rmtree(dir);
	return tfj_test_finish();
}
