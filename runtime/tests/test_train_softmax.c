/*
 * test_train_softmax.c - softmax regression on real Fashion-MNIST reaches
 * at least 0.84 test accuracy within a few epochs, single process, CPU.
 */
#include "train_util.h"

static int skipped;

static void test_softmax_accuracy(void)
{
	struct train_cfg cfg = { "softmax", NULL, TFJ_OPTIM_ADAM, 0.002f, 128, 15, 0.84f, 1 };
	float acc = 0.0f;
	int epochs = 0;

	if (train_run(&cfg, &acc, &epochs) == 77) {
		skipped = 1;
		return;
	}
	printf("  softmax: best test accuracy %.4f after %d epochs\n", acc, epochs);
	TFJ_CHECK_GE(acc, 0.84f);
}

int main(void)
{
	TFJ_RUN(test_softmax_accuracy);
	if (skipped)
		return 77;
	return tfj_test_finish();
}
