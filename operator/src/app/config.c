/*
 * config.c - flags and environment.
 */
#include "app/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/parse.h>

#include "kube/nsinformer.h"
#include "tfjob/planlost.h"
#include "tfjob/podgroup.h"

struct opt {
	const char *flag;   /* without "--" */
	const char *env;
	int is_bool;
};

static const struct opt opts[] = {
	{ "namespace", "TFJOB_NAMESPACE", 0 },
	{ "workers", "TFJOB_WORKERS", 0 },
	{ "qps", "TFJOB_QPS", 0 },
	{ "burst", "TFJOB_BURST", 0 },
	{ "event-qps", "TFJOB_EVENT_QPS", 0 },
	{ "event-burst", "TFJOB_EVENT_BURST", 0 },
	{ "cluster-domain", "TFJOB_CLUSTER_DOMAIN", 0 },
	{ "log-level", "TFJOB_LOG_LEVEL", 0 },
	{ "log-format", "TFJOB_LOG_FORMAT", 0 },
	{ "metrics-addr", "TFJOB_METRICS_ADDR", 0 },
	{ "health-addr", "TFJOB_HEALTH_ADDR", 0 },
	{ "debug-addr", "TFJOB_DEBUG_ADDR", 0 },
	{ "leader-elect", "TFJOB_LEADER_ELECT", 1 },
	{ "leader-elect-namespace", "TFJOB_LEADER_ELECT_NAMESPACE", 0 },
	{ "leader-elect-name", "TFJOB_LEADER_ELECT_NAME", 0 },
	{ "kubeconfig", "TFJOB_KUBECONFIG", 0 },
	{ "operator-name", "TFJOB_OPERATOR_NAME", 0 },
	{ "report-addr", "TFJOB_REPORT_ADDR", 0 },
	{ "report-service", "TFJOB_REPORT_SERVICE", 0 },
	{ "report-audience", "TFJOB_REPORT_AUDIENCE", 0 },
	{ "report-insecure", "TFJOB_REPORT_INSECURE", 1 },
	{ "report-tls-secret", "TFJOB_REPORT_TLS_SECRET", 0 },
	{ "report-ca-configmap", "TFJOB_REPORT_CA_CONFIGMAP", 0 },
	{ "report-tls-external", "TFJOB_REPORT_TLS_EXTERNAL", 1 },
	{ "report-conn-memory", "TFJOB_REPORT_CONN_MEMORY", 0 },
	{ "tokenreview-qps", "TFJOB_TOKENREVIEW_QPS", 0 },
	{ "tokenreview-burst", "TFJOB_TOKENREVIEW_BURST", 0 },
	{ "pod-name", "TFJOB_POD_NAME", 0 },
	{ "managed-by", "TFJOB_MANAGED_BY", 0 },
	{ "informer-stale-after", "TFJOB_INFORMER_STALE_AFTER", 0 },
	{ "lost-pod-timeout", "TFJOB_LOST_POD_TIMEOUT", 0 },
	{ "gang-scheduler-name", "TFJOB_GANG_SCHEDULER_NAME", 0 },
	{ "agent-image", "TFJOB_AGENT_IMAGE", 0 },
	{ "agent-inject-default", "TFJOB_AGENT_INJECT_DEFAULT", 1 },
	{ "kueue-pod-groups", "TFJOB_KUEUE_POD_GROUPS", 1 },
	{ "help", NULL, 1 },
	{ "version", NULL, 1 },
};
#define NOPTS (sizeof(opts) / sizeof(opts[0]))

