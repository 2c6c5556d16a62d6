/*
 * itest_mlp_async.c - the MLP (784-256-10, Adam, cosine schedule) reaches
 * >= 0.87 test accuracy on Fashion-MNIST within 4 epochs, trained
 * asynchronously: 1 ps, 2 workers, each gradient applied on arrival.
 */
#include "itest_util.h"

static void test_mlp_async(void)
{
	char *flags[] = { "--model", "mlp", "--epochs", "4", "--progress_steps", "500",
			  NULL };

	itest_train_expect("mlp async", 1, 2, flags, 0.87);
}

int main(int argc, char **argv)
{
	ITEST_DISPATCH(argc, argv);
	itest_require_data();
	TFJ_RUN(test_mlp_async);
	return tfj_test_finish();
}
