/*
 * main.c - the tfjob-operator binary.
 *
 * Wiring: flags -> kubeconfig -> API client -> controller (informers, queue,
 * workers) -> HTTP endpoint; with --leader-elect the controller starts only
 * once this replica holds the Lease. SIGTERM/SIGINT shut down gracefully:
 * workers finish their current key, watches are canceled, the Lease is
 * released. Losing the Lease exits with status 1 so the Deployment restarts
 * the process as a fresh candidate (a deposed leader must stop writing).
 *
 * Signals are blocked in every thread and taken synchronously by the main
 * thread with sigtimedwait, so no work happens in a signal handler.
 */
#include <errno.h>
#ifdef __GLIBC__
#endif
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tfj/buf.h>
#include <tfj/clock.h>
#include <tfj/err.h>
#include <tfj/heap.h>
#include <tfj/log.h>

#include "app/config.h"
#include "app/controller.h"
#include "app/heaptrim.h"
#include "app/httpd.h"
#include "app/scrape.h"
#include "report/capublish.h"
#include "report/progress.h"
#include "report/servingcert.h"
#include "report/report.h"
#include "app/reporthub.h"
#include "app/replabel.h"
#include "report/issuer.h"
#include "report/tokenreview.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "kube/leader.h"

#define TFJOB_OPERATOR_VERSION "0.1.0"

struct app {
	struct tfj_kubeconfig kc;
	struct tfj_kube *kube;
	struct tfj_kube *lease_kube; /* own client: a busy controller's rate limit
				      * must never delay lease renewals */
	struct tfj_kube *event_kube; /* own client: events have their own budget */
	struct tfj_kube *review_kube;/* own client: TokenReviews cannot spend the
				      * controller's budget (a flood of tokens) */
	struct tfj_issuer *issuer;   /* service-account keys for agent tokens (on review_kube) */
	struct tfj_controller *ctl;
	/* NULL when the report channel is off (or not yet on); set by the run
	 * loop once the certificate is there while the metrics thread reads it. */
	_Atomic(struct tfj_report *) report;
	struct tfj_report_opts ro;   /* its options, kept until it starts (TLS: once the
				      * serving certificate is there) */
	int report_pending;          /* the report server waits for its certificate */
	struct tfj_kube *cert_kube;  /* own client, never fenced: every replica serves */
	struct tfj_servingcert *cert;/* the serving certificate; NULL: off or insecure */
	struct tfj_capublish *capub; /* its CA in job namespaces */
	struct tfj_reporthub hub;    /* the report channel's callbacks' state */
	struct tfj_progress *prog;   /* NULL when the report channel is off */
	struct tfj_httpd *httpd;     /* NULL when metrics are off */
	struct tfj_httpd *health;    /* --health-addr; NULL when off */
	struct tfj_httpd *debug;     /* --debug-addr (loopback); NULL when off */
	struct tfj_leader *leader;
	struct tfj_replabel label;   /* the report Service's selector label (replabel.h) */
	struct tfj_heaptrim trim;    /* free heap handed back after bursts (heaptrim.h) */
	char host[256];
	char identity[320];
	int reconciling;      /* the controller has started (run) */
	atomic_int leading;   /* 1: we hold the lease (or no election) */
	atomic_int lost;      /* 1: the lease was lost */
};

static int collect(void *ud, struct tfj_buf *out)
{
	struct app *a = ud;
	struct tfj_scrape s = {
		.kube = a->kube,
		.event_kube = a->event_kube,
		.ctl = a->ctl,
		.report = atomic_load(&a->report),
		.prog = a->prog,
		.cert = a->cert,
		.tr = a->hub.tr,
		.leading = atomic_load(&a->leading),
		.identity = a->identity,
		.trim = &a->trim,
	};

	return tfj_scrape_render(&s, out);
}

