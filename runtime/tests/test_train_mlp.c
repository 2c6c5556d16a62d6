/*
 * test_train_mlp.c - a 256-128 ReLU MLP on real Fashion-MNIST reaches at
 * least 0.87 test accuracy within a few epochs, single process, CPU.
 */
#include "train_util.h"

static int skipped;

static void test_mlp_accuracy(void)
{
	struct train_cfg cfg = { "mlp", "256,128", TFJ_OPTIM_ADAM, 0.001f, 128, 10, 0.87f, 1 };
	float acc = 0.0f;
	int epochs = 0;

	if (train_run(&cfg, &acc, &epochs) == 77) {
		skipped = 1;
		return;
	}
	printf("  mlp: best test accuracy %.4f after %d epochs\n", acc, epochs);
	TFJ_CHECK_GE(acc, 0.87f);
}

int main(void)
{
	TFJ_RUN(test_mlp_accuracy);
	if (skipped)
		return 77;
	return tfj_test_finish();
}
