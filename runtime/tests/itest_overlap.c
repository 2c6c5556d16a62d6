/*
 * itest_overlap.c - asynchronous training with --overlap (overlap.c): the
 * next step's Pull and the last step's Push run on the worker's transfer
 * thread while the step computes.
 *
 *  1. The MLP of itest_mlp_async (784-256-10, Adam, cosine, 4 epochs, 1 ps,
 *     2 workers) still learns: >= 0.86 test accuracy. Overlapped parameters
 *     are one step staler (they lack the worker's own newest gradient); on
 *     the development VM this run reached 0.867-0.869 against 0.875 without
 *     --overlap, which is why the option is off by default and
 *     itest_mlp_async keeps its 0.87 floor on the default loop. Every worker
 *     logs its step split in the overlapped mode and its progress records
 *     carry wait_ms and step_ms.
 *  2. A ps killed mid-run (SIGKILL at global step 1500 of 8000, 2 ps, chief
 *     + 2 workers, softmax, no checkpoints): the transfer threads retry
 *     until the restarted ps answers, the chief's transfer thread refills
 *     the empty shard from the initial values (a second Init), and training
 *     ends at max_steps with a usable model.
 *  3. --overlap=push, the same MLP run as 1: each layer's gradients go to
 *     the ps while the backward pass computes the layers below, the pull
 *     waits for the whole push, so the parameters are as fresh as in the
 *     sequential loop and the run must reach itest_mlp_async's floor, 0.87.
 *     The ps counts early parts (pushes with more to come), so the step
 *     really went in parts, and counts one step per worker step.
 *  4. With one worker, --overlap=push trains exactly as the sequential loop
 *     (2 ps, the MLP, Adam, 400 steps): the parts of a step apply the
 *     step's update bit for bit and the pull waits for them, so the final
 *     test loss is the same number. --overlap=step, one step staler, is not
 *     (which shows the comparison can fail).
 *  5. --overlap=push with a ps killed mid-run (2 ps, chief + 2 workers, the
 *     MLP, SIGKILL at step 1000 of 4000): a part that meets the dead ps is
 *     retried, the chief refills the restarted shard, and the parts of the
 *     following steps go on; training ends at max_steps.
 */
#include "itest_util.h"

/* The launcher's own lines and every warning or error, for the test log. */
static void echo_events(FILE *out)
{
	char line[4096];

	rewind(out);
	while (fgets(line, sizeof(line), out))
		if (strncmp(line, "[launch]", 8) == 0 || strstr(line, "level=warn") ||
		    strstr(line, "level=error") || strstr(line, "step split"))
			fputs(line, stdout);
}

static void launch(struct tfj_launch_result *r, FILE *out, int nps, int nworkers, int chief,
		   const char *kill, int64_t at_step, char *const *flags)
{
	TFJ_CHECK_INT(itest_launch_to(r, out, nps, nworkers, chief, 0, kill, at_step, flags), 0);
	echo_events(out);
}

static void test_mlp_overlapped(void)
{
	char *flags[] = { "--model", "mlp", "--epochs", "4", "--progress_steps", "500",
			  "--overlap", NULL };
	struct tfj_launch_result r;
	FILE *out = tmpfile();

	TFJ_CHECK(out != NULL);
	if (!out)
		return;
	launch(&r, out, 1, 2, 0, NULL, 0, flags);
	printf("mlp async overlapped: test accuracy %.4f, %.0f examples/s, %.1f s\n",
	       r.test_accuracy, r.examples_per_sec, r.wall_s);
	TFJ_CHECK_INT(r.exit_code, 0);
	TFJ_CHECK(r.have_final);
	TFJ_CHECK_GE(r.test_accuracy, 0.86);
	TFJ_CHECK_INT(itest_count_lines(out, "[worker:0]", "step split (async, overlapped"), 1);
	TFJ_CHECK_INT(itest_count_lines(out, "[worker:1]", "step split (async, overlapped"), 1);
	TFJ_CHECK_GE(itest_count_lines(out, "[worker:1]", "\"wait_ms\":"), 1);
	TFJ_CHECK_GE(itest_count_lines(out, "[worker:1]", "\"step_ms\":"), 1);
	fclose(out);
}

/*
 * A ps (ps:1 of 2) killed at kill_at of max_steps, chief + 2 workers, no
 * checkpoints: the run must end at max_steps with a usable model after at
 * least one restart and one refill of the empty shard. mode names the
 * overlap's step split line ("async, overlapped").
 */
