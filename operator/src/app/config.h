/*
 * config.h - the operator's settings from flags and environment.
 *
 * Every flag has an environment twin (TFJOB_<NAME>, dashes as underscores,
 * e.g. --metrics-addr and TFJOB_METRICS_ADDR); a flag wins over the
 * environment. Values are checked here, so the rest of the program can
 * trust them.
 *
 * Ownership: string fields point into argv, the environment or static
 * defaults; the struct owns nothing.
 */
#ifndef TFJ_CONFIG_H
#define TFJ_CONFIG_H

#include <tfj/log.h>

struct tfj_config {
	const char *namespace;       /* comma-separated list; "" = all namespaces */
	int workers;                 /* 1..256, default 4 */
	double qps;                  /* API client rate, default 50 */
	int burst;                   /* default 100 */
	double event_qps;            /* Event posts, a separate budget; default 10 */
	int event_burst;             /* default 100 */
	const char *cluster_domain;  /* "" = short host names */
	enum tfj_log_level log_level;
	enum tfj_log_format log_format;
	const char *metrics_addr;    /* default ":8080"; "0" or "" disables */
	const char *health_addr;     /* /healthz and /readyz alone, on a listener and
				      * thread of their own; "" = off (default) */
	const char *debug_addr;      /* /debug/informers, loopback only; "" = off (default) */
	int informer_stale_s;        /* /readyz staleness bound, 5..86400, default 120 */
	int lost_pod_timeout_s;      /* force-delete bound (tfjob/planlost.h), 0..86400,
				      * default TFJ_PLAN_LOST_POD_TIMEOUT_S; 0 = never */
	int leader_elect;            /* default 0 */
	const char *leader_namespace;/* default: the kubeconfig's namespace, else "default" */
	const char *leader_name;     /* default "tfjob-operator" */
	const char *kubeconfig;      /* "" = default search */
	const char *operator_name;   /* label value, default "tfjob-controller" */
	const char *report_addr;     /* report service listen address; "" = off */
	const char *report_service;  /* address injected into pods; "" = off */
	const char *report_audience; /* default "tfjob-report" */
	int report_insecure;         /* plaintext report channel (default 0: TLS) */
	const char *report_tls_secret; /* Secret of the serving certificate */
	const char *report_ca_configmap; /* the CA's ConfigMap in job namespaces;
					  * "" = <operator name>-report-ca */
	int report_tls_external;     /* the Secret is cert-manager's: only read it */
	int report_conn_memory_mib;  /* the report port's connection memory quota */
	double tokenreview_qps;      /* TokenReviews, own client and budget; default 5 */
	int tokenreview_burst;       /* default 20 */
	const char *pod_name;        /* this replica's pod, labelled while it leads
				      * (app/replabel.h); "" = no label */
	const char *managed_by;      /* runPolicy.managedBy we act on; "" = the reference's value */
	const char *gang_scheduler;  /* --gang-scheduler-name; "" = off (tfjob/podgroup.h) */
	const char *agent_image;     /* image of the injected agent (docs/agent.md); "" = none */
	int agent_inject_default;    /* inject into TFJobs without the agent annotation */
	int kueue_pod_groups;        /* Kueue pod-group mode (tfjob/kueue.h) */
	int help;                    /* --help was given */
	int version;                 /* --version was given */
};

/* Defaults, then environment, then argv. TFJ_EINVAL with a detail on bad input. */
int tfj_config_parse(struct tfj_config *cfg, int argc, char **argv);

/* The --help text. */
const char *tfj_config_usage(void);

#endif
