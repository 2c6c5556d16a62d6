/*
 * test_config.c - flags and environment of the agent.
 */
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include "config.h"
#include "tfj_test.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])) - 1)

static void test_defaults_and_env(void)
{
	char *argv[] = { "tfjob-agent", "python", "train.py", "--epochs", "3", NULL };
	struct tfj_agent_config c;

	setenv("TFJOB_REPORT_ADDR", "tfjob-operator.sys:9443", 1);
	setenv("TFJOB_JOB_NAMESPACE", "ns1", 1);
	setenv("TFJOB_REPLICA_INDEX", "4", 1);
	setenv("POD_NAME", "pod-x", 1);
	TFJ_CHECK_INT(tfj_agent_config_parse(&c, ARGC(argv), argv), 0);
	/* Options of the command are the command's, not ours. */
	TFJ_CHECK(c.command == &argv[1]);
	TFJ_CHECK_STR(c.command[2], "--epochs");
	TFJ_CHECK(c.grace_s == 25.0);
	TFJ_CHECK_INT(c.peer_mode, TFJ_PEERS_DNS);
	TFJ_CHECK_STR(c.termination_log, "/dev/termination-log");
	TFJ_CHECK_INT(c.line_max, TFJ_PROGRESS_LINE_DEFAULT);
	TFJ_CHECK_STR(c.report_addr, "tfjob-operator.sys:9443");
	TFJ_CHECK_STR(c.namespace_, "ns1");
	TFJ_CHECK_INT(c.replica_index, 4);
	TFJ_CHECK_STR(c.pod_name, "pod-x");
	TFJ_CHECK_INT(c.report, 1);
	TFJ_CHECK_INT(c.report_insecure, 0);  /* plaintext only when asked for */
	tfj_agent_config_free(&c);
	setenv("TFJOB_REPORT_INSECURE", "true", 1);
	TFJ_CHECK_INT(tfj_agent_config_parse(&c, ARGC(argv), argv), 0);
	TFJ_CHECK_INT(c.report_insecure, 1);
	tfj_agent_config_free(&c);
	setenv("TFJOB_REPORT_INSECURE", "maybe", 1);
	TFJ_CHECK_INT(tfj_agent_config_parse(&c, ARGC(argv), argv), TFJ_EINVAL);
	unsetenv("TFJOB_REPORT_INSECURE");
	{
		char *fl[] = { "tfjob-agent", "--report-insecure", "--report-ca-file", "/ca",
			       "true", NULL };

		TFJ_CHECK_INT(tfj_agent_config_parse(&c, ARGC(fl), fl), 0);
		TFJ_CHECK_INT(c.report_insecure, 1);
		TFJ_CHECK_STR(c.report_ca_file, "/ca");
		tfj_agent_config_free(&c);
	}
	setenv("TFJOB_REPLICA_INDEX", "-1", 1);
	TFJ_CHECK_INT(tfj_agent_config_parse(&c, ARGC(argv), argv), TFJ_EINVAL);
	unsetenv("TFJOB_REPLICA_INDEX");
	unsetenv("TFJOB_REPORT_ADDR");
	unsetenv("TFJOB_JOB_NAMESPACE");
	unsetenv("POD_NAME");
}

