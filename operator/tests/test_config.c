/*
 * test_config.c - flags, environment and validation.
 */
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

#include "app/config.h"
#include "tfj_test.h"

static int parse(struct tfj_config *c, int argc, const char **argv)
{
	return tfj_config_parse(c, argc, (char **)argv);
}

static void test_defaults(void)
{
	struct tfj_config c;
	const char *argv[] = { "op" };
	TFJ_CHECK_INT(parse(&c, 1, argv), 0);
	TFJ_CHECK_STR(c.namespace, "");
	TFJ_CHECK_INT(c.workers, 4);
	TFJ_CHECK_STR(c.metrics_addr, ":8080");
	TFJ_CHECK_INT(c.leader_elect, 0);
	TFJ_CHECK_INT(c.log_level, TFJ_LOG_INFO);
	TFJ_CHECK(c.event_qps == 10);
	TFJ_CHECK_INT(c.event_burst, 100);
}

static void bad(int argc, const char **argv, const char *needle);

/* Events have a budget of their own (events.h), set apart from --qps/--burst. */
static void test_event_budget(void)
{
	struct tfj_config c;
	const char *ok[] = { "op", "--event-qps", "2.5", "--qps=40" };
	const char *neg[] = { "op", "--event-qps=-1" };
	const char *big[] = { "op", "--event-burst", "100001" };

	setenv("TFJOB_EVENT_BURST", "9", 1);
	TFJ_CHECK_INT(parse(&c, 4, ok), 0);
	TFJ_CHECK(c.event_qps == 2.5 && c.qps == 40);
	TFJ_CHECK_INT(c.event_burst, 9);
	TFJ_CHECK_INT(c.burst, 100);
	unsetenv("TFJOB_EVENT_BURST");
	bad(2, neg, "--event-qps");
	bad(3, big, "--event-burst");
}

static void test_flags_and_env(void)
{
	struct tfj_config c;
	const char *argv[] = { "op", "--namespace", "ml,ops", "--workers=8", "--leader-elect",
			       "--qps", "12.5", "--log-format=json", "--log-level", "debug",
			       "--metrics-addr=127.0.0.1:0" };
	setenv("TFJOB_WORKERS", "2", 1);
	setenv("TFJOB_BURST", "7", 1);
	TFJ_CHECK_INT(parse(&c, 11, argv), 0);
	TFJ_CHECK_STR(c.namespace, "ml,ops"); /* a list: one informer set each */
	TFJ_CHECK_EQ(c.tokenreview_qps, 5.0);
	TFJ_CHECK_INT(c.tokenreview_burst, 20);
	TFJ_CHECK_INT(c.workers, 8);  /* the flag wins */
	TFJ_CHECK_INT(c.burst, 7);    /* from the environment */
	TFJ_CHECK_INT(c.leader_elect, 1);
	TFJ_CHECK(c.qps == 12.5);
	TFJ_CHECK_INT(c.log_format, TFJ_LOG_FMT_JSON);
	TFJ_CHECK_INT(c.log_level, TFJ_LOG_DEBUG);
	TFJ_CHECK_STR(c.metrics_addr, "127.0.0.1:0");
	TFJ_CHECK_STR(c.gang_scheduler, ""); /* gang scheduling is off by default */
	unsetenv("TFJOB_WORKERS");
	unsetenv("TFJOB_BURST");
}

/* /debug/informers lists every cached object: loopback only; probes apart. */
static void test_debug_and_health_addr(void)
{
	struct tfj_config c;
	const char *none[] = { "op" };
	const char *ok4[] = { "op", "--debug-addr=127.0.0.1:8082", "--health-addr=:8081" };
	const char *ok6[] = { "op", "--debug-addr", "[::1]:0" };
	const char *any[] = { "op", "--debug-addr=:8082" };
	const char *all4[] = { "op", "--debug-addr=0.0.0.0:8082" };
	const char *pod[] = { "op", "--debug-addr=10.0.0.5:8082" };
	const char *bare[] = { "op", "--debug-addr=8082" };

	TFJ_CHECK_INT(parse(&c, 1, none), 0);
	TFJ_CHECK_STR(c.debug_addr, "");
	TFJ_CHECK_STR(c.health_addr, "");
	TFJ_CHECK_INT(parse(&c, 3, ok4), 0);
	TFJ_CHECK_STR(c.debug_addr, "127.0.0.1:8082");
	TFJ_CHECK_STR(c.health_addr, ":8081");
	TFJ_CHECK_INT(parse(&c, 3, ok6), 0);
	TFJ_CHECK_STR(c.debug_addr, "[::1]:0");
	bad(2, any, "--debug-addr");
	bad(2, all4, "--debug-addr");
	bad(2, pod, "--debug-addr");
	bad(2, bare, "--debug-addr");
}

