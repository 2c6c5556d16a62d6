/*
 * itest_checkpoint.c - checkpoints and restarts.
 *
 *  1. A run to step 60 checkpoints every 20 steps and at the end.
 *  2. The same job started again restores step 60 and, with nothing left
 *     to do, reports the same step and exactly the same test loss.
 *  3. Started with --max_steps 100 it resumes at 60 and goes on to 100.
 *  4. A ps killed mid-run is restarted by the launcher, reloads its shard
 *     from the newest checkpoint, and the workers retry until it is back.
 */
#include "itest_util.h"

#include "checkpoint.h"

static char dir[256];

static int64_t latest(void)
{
	char path[512];
	int64_t step = -1;

	if (tfj_ckpt_latest(path, sizeof(path), &step, dir, "model") != 0)
		return -1;
	return step;
}

static char *base[] = { "--model", "softmax", "--optimizer", "sgd", "--learning_rate", "0.1",
			"--lr_schedule", "constant", "--checkpoint_steps", "20",
			"--checkpoint_dir", dir, "--max_steps", NULL, NULL };

static void run(struct tfj_launch_result *res, const char *max_steps, const char *kill,
		int64_t at_step)
{
	base[13] = (char *)max_steps;
	TFJ_CHECK_INT(itest_launch(res, 2, 2, 1, 0, kill, at_step, base), 0);
	TFJ_CHECK_INT(res->exit_code, 0);
	TFJ_CHECK(res->have_final);
}

static void test_resume(void)
{
	struct tfj_launch_result a, b, c;
	char path[512];
	struct tfj_ckpt ck = { 0 };

	run(&a, "60", NULL, 0);
	TFJ_CHECK(a.step >= 60);
	TFJ_CHECK_INT(latest(), a.step);
	TFJ_CHECK_INT(tfj_ckpt_latest(path, sizeof(path), &a.step, dir, "model"), 0);
	TFJ_CHECK_INT(tfj_ckpt_load(&ck, path), 0);
	TFJ_CHECK_INT(ck.n_vars, 2);
	tfj_ckpt_free(&ck);

	/* Same job again: restored, nothing to train, same figures. */
	run(&b, "60", NULL, 0);
	TFJ_CHECK_INT(b.step, a.step);
	TFJ_CHECK(b.test_accuracy == a.test_accuracy);
	printf("run 1: step %lld acc %.4f; run 2 (restored): step %lld acc %.4f\n",
	       (long long)a.step, a.test_accuracy, (long long)b.step, b.test_accuracy);

	/* Longer job: resumes from the checkpoint rather than from scratch. */
	run(&c, "100", NULL, 0);
	TFJ_CHECK(c.step >= 100 && c.step < 100 + 10);
	TFJ_CHECK(c.test_accuracy > 0.5);
}

static void test_ps_killed(void)
{
	struct tfj_launch_opts o;
	struct tfj_launch_result r;
	char line[4096];
	FILE *out = tmpfile();
	int restored = 0, n = 0;

	/*
	 * The directory still holds test_resume's checkpoints, so whenever the
	 * kill lands, the restarted ps has a checkpoint to come back from.
	 */
	base[9] = "200";
	/* The kill lands at step 2000 of 12000, after several checkpoints. */
	base[13] = "12000";
	while (base[n])
		n++;
	memset(&o, 0, sizeof(o));
	o.nps = 2;
	o.nworkers = 2;
	o.chief = 1;
	o.timeout_s = 600;
	o.exe = "/proc/self/exe";
	o.nfwd = n;
	o.fwd = base;
	o.max_restarts = 3;
	o.out = out;
	snprintf(o.kill_task, sizeof(o.kill_task), "ps:1");
	o.kill_at_step = 2000;
	TFJ_CHECK(out != NULL);
	if (!out)
		return;
	TFJ_CHECK_INT(tfj_launch_run(&o, &r), 0);
	rewind(out);
	while (fgets(line, sizeof(line), out))
		if (strncmp(line, "[ps:1]", 6) == 0 && strstr(line, "restored shard from checkpoint"))
			restored++;
	fclose(out);
	printf("ps killed: restarts %d, restores %d, final step %lld, acc %.4f\n", r.restarts,
	       restored, (long long)r.step, r.test_accuracy);
	TFJ_CHECK_INT(r.exit_code, 0);
	TFJ_CHECK(r.restarts >= 1);
	TFJ_CHECK(restored >= 2); /* at the first start and after the kill */
	TFJ_CHECK(r.step >= 12000);
	TFJ_CHECK(r.test_accuracy > 0.75);
	base[9] = "20";
}

int main(int argc, char **argv)
{
	int code;

	if (itest_dispatch(argc, argv, &code))
		return code;
	itest_require_data();
	itest_tmpdir(dir, sizeof(dir));
	TFJ_RUN(test_resume);
	TFJ_RUN(test_ps_killed);
	itest_rmtree(dir);
	return tfj_test_finish();
}
