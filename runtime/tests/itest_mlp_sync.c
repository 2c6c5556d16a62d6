/*
 * itest_mlp_sync.c - the MLP (784-256-10, Adam, cosine schedule) reaches
 * >= 0.87 test accuracy on Fashion-MNIST within 4 epochs, trained
 * synchronously: 2 ps with the kernel split between them, 2 workers, both
 * replicas aggregated every step.
 */
#include "itest_util.h"

static void test_mlp_sync(void)
{
	char *flags[] = { "--model", "mlp", "--epochs", "4", "--progress_steps", "500",
			  "--sync", NULL };

	itest_train_expect("mlp sync", 2, 2, flags, 0.87);
}

int main(int argc, char **argv)
{
	ITEST_DISPATCH(argc, argv);
	itest_require_data();
	TFJ_RUN(test_mlp_sync);
	return tfj_test_finish();
}