const char *tfj_config_usage(void)
{
	return "usage: tfjob-operator [flags]\n"
	       "  --namespace NS[,NS...]    watch only these namespaces, each with its own\n"
	       "                            informers (a Role there suffices; default: all)\n"
	       "  --workers N               reconcile threads, 1-256 (default 4)\n"
	       "  --qps Q                   API requests per second (default 50)\n"
	       "  --burst B                 API request burst (default 100)\n"
	       "  --event-qps Q             Events posted per second, a budget of their own\n"
	       "                            (default 10)\n"
	       "  --event-burst B           Event burst (default 100)\n"
	       "  --cluster-domain D        append D to TF_CONFIG hosts (default: none)\n"
	       "  --log-level L             debug|info|warn|error (default info)\n"
	       "  --log-format F            kv|json (default kv)\n"
	       "  --metrics-addr A          [host]:port for /metrics, /healthz, /readyz;\n"
	       "                            0 disables (default :8080)\n"
	       "  --health-addr A           [host]:port for /healthz and /readyz alone, on\n"
	       "                            a thread of their own (default: off)\n"
	       "  --debug-addr A            127.0.0.1:port or [::1]:port for\n"
	       "                            /debug/informers (default: off)\n"
	       "  --leader-elect[=BOOL]     use a Lease so one replica is active\n"
	       "  --leader-elect-namespace  namespace of the Lease\n"
	       "  --leader-elect-name       name of the Lease (default tfjob-operator)\n"
	       "  --kubeconfig PATH         kubeconfig (default: $KUBECONFIG, in-cluster,\n"
	       "                            ~/.kube/config)\n"
	       "  --operator-name NAME      value of the operator-name label\n"
	       "  --report-addr A           [host]:port of the agents' report service (gRPC);\n"
	       "                            empty disables the channel (default)\n"
	       "  --report-service H:P      address pods reach it at, injected as\n"
	       "                            TFJOB_REPORT_ADDR (e.g. tfjob-operator.NS.svc:9443);\n"
	       "                            required with --report-addr\n"
	       "  --report-audience AUD     audience of the pods' report token\n"
	       "                            (default tfjob-report)\n"
	       "  --report-insecure[=BOOL]  serve the report channel in plaintext (pods get\n"
	       "                            TFJOB_REPORT_INSECURE); default TLS with a\n"
	       "                            certificate for --report-service's Service\n"
	       "  --report-tls-secret NAME  Secret (in the Service's namespace) of the serving\n"
	       "                            certificate (default tfjob-operator-report-tls);\n"
	       "                            the CA's key is kept apart in NAME-ca-key\n"
	       "  --report-ca-configmap NAME  ConfigMap the CA is published as in job\n"
	       "                            namespaces; one per install (default\n"
	       "                            <operator name>-report-ca)\n"
	       "  --report-tls-external[=BOOL]  the Secret is made by cert-manager: only\n"
	       "                            read it, never create or rotate it\n"
	       "  --report-conn-memory MIB  memory quota of the report port's connections\n"
	       "                            (default 16, about 500 held connections; more\n"
	       "                            agents reconnect per heartbeat)\n"
	       "  --tokenreview-qps Q       TokenReviews per second for the report channel where\n"
	       "                            issuer discovery is unavailable, on an API client of\n"
	       "                            their own (default 5; a quarter per namespace)\n"
	       "  --tokenreview-burst B     TokenReview burst (default 20)\n"
	       "  --pod-name NAME           this replica's pod (downward API): with the report\n"
	       "                            channel, the leader labels it\n"
	       "                            tfjob.kubeflow.org/report-leader=true, the label\n"
	       "                            the report Service selects (default: no label)\n"
	       "  --managed-by VALUE        act only on TFJobs whose runPolicy.managedBy is\n"
	       "                            VALUE (default: unset or kubeflow.org/training-operator)\n"
	       "  --informer-stale-after S  /readyz fails once an informer has had no\n"
	       "                            working LIST/WATCH for S seconds, 5-86400\n"
	       "                            (default 120)\n"
	       "  --lost-pod-timeout S      force-delete a running job's terminating pod\n"
	       "                            still there S seconds after its grace period\n"
	       "                            whose agent has been silent as long (its node\n"
	       "                            is presumed lost), and recreate it; 0-86400,\n"
	       "                            0 = never (default 300)\n"
	       "  --gang-scheduler-name N   gang scheduling: one PodGroup per TFJob and its\n"
	       "                            pods' schedulerName; volcano (Volcano PodGroups)\n"
	       "                            or the scheduler-plugins scheduler's name, e.g.\n"
	       "                            scheduler-plugins (coscheduling PodGroups);\n"
	       "                            empty or none: off (default)\n"
	       "  --agent-image IMAGE       image whose tfjob-agent is injected into TFJobs\n"
	       "                            annotated tfjob.kubeflow.org/agent: inject\n"
	       "  --agent-inject-default[=BOOL]  inject into TFJobs without that annotation\n"
	       "                            too (\"none\" opts out); needs --agent-image\n"
	       "  --kueue-pod-groups[=BOOL] Kueue pod-group mode for TFJobs that name a\n"
	       "                            LocalQueue (docs/kueue.md)\n"
	       "Every flag can also be set as TFJOB_<FLAG> (e.g. TFJOB_WORKERS=8).\n";
}