static int ready(void *ud)
{
	struct app *a = ud;
	/*
	 * A standby replica is ready: it serves metrics and waits for the lease;
	 * but only once its pod no longer carries the leader's label (a
	 * container restarted in place keeps it), or the report Service would
	 * send agents to it.
	 */
	if (!tfj_replabel_settled(&a->label))
		return 0;
	return !atomic_load(&a->leading) || tfj_controller_ready(a->ctl);
}

/* /debug/informers: the caches as "<informer> <key> <resourceVersion>" lines. */
static int dump(void *ud, struct tfj_buf *out)
{
	return tfj_controller_dump(((struct app *)ud)->ctl, out);
}

static void on_started(void *ud)
{
	atomic_store(&((struct app *)ud)->leading, 1);
}

static void on_stopped(void *ud)
{
	struct app *a = ud;
	atomic_store(&a->leading, 0);
	atomic_store(&a->lost, 1);
}

/*
 * The operator links jemalloc (docs/operator.md, "Memory"): a watch event
 * is parsed into a tree of small allocations that is freed again at once,
 * beside caches that only grow, and on a heap of tens of thousands of
 * cached objects glibc's allocator spent nearly half the operator's CPU on
 * that churn (sorting and consolidating its free lists).
 *
 * jemalloc reads its options from this symbol when it starts. Its default
 * is 4 arenas per core, each keeping its own free pages; the operator's
 * threads (informers, workers, HTTP, report channel) allocate little each,
 * so 2 arenas hold the same work with less memory. Freed pages go back to
 * the kernel after the default decay, and at once after a burst
 * (heaptrim.h). MALLOC_CONF in the environment adds to or overrides this.
 * Without jemalloc (a sanitized build) the symbol is unused and glibc's
 * arenas are limited to 2 instead, for the same reason.
 */
const char *malloc_conf = TFJ_HEAPTRIM_MALLOC_CONF;

/* Logs a start-up step that failed, with the error's detail; returns rc. */
static int failed(const char *what, int rc)
{
	tfj_log_error(what, "error", tfj_err_detail());
	return rc;
}

/*
 * Parses the flags. Returns -1 to go on, or the exit status when the
 * process is done: 0 after --help or --version, 2 for bad flags.
 */
static int read_flags(struct tfj_config *cfg, int argc, char **argv)
{
	if (tfj_config_parse(cfg, argc, argv) != 0) {
		fprintf(stderr, "tfjob-operator: %s\n%s", tfj_err_detail(), tfj_config_usage());
		return 2;
	}
	if (cfg->help) {
		fputs(tfj_config_usage(), stdout);
		return 0;
	}
	if (cfg->version) {
		puts("tfjob-operator " TFJOB_OPERATOR_VERSION);
		return 0;
	}
	return -1;
}

