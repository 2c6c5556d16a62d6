/*
 * cli.c - subcommands of tfjob-runtime (cli.h).
 */
#include "cli/cli.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/grpc.h>

#include <tfj/err.h>
#include <tfj/log.h>
#include <tfj/tfconfig.h>

#include <tfj/exitcode.h>
#include "cli/launch.h"
#include "ps/server.h"
#include "task/rtconfig.h"
#include "task/stop.h"
#include "worker/trainer.h"
#include "wire/wire.h"

static void on_signal(int sig)
{
	(void)sig;
	tfj_stop_request();
}

static void install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: tfjob-runtime train [flags]     run one task (TF_CONFIG or cluster flags)\n"
		   "       tfjob-runtime launch [flags]    run a local cluster on 127.0.0.1\n"
		   "       tfjob-runtime help | version\n\n"
		   "Flags are spelled with dashes; the underscore spelling of TensorFlow scripts\n"
		   "(--peer_timeout for --peer-timeout) is still accepted for every flag.\n\n"
		   "launch flags: --ps N (1) --workers M (2) --chief --evaluator --timeout S\n"
		   "              --max-restarts N (3) --chaos-kill TASK --chaos-after S --quiet\n"
		   "              --chaos-at-step N (kill once the coordinator reports step N)\n"
		   "              plus any train flag, handed to every task\n\n"
		   "train flags:\n%s\nexit codes: see docs/runtime-exit-codes.md\n",
		tfj_rtconfig_usage());
}

static int cmd_train(int argc, char **argv)
{
	struct tfj_rtconfig cfg;
	const char *tfc = getenv("TF_CONFIG");
	int rc, code;

	if (tfc && strnlen(tfc, TFJ_TFCONFIG_MAX_BYTES + 1) > TFJ_TFCONFIG_MAX_BYTES) {
		tfj_log_error("TF_CONFIG is larger than 1 MiB");
		return TFJ_EXIT_USAGE;
	}
	rc = tfj_rtconfig_parse(&cfg, argc, argv, tfc);
	if (rc) {
		tfj_log_error("bad configuration", "error", tfj_err_name(rc), "detail",
			      tfj_err_detail(), "exit", "usage");
		fprintf(stderr, "tfjob-runtime: %s (try tfjob-runtime help)\n", tfj_err_detail());
		return TFJ_EXIT_USAGE;
	}
	grpc_init();
	switch (cfg.role) {
	case TFJ_ROLE_PS:
		code = tfj_server_main(&cfg);
		break;
	case TFJ_ROLE_EVALUATOR:
		code = tfj_evaluator_main(&cfg);
		break;
	default:
		code = tfj_trainer_main(&cfg);
		break;
	}
	grpc_shutdown();
	tfj_rtconfig_free(&cfg);
	return code;
}

static int cmd_launch(int argc, char **argv)
{
	struct tfj_launch_opts o;
	struct tfj_launch_result res;
	int rc;

	rc = tfj_launch_parse(&o, argc, argv);
	if (rc == 0) {
		o.exe = "/proc/self/exe";
		rc = tfj_launch_run(&o, &res);
	}
	if (rc) {
		fprintf(stderr, "tfjob-runtime launch: %s\n", tfj_err_detail());
		tfj_launch_opts_free(&o);
		return tfj_exitcode_from_err(rc);
	}
	printf("\n== tfjob-runtime launch: %d ps, %d worker(s)%s%s, %d restart(s)\n", o.nps,
	       o.nworkers, o.chief ? ", chief" : "", o.evaluator ? ", evaluator" : "", res.restarts);
	if (res.have_final) {
		printf("final test accuracy : %.4f\n", res.test_accuracy);
		printf("global steps        : %lld\n", (long long)res.step);
		printf("examples/s          : %.0f\n", res.examples_per_sec);
	} else {
		printf("final test accuracy : (no final record)\n");
	}
	if (res.eval_accuracy >= 0)
		printf("evaluator accuracy  : %.4f\n", res.eval_accuracy);
	printf("wall time           : %.1f s\n", res.wall_s);
	printf("exit code           : %d (%s)\n", res.exit_code, tfj_exitcode_name(res.exit_code));
	printf("TFJ_RESULT {\"test_accuracy\":%.6f,\"examples_per_sec\":%.1f,\"step\":%lld,"
	       "\"wall_s\":%.2f,\"restarts\":%d,\"exit_code\":%d}\n",
	       res.have_final ? res.test_accuracy : 0.0, res.examples_per_sec,
	       (long long)res.step, res.wall_s, res.restarts, res.exit_code);
	fflush(stdout);
	tfj_launch_opts_free(&o);
	return res.exit_code;
}

int tfj_cli_main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	tfj_log_set_component("runtime");
	tfj_wire_tune_malloc();
	install_signals();
	if (!cmd || strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 ||
	    strcmp(cmd, "-h") == 0) {
		usage(cmd ? stdout : stderr);
		return cmd ? TFJ_EXIT_OK : TFJ_EXIT_USAGE;
	}
	if (strcmp(cmd, "version") == 0) {
		printf("tfjob-runtime 0.1.0 (protocol tfj.runtime.v1)\n");
		return TFJ_EXIT_OK;
	}
	if (strcmp(cmd, "train") == 0)
		return cmd_train(argc - 2, argv + 2);
	if (strcmp(cmd, "launch") == 0)
		return cmd_launch(argc - 2, argv + 2);
	fprintf(stderr, "tfjob-runtime: unknown command \"%.40s\"\n", cmd);
	usage(stderr);
	return TFJ_EXIT_USAGE;
}
