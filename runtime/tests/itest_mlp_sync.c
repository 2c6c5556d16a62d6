/*
 * itest_mlp_sync.c - the MLP (784-256-10, Adam, cosine schedule) reaches
 * >= 0.87 test accuracy on Fashion-MNIST within 4 epochs, trained
 * synchronously: 2 ps with the kernel split between them, 2 workers, both
 * replicas aggregated every step.
 */
#include "itest_util.h"

static void test_mlp_sync(void)
{
	struct tfj_launch_result res;
	char *flags[] = { "--model", "mlp", "--epochs", "4", "--progress_steps", "500",
			  "--sync", NULL };

	TFJ_CHECK_INT(itest_launch(&res, 2, 2, 0, 0, NULL, 0, flags), 0);
	printf("mlp sync: test accuracy %.4f, %.0f examples/s, %.1f s\n", res.test_accuracy,
	       res.examples_per_sec, res.wall_s);
	TFJ_CHECK_INT(res.exit_code, 0);
	TFJ_CHECK(res.have_final);
	TFJ_CHECK_GE(res.test_accuracy, 0.87);
}

int main(int argc, char **argv)
{
	int code;

	if (itest_dispatch(argc, argv, &code))
		return code;
	itest_require_data();
	TFJ_RUN(test_mlp_sync);
	return tfj_test_finish();
}