static void test_flags(void)
{
	char *argv[] = { "tfjob-agent", "--grace-period", "3.5", "--peer-wait=tcp",
			 "--peer-types", "ps,chief", "--peer-timeout=60", "--termination-log", "none",
			 "--progress-regex", "it ([0-9]+)", "--progress-field", "step=1",
			 "--line-max=4096", "--report-addr", "127.0.0.1:1", "--no-report",
			 "--signal-target=child", "--heartbeat-interval", "0.5", "--",
			 "--weird-command", NULL };
	char *skip[] = { "tfjob-agent", "--skip-peer-wait", "--", "true", NULL };
	struct tfj_agent_config c;

	TFJ_CHECK_INT(tfj_agent_config_parse(&c, ARGC(argv), argv), 0);
	TFJ_CHECK(c.grace_s == 3.5);
	TFJ_CHECK_INT(c.peer_mode, TFJ_PEERS_TCP);
	TFJ_CHECK_STR(c.peer_types, "ps,chief");
	TFJ_CHECK(c.peer_timeout_s == 60);
	TFJ_CHECK(c.termination_log == NULL);
	TFJ_CHECK_STR(c.progress_regex, "it ([0-9]+)");
	TFJ_CHECK_INT(c.nprogress_fields, 1);
	TFJ_CHECK_INT(c.line_max, 4096);
	TFJ_CHECK_INT(c.report, 0);
	TFJ_CHECK_INT(c.signal_group, 0);
	TFJ_CHECK(c.heartbeat_s == 0.5);
	TFJ_CHECK_STR(c.command[0], "--weird-command");
	TFJ_CHECK_INT(tfj_agent_config_parse(&c, ARGC(skip), skip), 0);
	TFJ_CHECK_INT(c.peer_mode, TFJ_PEERS_NONE);
}

static void test_errors(void)
{
	char *cases[][5] = {
		{ "tfjob-agent", NULL },
		{ "tfjob-agent", "--", NULL },
		{ "tfjob-agent", "--bogus", "--", "x", NULL },
		{ "tfjob-agent", "-x", "cmd", NULL },
		{ "tfjob-agent", "--grace-period", "-1", "cmd", NULL },
		{ "tfjob-agent", "--grace-period", "1e9", "cmd", NULL },
		{ "tfjob-agent", "--grace-period=nan", "cmd", NULL },
		{ "tfjob-agent", "--peer-timeout", "0", "cmd", NULL },
		{ "tfjob-agent", "--line-max", "12", "cmd", NULL },
		{ "tfjob-agent", "--line-max", "-5", "cmd", NULL },
		{ "tfjob-agent", "--peer-wait", "maybe", "cmd", NULL },
		{ "tfjob-agent", "--signal-target", "all", "cmd", NULL },
		{ "tfjob-agent", "--progress-field", "step=1", "cmd", NULL },
		{ "tfjob-agent", "--termination-log=", "cmd", NULL },
		{ "tfjob-agent", "--heartbeat-interval", NULL },
	};
	struct tfj_agent_config c;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int argc = 0;
		while (cases[i][argc])
			argc++;
		if (tfj_agent_config_parse(&c, argc, cases[i]) != TFJ_EINVAL)
			tfj_test_fail(__FILE__, __LINE__, "case %zu (%s) accepted", i,
				      argc > 1 ? cases[i][1] : "");
		TFJ_CHECK_GT(strlen(tfj_err_detail()), 0);
	}
	{
		char *h[] = { "tfjob-agent", "--help", NULL };
		TFJ_CHECK_INT(tfj_agent_config_parse(&c, 2, h), 0);
		TFJ_CHECK_INT(c.help, 1);
		TFJ_CHECK(strstr(tfj_agent_config_usage(), "--peer-wait") != NULL);
	}
}

static void test_scan_termination_log(void)
{
	char *a[] = { "tfjob-agent", "--grace-period", "5", "--termination-log", "/tmp/t1",
		      "--bogus", "--", "x", "--termination-log", "/tmp/no", NULL };
	char *b[] = { "tfjob-agent", "--termination-log=none", "--x", NULL };
	char *c[] = { "tfjob-agent", "cmd", "--termination-log", "/tmp/no", NULL };

	TFJ_CHECK_STR(tfj_agent_config_scan_termination_log(ARGC(a), a), "/tmp/t1");
	TFJ_CHECK(tfj_agent_config_scan_termination_log(ARGC(b), b) == NULL);
	TFJ_CHECK_STR(tfj_agent_config_scan_termination_log(ARGC(c), c), "/dev/termination-log");
}

int main(void)
{
	TFJ_RUN(test_defaults_and_env);
	TFJ_RUN(test_flags);
	TFJ_RUN(test_errors);
	TFJ_RUN(test_scan_termination_log);
	return tfj_test_finish();
}