/*
 * --debug-addr: /debug/informers lists every cached object of the
 * cluster, so it is served only on a loopback address (kubectl
 * port-forward reaches it; no other pod does). "" turns it off.
 */
static int parse_debug_addr(const char **out, const char *v)
{
	char host[64];
	int port;

	if (!*v) {
		*out = v;
		return 0;
	}
	if (tfj_parse_hostport(host, sizeof(host), &port, v, TFJ_HOSTPORT_PORT_ZERO |
			       TFJ_HOSTPORT_NUMERIC, "--debug-addr"))
		return tfj_err_set(TFJ_EINVAL, "%s", tfj_err_detail());
	if (strcmp(host, "127.0.0.1") != 0 && strcmp(host, "::1") != 0)
		return tfj_err_set(TFJ_EINVAL, "--debug-addr: %s is not 127.0.0.1 or [::1]", host);
	*out = v;
	return 0;
}

/* A rate in requests per second, [0, 100000]; 0 = unlimited. */
static int parse_rate(double *out, const char *v, const char *flag)
{
	return tfj_parse_double(out, v, 0, 100000, flag);
}

static int apply(struct tfj_config *cfg, const char *name, const char *v)
{
	char flag[48];

	snprintf(flag, sizeof(flag), "--%s", name);
	if (!strcmp(name, "namespace")) {
		char names[TFJ_NSINFORMER_MAX][64];
		size_t n;

		if (tfj_nsinformer_parse(names, &n, v))
			return tfj_err_set(TFJ_EINVAL, "--namespace: %s", tfj_err_detail());
		cfg->namespace = v;
	} else if (!strcmp(name, "workers")) {
		return tfj_parse_int(&cfg->workers, v, 1, 256, flag);
	} else if (!strcmp(name, "qps")) {
		return parse_rate(&cfg->qps, v, flag);
	} else if (!strcmp(name, "burst")) {
		return tfj_parse_int(&cfg->burst, v, 1, 100000, flag);
	} else if (!strcmp(name, "event-qps")) {
		return parse_rate(&cfg->event_qps, v, flag);
	} else if (!strcmp(name, "event-burst")) {
		return tfj_parse_int(&cfg->event_burst, v, 1, 100000, flag);
	} else if (!strcmp(name, "cluster-domain")) {
		cfg->cluster_domain = v;
	} else if (!strcmp(name, "managed-by")) {
		if (strlen(v) > 63)
			return tfj_err_set(TFJ_EINVAL, "--managed-by: longer than 63 characters");
		cfg->managed_by = v;
	} else if (!strcmp(name, "gang-scheduler-name")) {
		struct tfj_gang g;
		if (tfj_podgroup_parse(&g, v))
			return tfj_err_set(TFJ_EINVAL, "--gang-scheduler-name: %s", tfj_err_detail());
		cfg->gang_scheduler = v;
	} else if (!strcmp(name, "log-level")) {
		if (tfj_log_parse_level(&cfg->log_level, v))
			return tfj_err_set(TFJ_EINVAL, "--log-level: %s is not debug|info|warn|error", v);
	} else if (!strcmp(name, "log-format")) {
		if (tfj_log_parse_format(&cfg->log_format, v))
			return tfj_err_set(TFJ_EINVAL, "--log-format: %s is not kv|json", v);
	} else if (!strcmp(name, "informer-stale-after")) {
		return tfj_parse_int(&cfg->informer_stale_s, v, 5, 86400, flag);
	} else if (!strcmp(name, "lost-pod-timeout")) {
		return tfj_parse_int(&cfg->lost_pod_timeout_s, v, 0, 86400, flag);
	} else if (!strcmp(name, "metrics-addr")) {
		cfg->metrics_addr = v;
	} else if (!strcmp(name, "health-addr")) {
		cfg->health_addr = v;
	} else if (!strcmp(name, "debug-addr")) {
		return parse_debug_addr(&cfg->debug_addr, v);
	} else if (!strcmp(name, "leader-elect")) {
		return tfj_parse_bool(&cfg->leader_elect, v, flag);
	} else if (!strcmp(name, "leader-elect-namespace")) {
		cfg->leader_namespace = v;
	} else if (!strcmp(name, "leader-elect-name")) {
		cfg->leader_name = v;
	} else if (!strcmp(name, "kubeconfig")) {
		cfg->kubeconfig = v;
	} else if (!strcmp(name, "operator-name")) {
		cfg->operator_name = v;
	} else if (!strcmp(name, "report-addr")) {
		cfg->report_addr = v;
	} else if (!strcmp(name, "report-service")) {
		cfg->report_service = v;
	} else if (!strcmp(name, "report-audience")) {
		if (!*v || strlen(v) > 253)
			return tfj_err_set(TFJ_EINVAL, "--report-audience: 1 to 253 characters");
		cfg->report_audience = v;
	} else if (!strcmp(name, "report-insecure")) {
		return tfj_parse_bool(&cfg->report_insecure, v, flag);
	} else if (!strcmp(name, "report-tls-secret")) {
		/* 246: the CA Secret's name adds "-ca-key" (servingcert.h). */
		if (!*v || strlen(v) > 246)
			return tfj_err_set(TFJ_EINVAL, "--report-tls-secret: 1 to 246 characters");
		cfg->report_tls_secret = v;
	} else if (!strcmp(name, "report-ca-configmap")) {
		if (!*v || strlen(v) > 63 || strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789.-") !=
						 strlen(v))
			return tfj_err_set(TFJ_EINVAL, "--report-ca-configmap: 1 to 63 characters "
					   "of a-z, 0-9, '.', '-'");
		cfg->report_ca_configmap = v;
	} else if (!strcmp(name, "report-tls-external")) {
		return tfj_parse_bool(&cfg->report_tls_external, v, flag);
	} else if (!strcmp(name, "report-conn-memory")) {
		return tfj_parse_int(&cfg->report_conn_memory_mib, v, 4, 4096, flag);
	} else if (!strcmp(name, "tokenreview-qps")) {
		return parse_rate(&cfg->tokenreview_qps, v, flag);
	} else if (!strcmp(name, "tokenreview-burst")) {
		return tfj_parse_int(&cfg->tokenreview_burst, v, 1, 100000, flag);
	} else if (!strcmp(name, "pod-name")) {
		if (strlen(v) > 253)
			return tfj_err_set(TFJ_EINVAL, "--pod-name: longer than 253 characters");
		cfg->pod_name = v;
	} else if (!strcmp(name, "agent-image")) {
		if (strlen(v) > 1024)
			return tfj_err_set(TFJ_EINVAL, "--agent-image: longer than 1024 characters");
		cfg->agent_image = v;
	} else if (!strcmp(name, "agent-inject-default")) {
		return tfj_parse_bool(&cfg->agent_inject_default, v, flag);
	} else if (!strcmp(name, "kueue-pod-groups")) {
		return tfj_parse_bool(&cfg->kueue_pod_groups, v, flag);
	} else if (!strcmp(name, "help")) {
		return tfj_parse_bool(&cfg->help, v, flag);
	} else if (!strcmp(name, "version")) {
		return tfj_parse_bool(&cfg->version, v, flag);
	}
	return 0;
}

