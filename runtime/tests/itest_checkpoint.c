/*
 * itest_checkpoint.c - checkpoints and restarts.
 *
 *  1. A run to step 60 checkpoints every 20 steps and at the end.
 *  2. The same job started again restores step 60 and, with nothing left
 *     to do, reports the same step and exactly the same test loss.
 *  3. Started with --max_steps 100 it resumes at 60 and goes on to 100.
 *  4. A ps killed mid-run is restarted by the launcher, reloads its shard
 *     from the newest checkpoint, and the workers retry until it is back.
 *  5. With Adam the checkpoints hold the optimizer state (m, v per variable
 *     and the update count t); a resumed job and a ps killed mid-run
 *     restore it, so t keeps counting from the checkpoint instead of
 *     restarting at 0 (the final checkpoint's t equals its step); so do ps
 *     tasks that cannot see the checkpoint, through the coordinator's Init.
 */
#include "itest_util.h"

#include "data/checkpoint.h"
#include "data/ckptdir.h"

static char dir[256];

static int64_t latest(void)
{
	char path[512];
	int64_t step = -1;

	if (tfj_ckptdir_latest(path, sizeof(path), &step, dir, "model") != 0)
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
	TFJ_CHECK_GE(a.step, 60);
	TFJ_CHECK_INT(latest(), a.step);
	TFJ_CHECK_INT(tfj_ckptdir_latest(path, sizeof(path), &a.step, dir, "model"), 0);
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
	TFJ_CHECK_GE(c.step, 100);
	TFJ_CHECK_LT(c.step, 100 + 10);
	TFJ_CHECK_GT(c.test_accuracy, 0.5);
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
	TFJ_CHECK_GE(r.restarts, 1);
	TFJ_CHECK_GE(restored, 2); /* at the first start and after the kill */
	TFJ_CHECK_GE(r.step, 12000);
	TFJ_CHECK_GT(r.test_accuracy, 0.75);
	base[9] = "20";
}

/* Runs a launch with its output in a file; counts lines of `task` containing `needle`. */
/*
 * ps tasks without access to the checkpoint (no --checkpoint_dir, as when
 * the ps pods have no shared volume) get the state in the coordinator's
 * Init: worker 0 (no chief) resumes from step 1500 to 1560, and the final
 * checkpoint's t equals its step only if the Init carried t and the state.
 */