static void test_gang_scheduler_name(void)
{
	struct tfj_config c;
	const char *argv[] = { "op", "--gang-scheduler-name", "scheduler-plugins" };
	const char *bad_name[] = { "op", "--gang-scheduler-name=Not_A_Name" };

	TFJ_CHECK_INT(parse(&c, 3, argv), 0);
	TFJ_CHECK_STR(c.gang_scheduler, "scheduler-plugins");
	setenv("TFJOB_GANG_SCHEDULER_NAME", "volcano", 1);
	TFJ_CHECK_INT(parse(&c, 1, argv), 0);
	TFJ_CHECK_STR(c.gang_scheduler, "volcano");
	unsetenv("TFJOB_GANG_SCHEDULER_NAME");
	TFJ_CHECK_INT(parse(&c, 2, bad_name), TFJ_EINVAL);
}

static void bad(int argc, const char **argv, const char *needle)
{
	struct tfj_config c;
	TFJ_CHECK_INT(parse(&c, argc, argv), TFJ_EINVAL);
	if (!strstr(tfj_err_detail(), needle))
		tfj_test_fail(__FILE__, __LINE__, "\"%s\" lacks \"%s\"", tfj_err_detail(), needle);
}

/* The force-delete bound for pods of a lost node (tfjob/planlost.h); 0 = never. */
static void test_lost_pod_timeout(void)
{
	struct tfj_config c;
	const char *def[] = { "op" };
	const char *off[] = { "op", "--lost-pod-timeout=0" };
	const char *neg[] = { "op", "--lost-pod-timeout", "-1" };
	const char *big[] = { "op", "--lost-pod-timeout", "86401" };

	TFJ_CHECK_INT(parse(&c, 1, def), 0);
	TFJ_CHECK_INT(c.lost_pod_timeout_s, 300);
	TFJ_CHECK_INT(parse(&c, 2, off), 0);
	TFJ_CHECK_INT(c.lost_pod_timeout_s, 0);
	setenv("TFJOB_LOST_POD_TIMEOUT", "45", 1);
	TFJ_CHECK_INT(parse(&c, 1, def), 0);
	TFJ_CHECK_INT(c.lost_pod_timeout_s, 45);
	unsetenv("TFJOB_LOST_POD_TIMEOUT");
	bad(3, neg, "--lost-pod-timeout");
	bad(3, big, "--lost-pod-timeout");
}

static void test_bad(void)
{
	const char *a1[] = { "op", "--workers", "0" };
	const char *a2[] = { "op", "--workers", "12abc" };
	const char *a3[] = { "op", "--nope" };
	const char *a4[] = { "op", "--namespace" };
	const char *a5[] = { "op", "--qps", "nan" };
	const char *a6[] = { "op", "--leader-elect=maybe" };
	const char *a7[] = { "op", "positional" };
	const char *a8[] = { "op", "--log-level", "loud" };
	const char *a9[] = { "op", "--namespace", "team-a,Team_B" };
	const char *a10[] = { "op", "--tokenreview-qps", "-1" };
	struct tfj_config c;
	bad(3, a1, "--workers");
	bad(3, a2, "--workers");
	bad(2, a3, "unknown flag --nope");
	bad(2, a4, "needs a value");
	bad(3, a5, "--qps");
	bad(2, a6, "boolean");
	bad(2, a7, "unexpected argument");
	bad(3, a8, "--log-level");
	bad(3, a9, "--namespace");
	bad(3, a10, "--tokenreview-qps");
	setenv("TFJOB_WORKERS", "-3", 1);
	TFJ_CHECK_INT(tfj_config_parse(&c, 1, (char *[]){ "op", NULL }), TFJ_EINVAL);
	TFJ_CHECK(strstr(tfj_err_detail(), "TFJOB_WORKERS") != NULL);
	unsetenv("TFJOB_WORKERS");
}

