/*
 * itest_fault.c - training survives a worker killed mid-run.
 *
 * The launcher kills worker:1 with SIGKILL once the chief reported global
 * step 1000 (a fifth of the shortest job here, so the kill lands mid-run
 * however fast the machine trains); its exit
 * (137) is retryable, so the restart policy starts it again, and the new
 * process rejoins: pulls the current parameters and keeps pushing. In async
 * mode the others never wait for it; in sync mode with every replica
 * required the step stalls until it is back, then goes on. With a backup
 * worker (2 of 3 replicas aggregated) the step does not even stall.
 */
#include "itest_util.h"

static void run(const char *mode, const char *k, int64_t at_step, int want_restart)
{
	struct tfj_launch_result r;
	char *flags[] = { "--model", "softmax", "--max_steps", "10000", "--learning_rate", "0.003",
			  "--peer_timeout", "60", NULL, NULL, NULL, NULL };

	if (strcmp(mode, "async") != 0) {
		flags[8] = "--sync";
		flags[9] = "--replicas_to_aggregate";
		flags[10] = (char *)k;
		flags[2 + 1] = "5000";
	}
	TFJ_CHECK_INT(itest_launch(&r, 1, 2, 1, 0, "worker:1", at_step, flags), 0);
	printf("%s: exit %d, restarts %d, step %lld, accuracy %.4f, %.1f s\n", mode, r.exit_code,
	       r.restarts, (long long)r.step, r.test_accuracy, r.wall_s);
	TFJ_CHECK_INT(r.exit_code, 0);
	TFJ_CHECK(r.have_final);
	if (want_restart)
		TFJ_CHECK_GE(r.restarts, 1);
	TFJ_CHECK_GT(r.test_accuracy, 0.75);
}

static void test_async_worker_killed(void)
{
	run("async", NULL, 1000, 1);
}

static void test_sync_worker_killed(void)
{
	run("sync", "3", 1000, 1);
}

static void test_sync_backup_worker_killed(void)
{
	run("sync-backup", "2", 1000, 1);
}

int main(int argc, char **argv)
{
	ITEST_DISPATCH(argc, argv);
	itest_require_data();
	TFJ_RUN(test_async_worker_killed);
	TFJ_RUN(test_sync_worker_killed);
	TFJ_RUN(test_sync_backup_worker_killed);
	return tfj_test_finish();
}