static void init_with_state(const char *adir)
{
	char ps[80], wk[64], p0[32], p1[32], path[512];
	char *ps_args[] = { "train", "--job_name", "ps", "--task_index", "0", "--ps_hosts", ps,
			    "--worker_hosts", wk, "--model", "softmax", "--optimizer", "adam",
			    "--lr_schedule", "constant", "--bind_address", "127.0.0.1",
			    "--ps_linger", "0.5", NULL };
	char *wk_args[] = { "train", "--job_name", "worker", "--ps_hosts", ps, "--worker_hosts",
			    wk, "--model", "softmax", "--optimizer", "adam", "--lr_schedule",
			    "constant", "--checkpoint_dir", (char *)adir, "--max_steps", "1560",
			    NULL };
	struct tfj_ckpt ck = { 0 };
	int64_t step = -1;
	pid_t pid[2];
	int st, i;

	snprintf(p0, sizeof(p0), "127.0.0.1:%d", tfj_testutil_free_port());
	snprintf(p1, sizeof(p1), "127.0.0.1:%d", tfj_testutil_free_port());
	snprintf(ps, sizeof(ps), "%s,%s", p0, p1);
	snprintf(wk, sizeof(wk), "127.0.0.1:%d", tfj_testutil_free_port());
	for (i = 0; i < 2; i++) {
		ps_args[4] = i ? "1" : "0";
		pid[i] = itest_spawn_self(ps_args, NULL);
		TFJ_CHECK_GT(pid[i], 0);
	}
	TFJ_CHECK_INT(itest_run_self(wk_args, NULL, 1), 0);
	for (i = 0; i < 2; i++) {
		TFJ_CHECK(waitpid(pid[i], &st, 0) == pid[i]);
		TFJ_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	TFJ_CHECK_INT(tfj_ckptdir_latest(path, sizeof(path), &step, adir, "model"), 0);
	TFJ_CHECK_INT(tfj_ckpt_load(&ck, path), 0);
	printf("adam via Init: final step %lld, t %lld\n", (long long)ck.global_step,
	       (long long)ck.optim_steps);
	TFJ_CHECK_GE(ck.global_step, 1560);
	TFJ_CHECK_INT(ck.optim_steps, ck.global_step);
	tfj_ckpt_free(&ck);
}

static void test_adam_state(void)
{
	static char adir[300];
	char *flags[] = { "--model", "softmax", "--optimizer", "adam", "--lr_schedule", "constant",
			  "--checkpoint_steps", "20", "--progress_steps", "20",
			  "--checkpoint_dir", adir, "--max_steps", NULL, NULL };
	struct tfj_launch_opts o;
	struct tfj_launch_result r;
	struct tfj_ckpt ck = { 0 };
	char path[512];
	int64_t step = -1;
	size_t i, positive = 0;
	FILE *out = tmpfile();

	TFJ_CHECK(out != NULL);
	if (!out)
		return;
	snprintf(adir, sizeof(adir), "%s/adam", dir);
	memset(&o, 0, sizeof(o));
	o.nps = 2;
	o.nworkers = 1;
	o.chief = 1;
	o.timeout_s = 300;
	o.exe = "/proc/self/exe";
	o.fwd = flags;
	o.nfwd = 14;
	o.max_restarts = 3;
	o.quiet = 1;

	/* 1. Train to 60: the checkpoint holds Adam's m and v for every variable, and t. */
	flags[13] = "60";
	TFJ_CHECK_INT(tfj_launch_run(&o, &r), 0);
	TFJ_CHECK_INT(r.exit_code, 0);
	TFJ_CHECK_INT(tfj_ckptdir_latest(path, sizeof(path), &step, adir, "model"), 0);
	TFJ_CHECK_INT(tfj_ckpt_load(&ck, path), 0);
	TFJ_CHECK_INT(ck.optim_kind, 2);
	TFJ_CHECK_INT(ck.global_step, r.step);
	TFJ_CHECK_INT(ck.optim_steps, ck.global_step);
	for (i = 0; i < ck.n_vars; i++) {
		TFJ_CHECK_INT(ck.vars[i].state_count, 2 * ck.vars[i].count);
		for (size_t e = 0; ck.vars[i].state && e < ck.vars[i].count; e++)
			positive += ck.vars[i].state[ck.vars[i].count + e] > 0.0f; /* v */
	}
	TFJ_CHECK_GT(positive, 1000);
	tfj_ckpt_free(&ck);

	/*
	 * 2. Resume to 1500 with ps:1 killed at step 400 (softmax steps take
	 * ~1 ms, so the kill lands well before the end): state restored each time.
	 */
	flags[13] = "1500";
	o.quiet = 0;
	o.out = out;
	snprintf(o.kill_task, sizeof(o.kill_task), "ps:1");
	o.kill_at_step = 400;
	TFJ_CHECK_INT(tfj_launch_run(&o, &r), 0);
	TFJ_CHECK_INT(r.exit_code, 0);
	TFJ_CHECK_GE(r.restarts, 1);
	printf("adam: ps:0 restored state %d time(s), ps:1 %d, chief %d; restarts %d\n",
	       itest_count_lines(out, "[ps:0]", "optimizer state restored"),
	       itest_count_lines(out, "[ps:1]", "optimizer state restored"),
	       itest_count_lines(out, "[chief:0]", "restoring adam optimizer state"), r.restarts);
	TFJ_CHECK_GE(itest_count_lines(out, "[ps:0]", "optimizer state restored"), 1);
	TFJ_CHECK_GE(itest_count_lines(out, "[ps:1]", "optimizer state restored"), 2);
	TFJ_CHECK_GE(itest_count_lines(out, "[chief:0]", "restoring adam optimizer state"), 1);
	TFJ_CHECK_INT(itest_count_lines(out, "[ps:", "starts afresh"), 0);
	/* ps 0 never stopped after the resume: its t went on from 60, so t = step. */
	TFJ_CHECK_INT(tfj_ckptdir_latest(path, sizeof(path), &step, adir, "model"), 0);
	TFJ_CHECK_INT(tfj_ckpt_load(&ck, path), 0);
	TFJ_CHECK_GE(ck.global_step, 1500);
	TFJ_CHECK_INT(ck.optim_steps, ck.global_step);
	TFJ_CHECK_INT(ck.vars[0].state_count, 2 * ck.vars[0].count);
	TFJ_CHECK_GT(r.test_accuracy, 0.6);
	printf("adam: final step %lld, t %lld, acc %.4f\n", (long long)ck.global_step,
	       (long long)ck.optim_steps, r.test_accuracy);
	tfj_ckpt_free(&ck);
	fclose(out);
	init_with_state(adir);
}

int main(int argc, char **argv)
{
	ITEST_DISPATCH(argc, argv);
	itest_require_data();
	TFJ_CHECK_INT(tfj_testutil_tmpdir(dir, sizeof(dir), "tfj-itest"), 0);
	TFJ_RUN(test_resume);
	TFJ_RUN(test_ps_killed);
	TFJ_RUN(test_adam_state);
	tfj_testutil_rmtree(dir);
	return tfj_test_finish();
}
