/*
 * itest_softmax.c - softmax regression on Fashion-MNIST reaches >= 0.84
 * test accuracy within 6 epochs (Adam, cosine learning-rate schedule),
 * asynchronously (1 ps, 2 workers) and synchronously (2 ps with the kernel
 * split, chief + 2 workers, all three replicas aggregated), with an
 * evaluator reporting along the way.
 */
#include "itest_util.h"

static void run(int nps, int nworkers, int chief, int sync)
{
	struct tfj_launch_result res;
	/*
	 * The ps outlive the chief's Finish by --ps-linger so that the evaluator,
	 * which on a loaded machine may start well after training ended (6
	 * epochs take about a second), still reaches them and evaluates the
	 * final model; the default 3 s was seen to be too short in CI.
	 */
	char *flags[] = { "--model", "softmax", "--learning_rate", sync ? "0.005" : "0.003",
			  "--epochs", "6", "--ps-linger", "30",
			  "--progress_steps", "500", "--eval_secs", "2", NULL, NULL };

	if (sync)
		flags[12] = "--sync";
	TFJ_CHECK_INT(itest_launch(&res, nps, nworkers, chief, 1, NULL, 0, flags), 0);
	printf("softmax %s: test accuracy %.4f, %.0f examples/s, %.1f s, evaluator %.4f\n",
	       sync ? "sync" : "async", res.test_accuracy, res.examples_per_sec, res.wall_s,
	       res.eval_accuracy);
	TFJ_CHECK_INT(res.exit_code, 0);
	TFJ_CHECK(res.have_final);
	TFJ_CHECK_GE(res.test_accuracy, 0.84);
	TFJ_CHECK_GE(res.eval_accuracy, 0.5); /* the evaluator saw a trained model */
}

static void test_async(void)
{
	run(1, 2, 0, 0);
}

static void test_sync(void)
{
	run(2, 2, 1, 1);
}

int main(int argc, char **argv)
{
	ITEST_DISPATCH(argc, argv);
	itest_require_data();
	TFJ_RUN(test_async);
	TFJ_RUN(test_sync);
	return tfj_test_finish();
}