static void test_report_flags(void)
{
	struct tfj_config c;
	const char *on[] = { "op", "--report-addr", ":9443", "--report-service",
			     "tfjob-operator.kubeflow.svc:9443", "--report-audience=aud" };
	const char *half1[] = { "op", "--report-addr", ":9443" };
	const char *half2[] = { "op", "--report-service", "x.svc:9443" };
	const char *noaud[] = { "op", "--report-audience=" };
	const char *none[] = { "op" };

	TFJ_CHECK_INT(parse(&c, 1, none), 0);
	TFJ_CHECK_STR(c.report_addr, "");
	TFJ_CHECK_STR(c.report_service, "");
	TFJ_CHECK_STR(c.report_audience, "tfjob-report");
	TFJ_CHECK_INT(parse(&c, 6, on), 0);
	TFJ_CHECK_STR(c.report_addr, ":9443");
	TFJ_CHECK_STR(c.report_service, "tfjob-operator.kubeflow.svc:9443");
	TFJ_CHECK_STR(c.report_audience, "aud");
	bad(3, half1, "go together");
	bad(3, half2, "go together");
	bad(2, noaud, "--report-audience");
	/* TLS unless told otherwise; the Secret's name and who makes it. */
	TFJ_CHECK_INT(c.report_insecure, 0);
	TFJ_CHECK_STR(c.report_tls_secret, "tfjob-operator-report-tls");
	TFJ_CHECK_INT(c.report_tls_external, 0);
	/* The connections' memory quota: 16 MiB unless told, within 4..4096. */
	TFJ_CHECK_INT(c.report_conn_memory_mib, 16);
	{
		const char *mem[] = { "op", "--report-conn-memory=64" };
		const char *small[] = { "op", "--report-conn-memory=1" };

		TFJ_CHECK_INT(parse(&c, 2, mem), 0);
		TFJ_CHECK_INT(c.report_conn_memory_mib, 64);
		bad(2, small, "--report-conn-memory");
	}
	{
		const char *tls[] = { "op", "--report-insecure", "--report-tls-secret", "s1",
				      "--report-tls-external=true" };
		const char *badbool[] = { "op", "--report-insecure=maybe" };
		const char *nosecret[] = { "op", "--report-tls-secret=" };

		TFJ_CHECK_INT(parse(&c, 5, tls), 0);
		TFJ_CHECK_INT(c.report_insecure, 1);
		TFJ_CHECK_STR(c.report_tls_secret, "s1");
		TFJ_CHECK_INT(c.report_tls_external, 1);
		bad(2, badbool, "--report-insecure");
		bad(2, nosecret, "--report-tls-secret");
	}
	{
		const char *cm[] = { "op", "--report-ca-configmap", "rel-a-report-ca" };
		const char *upper[] = { "op", "--report-ca-configmap=Rel" };
		const char *slash[] = { "op", "--report-ca-configmap=a/b" };
		const char *empty[] = { "op", "--report-ca-configmap=" };

		TFJ_CHECK_STR(c.report_ca_configmap, "");
		TFJ_CHECK_INT(parse(&c, 3, cm), 0);
		TFJ_CHECK_STR(c.report_ca_configmap, "rel-a-report-ca");
		bad(2, upper, "--report-ca-configmap");
		bad(2, slash, "--report-ca-configmap");
		bad(2, empty, "--report-ca-configmap");
	}
}

static void test_agent_flags(void)
{
	struct tfj_config c;
	const char *none[] = { "op" };
	const char *on[] = { "op", "--agent-image", "localhost/tfjob-agent:dev",
			     "--agent-inject-default" };
	const char *noimage[] = { "op", "--agent-inject-default=true" };

	TFJ_CHECK_INT(parse(&c, 1, none), 0);
	TFJ_CHECK_STR(c.agent_image, "");
	TFJ_CHECK_INT(c.agent_inject_default, 0);
	TFJ_CHECK_INT(parse(&c, 4, on), 0);
	TFJ_CHECK_STR(c.agent_image, "localhost/tfjob-agent:dev");
	TFJ_CHECK_INT(c.agent_inject_default, 1);
	bad(2, noimage, "needs --agent-image");
}

static void test_kueue_flag(void)
{
	struct tfj_config c;
	const char *none[] = { "op" };
	const char *on[] = { "op", "--kueue-pod-groups" };
	const char *off[] = { "op", "--kueue-pod-groups=false" };

	TFJ_CHECK_INT(parse(&c, 1, none), 0);
	TFJ_CHECK_INT(c.kueue_pod_groups, 0);
	TFJ_CHECK_INT(parse(&c, 2, on), 0);
	TFJ_CHECK_INT(c.kueue_pod_groups, 1);
	TFJ_CHECK_INT(parse(&c, 2, off), 0);
	TFJ_CHECK_INT(c.kueue_pod_groups, 0);
}

int main(void)
{
	TFJ_RUN(test_agent_flags);
	TFJ_RUN(test_kueue_flag);
	TFJ_RUN(test_report_flags);
	TFJ_RUN(test_defaults);
	TFJ_RUN(test_flags_and_env);
	TFJ_RUN(test_bad);
	TFJ_RUN(test_lost_pod_timeout);
	TFJ_RUN(test_event_budget);
	TFJ_RUN(test_gang_scheduler_name);
	TFJ_RUN(test_debug_and_health_addr);
	return tfj_test_finish();
}