static void ps_killed(char *const *flags, int64_t kill_at, int64_t max_steps, const char *mode)
{
	struct tfj_launch_result r;
	FILE *out = tmpfile();
	char split[64];
	int inits;

	TFJ_CHECK(out != NULL);
	if (!out)
		return;
	launch(&r, out, 2, 2, 1, "ps:1", kill_at, flags);
	inits = itest_count_lines(out, "[chief:0]", "initialised 1 ps task(s)");
	printf("ps killed, %s: exit %d, restarts %d, step %lld, accuracy %.4f, refills %d, "
	       "%.1f s\n", mode, r.exit_code, r.restarts, (long long)r.step, r.test_accuracy,
	       inits, r.wall_s);
	TFJ_CHECK_INT(r.exit_code, 0);
	TFJ_CHECK(r.have_final);
	TFJ_CHECK_GE(r.restarts, 1);
	TFJ_CHECK_GE(inits, 1);
	TFJ_CHECK_GE(r.step, max_steps);
	TFJ_CHECK_GT(r.test_accuracy, 0.75);
	snprintf(split, sizeof(split), "step split (%s,", mode);
	TFJ_CHECK_INT(itest_count_lines(out, "[chief:0]", split), 1);
	fclose(out);
}

static void test_ps_killed_overlapped(void)
{
	char *flags[] = { "--model", "softmax", "--max_steps", "8000", "--learning_rate", "0.003",
			  "--peer_timeout", "60", "--overlap", NULL };

	ps_killed(flags, 1500, 8000, "async, overlapped");
}

/* The "early parts N" figure of a ps's final log line, or -1. */
static long long early_parts(FILE *out, const char *tag)
{
	char line[4096];
	long long n = -1;

	rewind(out);
	while (fgets(line, sizeof(line), out)) {
		const char *p = strstr(line, "early parts ");

		if (strncmp(line, tag, strlen(tag)) == 0 && p)
			n = strtoll(p + strlen("early parts "), NULL, 10);
	}
	return n;
}

static void test_mlp_push_overlapped(void)
{
	char *flags[] = { "--model", "mlp", "--epochs", "4", "--progress_steps", "500",
			  "--overlap=push", NULL };
	struct tfj_launch_result r;
	FILE *out = tmpfile();
	long long parts;

	TFJ_CHECK(out != NULL);
	if (!out)
		return;
	launch(&r, out, 1, 2, 0, NULL, 0, flags);
	parts = early_parts(out, "[ps:0]");
	printf("mlp async, push overlapped: test accuracy %.4f, %.0f examples/s, %.1f s, "
	       "early parts %lld\n", r.test_accuracy, r.examples_per_sec, r.wall_s, parts);
	TFJ_CHECK_INT(r.exit_code, 0);
	TFJ_CHECK(r.have_final);
	TFJ_CHECK_GE(r.test_accuracy, 0.87);
	TFJ_CHECK_GT(parts, 0);
	TFJ_CHECK_INT(itest_count_lines(out, "[worker:0]", "step split (async, push overlapped"), 1);
	TFJ_CHECK_INT(itest_count_lines(out, "[worker:1]", "step split (async, push overlapped"), 1);
	fclose(out);
}

/* The final record's test_loss text of worker 0, or "" (out: a launch's output). */
static void final_loss(char *buf, size_t cap, FILE *out)
{
	char line[4096];

	buf[0] = '\0';
	rewind(out);
	while (fgets(line, sizeof(line), out)) {
		const char *p = strstr(line, "\"test_loss\":");
		size_t n;

		if (strncmp(line, "[worker:0]", 10) != 0 || !strstr(line, "\"final\":true") || !p)
			continue;
		p += strlen("\"test_loss\":");
		n = strcspn(p, ",}");
		snprintf(buf, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
	}
}

static void one_worker_run(char *loss, size_t cap, const char *overlap)
{
	char *flags[] = { "--model", "mlp", "--max_steps", "400", "--seed", "7",
			  (char *)overlap, NULL };
	struct tfj_launch_result r;
	FILE *out = tmpfile();

	TFJ_CHECK(out != NULL);
	loss[0] = '\0';
	if (!out)
		return;
	launch(&r, out, 2, 1, 0, NULL, 0, flags);
	TFJ_CHECK_INT(r.exit_code, 0);
	final_loss(loss, cap, out);
	printf("one worker, %s: test loss %s, accuracy %.4f\n", overlap, loss, r.test_accuracy);
	fclose(out);
}

static void test_push_same_as_sequential(void)
{
	char seq[64], push[64], step[64];

	one_worker_run(seq, sizeof(seq), "--overlap=off");
	one_worker_run(push, sizeof(push), "--overlap=push");
	one_worker_run(step, sizeof(step), "--overlap=step");
	TFJ_CHECK(seq[0] != '\0');
	TFJ_CHECK_STR(push, seq);
	TFJ_CHECK(strcmp(step, seq) != 0);
}

static void test_ps_killed_push(void)
{
	char *flags[] = { "--model", "mlp", "--max_steps", "4000", "--peer_timeout", "60",
			  "--overlap=push", NULL };

	ps_killed(flags, 1000, 4000, "async, push overlapped");
}

int main(int argc, char **argv)
{
	ITEST_DISPATCH(argc, argv);
	itest_require_data();
	TFJ_RUN(test_mlp_overlapped);
	TFJ_RUN(test_ps_killed_overlapped);
	TFJ_RUN(test_mlp_push_overlapped);
	TFJ_RUN(test_push_same_as_sequential);
	TFJ_RUN(test_ps_killed_push);
	return tfj_test_finish();
}