/* Called before any thread exists, so every thread inherits the mask. */
static void block_signals(sigset_t *sigs)
{
	sigemptyset(sigs);
	sigaddset(sigs, SIGINT);
	sigaddset(sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* The kubeconfig, the main API client and the events' client. */
static int start_clients(struct app *a, const struct tfj_config *cfg)
{
	struct tfj_kube_opts ko = { 0 }, eko;
	int rc;

	if ((rc = tfj_kubeconfig_load_default(&a->kc, cfg->kubeconfig)))
		return failed("no usable Kubernetes configuration", rc);
	ko.qps = cfg->qps;
	ko.burst = cfg->burst;
	if ((rc = tfj_kube_new(&a->kube, &a->kc, &ko)))
		return failed("API client setup failed", rc);
	/* Events get a client, and so a token bucket, of their own (events.h). */
	eko = ko;
	eko.qps = cfg->event_qps;
	eko.burst = cfg->event_burst;
	eko.timeout_ms = 10000; /* a hung post must not hold up shutdown for long */
	if ((rc = tfj_kube_new(&a->event_kube, &a->kc, &eko)))
		return failed("API client setup failed", rc);
	return 0;
}

/* The controller: built here, started by run() once this replica leads. */
static int start_controller(struct app *a, const struct tfj_config *cfg)
{
	struct tfj_controller_opts co = { 0 };
	int rc;

	co.namespace = cfg->namespace;
	co.workers = cfg->workers;
	co.cluster_domain = cfg->cluster_domain;
	co.manager = cfg->managed_by[0] ? cfg->managed_by : NULL;
	co.operator_name = cfg->operator_name;
	co.instance = a->host;
	co.report_addr = cfg->report_service[0] ? cfg->report_service : NULL;
	co.report_audience = cfg->report_audience;
	co.report_ca_configmap = cfg->report_ca_configmap[0] ? cfg->report_ca_configmap : NULL;
	co.gang_scheduler = cfg->gang_scheduler;
	co.agent_image = cfg->agent_image[0] ? cfg->agent_image : NULL;
	co.agent_inject_default = cfg->agent_inject_default;
	co.kueue_pod_groups = cfg->kueue_pod_groups;
	co.lost_pod_timeout_s = cfg->lost_pod_timeout_s;
	co.event_kube = a->event_kube;
	co.informer_stale_s = cfg->informer_stale_s;
	if ((rc = tfj_controller_new(&a->ctl, a->kube, &co)))
		return failed("controller setup failed", rc);
	return 0;
}

static int report_ca(char **pem, uint64_t *gen, void *ud)
{
	return tfj_servingcert_ca(pem, gen, ud);
}

/*
 * TLS for the report channel (docs/security.md): the serving certificate
 * for --report-service's Service, kept in a Secret of that Service's
 * namespace by a thread of its own, on every replica, through a client of
 * its own (the controller's is fenced while this replica does not lead);
 * and its CA published to job namespaces by the controller.
 */
static int start_report_tls(struct app *a, const struct tfj_config *cfg)
{
	struct tfj_servingcert_opts so = { 0 };
	struct tfj_kube_opts ko = { 0 };
	char svc[64], ns[64], domain[128];
	int rc;

	if (cfg->report_insecure) {
		tfj_log_warn("report channel in PLAINTEXT (--report-insecure): agents' tokens and "
			     "reports can be read and forged on the pod network",
			     "address", cfg->report_addr);
		return 0;
	}
	if ((rc = tfj_servingcert_service_of(svc, ns, domain, cfg->report_service)))
		return failed("report channel TLS setup failed", rc);
	ko.qps = 5; /* a GET a minute, a write on rotation */
	ko.burst = 10;
	so.namespace = ns;
	so.secret = cfg->report_tls_secret;
	so.service = svc;
	so.cluster_domain = domain[0] ? domain : NULL;
	so.external = cfg->report_tls_external;
	if ((rc = tfj_kube_new(&a->cert_kube, &a->kc, &ko)) ||
	    (rc = tfj_servingcert_new(&a->cert, a->cert_kube, &so)) ||
	    (rc = tfj_capublish_new(&a->capub, a->kube, cfg->operator_name,
					   cfg->report_ca_configmap, report_ca, a->cert)))
		return failed("report channel TLS setup failed", rc);
	/* A first try now: the server can start at once when it works. */
	if (tfj_servingcert_sync(a->cert, tfj_clock_unix_ms() / 1000))
		tfj_log_warn("report channel: no serving certificate yet; retrying", "error",
			     tfj_err_detail());
	if ((rc = tfj_servingcert_start(a->cert)))
		return failed("report channel TLS setup failed", rc);
	tfj_controller_set_capublish(a->ctl, a->capub);
	tfj_log_info("report channel TLS", "secret", cfg->report_tls_secret, "namespace", ns,
		     "service", svc, "managed_by", so.external ? "cert-manager" : "operator");
	return 0;
}

/*
 * Starts the report server once it can serve: at once in plaintext, with
 * TLS once the serving certificate is loaded (run() retries meanwhile).
 */
static int start_report_server(struct app *a, const struct tfj_config *cfg)
{
	struct tfj_report *srv = NULL;
	int rc;

	if (!a->report_pending || (a->cert && !tfj_servingcert_ready(a->cert)))
		return 0;
	a->report_pending = 0;
	a->ro.creds = a->cert ? tfj_servingcert_server_creds(a->cert) : NULL;
	if (a->cert && !a->ro.creds)
		return failed("report channel TLS credentials failed", TFJ_EINTERNAL);
	if ((rc = tfj_report_start(&srv, &a->ro)))
		return failed("report service failed", rc);
	atomic_store(&a->report, srv);
	tfj_log_info("report service listening", "address", cfg->report_addr, "pods_use",
		     cfg->report_service, "audience", cfg->report_audience, "tls",
		     a->cert ? "on" : "OFF");
	return 0;
}

/* The report channel (--report-addr; off when empty): store, reviewer, server. */
static int start_report(struct app *a, const struct tfj_config *cfg)
{
	struct tfj_report_opts ro = { 0 };
	struct tfj_kube_opts ko = { 0 };
	int rc;

	if (!cfg->report_addr[0])
		return tfj_replabel_init(&a->label, NULL, NULL, NULL);
	if ((rc = start_report_tls(a, cfg)))
		return rc;
	/* The reviewer's own bucket decides; the client's matches it. */
	ko.qps = cfg->tokenreview_qps;
	ko.burst = cfg->tokenreview_burst;
	ko.timeout_ms = 10000; /* a report thread waits for it */
	if ((rc = tfj_kube_new(&a->review_kube, &a->kc, &ko)) ||
	    (rc = tfj_progress_new(&a->prog, 0)) ||
	    (rc = tfj_tokenreviewer_new(&a->hub.tr, a->review_kube, cfg->report_audience, 0, 0)) ||
	    (rc = tfj_issuer_new(&a->issuer, a->review_kube, 0)))
		return failed("report channel setup failed", rc);
	tfj_tokenreviewer_limit(a->hub.tr, cfg->tokenreview_qps, cfg->tokenreview_burst);
	/* Tokens are verified with the issuer's keys; TokenReview only while those are unavailable. */
	tfj_tokenreviewer_use_issuer(a->hub.tr, a->issuer);
	a->hub.ctl = a->ctl;
	a->hub.prog = a->prog;
	tfj_controller_set_progress(a->ctl, a->prog);
	ro.addr = cfg->report_addr;
	ro.quota_bytes = (size_t)cfg->report_conn_memory_mib << 20;
	tfj_reporthub_wire(&ro, &a->hub);
	/* In a pod's namespace: the leader election's, else the in-cluster one. */
	if ((rc = tfj_replabel_init(&a->label, a->kube, cfg->leader_namespace[0] ?
				    cfg->leader_namespace : tfj_kube_namespace(a->kube),
				    cfg->pod_name)))
		return failed("report channel setup failed", rc);
	if (!cfg->pod_name[0])
		tfj_log_warn("report channel: no --pod-name, so this pod is not labelled as the "
			     "leader (a report Service selecting the label reaches no pod)");
	a->ro = ro;
	a->ro.addr = cfg->report_addr;
	a->report_pending = 1;
	return start_report_server(a, cfg);
}

/* 1 when --metrics-addr asks for the HTTP endpoint ("" and "0" turn it off). */
static int metrics_on(const struct tfj_config *cfg)
{
	return cfg->metrics_addr[0] && strcmp(cfg->metrics_addr, "0") != 0;
}

/*
 * /metrics, /healthz and /readyz, when metrics are on; the probes alone on
 * --health-addr, on a thread of their own, so scrapers never delay them;
 * /debug/informers only on --debug-addr (loopback, config.c).
 */
static int start_metrics(struct app *a, const struct tfj_config *cfg)
{
	struct tfj_httpd_opts ho = { cfg->metrics_addr, collect, ready, a, NULL };
	struct tfj_httpd_opts hh = { cfg->health_addr, NULL, ready, a, NULL };
	struct tfj_httpd_opts hd = { cfg->debug_addr, NULL, ready, a, dump };
	int rc;

	if (metrics_on(cfg) && (rc = tfj_httpd_start(&a->httpd, &ho)))
		return failed("metrics endpoint failed", rc);
	if (cfg->health_addr[0] && (rc = tfj_httpd_start(&a->health, &hh)))
		return failed("health endpoint failed", rc);
	if (cfg->debug_addr[0] && (rc = tfj_httpd_start(&a->debug, &hd)))
		return failed("debug endpoint failed", rc);
	return 0;
}

/*
 * With --leader-elect, campaigns for the Lease on a client of its own;
 * without, this replica leads from the start.
 */
static int start_election(struct app *a, const struct tfj_config *cfg)
{
	struct tfj_kube_opts ko = { 0 };
	struct tfj_leader_opts lo = { 0 };
	const char *lns;
	int rc;

	if (!cfg->leader_elect) {
		atomic_store(&a->leading, 1);
		return 0;
	}
	/* A list of watched namespaces names no single one for the Lease. */
	lns = cfg->leader_namespace[0] ? cfg->leader_namespace
		: cfg->namespace[0] && !strchr(cfg->namespace, ',') ? cfg->namespace
		: tfj_kube_namespace(a->kube) ? tfj_kube_namespace(a->kube) : "default";
	lo.namespace = lns;
	lo.name = cfg->leader_name;
	lo.identity = a->identity;
	lo.on_started = on_started;
	lo.on_stopped = on_stopped;
	lo.ud = a;
	ko.qps = 0; /* about one request per retry period; never throttled */
	ko.burst = cfg->burst;
	if ((rc = tfj_kube_new(&a->lease_kube, &a->kc, &ko)) ||
	    (rc = tfj_leader_new(&a->leader, a->lease_kube, &lo)))
		return failed("leader election setup failed", rc);
	/* Fencing: no request of this leader outlives its renew deadline. */
	tfj_kube_set_fence(a->lease_kube, tfj_leader_fence(a->leader));
	tfj_kube_set_fence(a->kube, tfj_leader_fence(a->leader));
	if (a->event_kube)
		tfj_kube_set_fence(a->event_kube, tfj_leader_fence(a->leader));
	if ((rc = tfj_leader_start(a->leader)))
		return failed("leader election setup failed", rc);
	tfj_log_info("waiting for leadership", "lease", cfg->leader_name, "namespace", lns,
		     "identity", a->identity);
	return 0;
}

/* Every part, in the order each needs the ones before it. */
static int start(struct app *a, const struct tfj_config *cfg)
{
	int rc;

	/* Before the metrics thread starts: it shows the identity. */
	gethostname(a->host, sizeof(a->host) - 1);
	if (cfg->leader_elect &&
	    (rc = tfj_leader_identity(a->identity, sizeof(a->identity), a->host)))
		return failed("leader election setup failed", rc);
	if ((rc = start_clients(a, cfg)) || (rc = start_controller(a, cfg)) ||
	    (rc = start_report(a, cfg)) || (rc = start_metrics(a, cfg)) ||
	    (rc = start_election(a, cfg)))
		return rc;
	tfj_log_info("tfjob-operator started", "version", TFJOB_OPERATOR_VERSION,
		     "namespace", cfg->namespace[0] ? cfg->namespace : "(all)",
		     "metrics", metrics_on(cfg) ? cfg->metrics_addr : "off",
		     "health", cfg->health_addr[0] ? cfg->health_addr : "off",
		     "debug", cfg->debug_addr[0] ? cfg->debug_addr : "off",
		     "allocator", tfj_heap_name());
	return 0;
}

/*
 * Once a burst of work is over, the memory it freed goes back to the kernel
 * (heaptrim.h: at most every 10 s, only after a quiet half second).
 */
static void trim_after_burst(struct app *a)
{
	uint64_t work = 0;
	int idle = tfj_controller_idle(a->ctl, &work);

	tfj_heaptrim_tick(&a->trim, tfj_clock_mono_ns() / 1000000ull, work, idle);
}

/*
 * Until a signal, a lost lease or a failed controller start: starts the
 * controller once this replica leads. Returns the exit status.
 */
static int run(struct app *a, const struct tfj_config *cfg, const sigset_t *sigs)
{
	int rc;

	for (;;) {
		if (a->report_pending && start_report_server(a, cfg))
			return 1;
		struct timespec ts = { 0, 500 * 1000000L };
		int sig = sigtimedwait(sigs, NULL, &ts);
		if (sig == SIGINT || sig == SIGTERM) {
			tfj_log_info("signal received; shutting down",
				     "signal", sig == SIGINT ? "SIGINT" : "SIGTERM");
			return 0;
		}
		if (atomic_load(&a->lost)) {
			tfj_log_error("leadership lost; exiting so a fresh process can campaign");
			return 1;
		}
		if (atomic_load(&a->leading)) {
			/* Waits in short slices so signals stay responsive. */
			rc = tfj_controller_start(a->ctl, 500);
			if (rc == 0 && !a->reconciling) {
				a->reconciling = 1;
				/* No report has reached this process before now. */
				if (a->prog)
					tfj_progress_restart_clock(a->prog);
			}
			if (rc && rc != TFJ_ETIMEOUT) {
				tfj_log_error("controller start failed", "error", tfj_err_detail());
				return 1;
			}
		}
		/* Reports go to this pod once it can take them (replabel.h). */
		tfj_replabel_sync(&a->label, a->reconciling,
				  (int64_t)(tfj_clock_mono_ns() / 1000000ull));
		if (a->reconciling)
			trim_after_burst(a);
	}
}

/* Stops and frees whatever start() got to; each part accepts NULL. */
static void stop(struct app *a)
{
	/* Reports first: their callbacks use the controller's caches. */
	tfj_report_stop(atomic_exchange(&a->report, NULL));
	tfj_controller_stop(a->ctl);
	/* The fence lives in the leader: unhook it first (the lease's own
	 * client keeps it through the release inside tfj_leader_free). */
	if (a->kube)
		tfj_kube_set_fence(a->kube, NULL);
	if (a->event_kube)
		tfj_kube_set_fence(a->event_kube, NULL);
	tfj_leader_free(a->leader);
	tfj_httpd_stop(a->httpd);
	tfj_httpd_stop(a->health);
	tfj_httpd_stop(a->debug);
	tfj_controller_free(a->ctl);
	tfj_tokenreviewer_free(a->hub.tr);
	tfj_issuer_free(a->issuer);
	tfj_capublish_free(a->capub);
	tfj_servingcert_free(a->cert);
	tfj_kube_free(a->cert_kube);
	tfj_progress_free(a->prog);
	tfj_kube_free(a->lease_kube);
	tfj_kube_free(a->event_kube);
	tfj_kube_free(a->review_kube);
	tfj_kube_free(a->kube);
	tfj_kubeconfig_free(&a->kc);
}

int main(int argc, char **argv)
{
	struct tfj_config cfg;
	struct app a = { 0 };
	sigset_t sigs;
	int exit_code;

	tfj_heap_limit_arenas(2);
	tfj_heaptrim_init(&a.trim, 0);
	tfj_log_set_component("operator");
	if ((exit_code = read_flags(&cfg, argc, argv)) >= 0)
		return exit_code;
	tfj_log_set_level(cfg.log_level);
	tfj_log_set_format(cfg.log_format);
	block_signals(&sigs);
	exit_code = start(&a, &cfg) == 0 ? run(&a, &cfg, &sigs) : 1;
	stop(&a);
	tfj_log_info("tfjob-operator stopped");
	return exit_code;
}