int tfj_config_parse(struct tfj_config *cfg, int argc, char **argv)
{
	int rc;

	memset(cfg, 0, sizeof(*cfg));
	cfg->namespace = "";
	cfg->workers = 4;
	cfg->qps = 50;
	cfg->burst = 100;
	cfg->event_qps = 10;
	cfg->event_burst = 100;
	cfg->cluster_domain = "";
	cfg->managed_by = "";
	cfg->gang_scheduler = "";
	cfg->log_level = TFJ_LOG_INFO;
	cfg->log_format = TFJ_LOG_FMT_KV;
	cfg->metrics_addr = ":8080";
	cfg->health_addr = "";
	cfg->debug_addr = "";
	cfg->informer_stale_s = 120;
	cfg->lost_pod_timeout_s = TFJ_PLAN_LOST_POD_TIMEOUT_S;
	cfg->leader_namespace = "";
	cfg->leader_name = "tfjob-operator";
	cfg->kubeconfig = "";
	cfg->operator_name = "";
	cfg->report_addr = "";
	cfg->report_service = "";
	cfg->report_audience = "tfjob-report";
	cfg->report_tls_secret = "tfjob-operator-report-tls";
	cfg->report_ca_configmap = "";
	cfg->tokenreview_qps = 5;
	cfg->report_conn_memory_mib = 16;
	cfg->tokenreview_burst = 20;
	cfg->pod_name = "";
	cfg->agent_image = "";

	for (size_t i = 0; i < NOPTS; i++) {
		const char *v = opts[i].env ? getenv(opts[i].env) : NULL;
		if (v && (rc = apply(cfg, opts[i].flag, v)))
			return tfj_err_set(rc, "%s: %s", opts[i].env, tfj_err_detail());
	}
	for (int a = 1; a < argc; a++) {
		const char *arg = argv[a], *eq, *val = NULL;
		size_t nlen, i;
		if (strncmp(arg, "--", 2) != 0)
			return tfj_err_set(TFJ_EINVAL, "unexpected argument %s (flags start with --)",
					   arg);
		arg += 2;
		eq = strchr(arg, '=');
		nlen = eq ? (size_t)(eq - arg) : strlen(arg);
		for (i = 0; i < NOPTS; i++)
			if (strlen(opts[i].flag) == nlen && !strncmp(opts[i].flag, arg, nlen))
				break;
		if (i == NOPTS)
			return tfj_err_set(TFJ_EINVAL, "unknown flag --%.*s", (int)nlen, arg);
		if (eq) {
			val = eq + 1;
		} else if (!opts[i].is_bool) {
			if (a + 1 >= argc)
				return tfj_err_set(TFJ_EINVAL, "--%s needs a value", opts[i].flag);
			val = argv[++a];
		}
		if ((rc = apply(cfg, opts[i].flag, val)))
			return rc;
	}
	/* Serving without telling pods where, or the reverse, is a mistake. */
	if (!*cfg->report_addr != !*cfg->report_service)
		return tfj_err_set(TFJ_EINVAL, "--report-addr and --report-service go together");
	if (cfg->agent_inject_default && !*cfg->agent_image)
		return tfj_err_set(TFJ_EINVAL, "--agent-inject-default needs --agent-image");
	return 0;
}
