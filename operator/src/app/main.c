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
#include <malloc.h>
#endif
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tfj/buf.h>
#include <tfj/err.h>
#include <tfj/log.h>

#include "app/config.h"
#include "app/controller.h"
#include "app/httpd.h"
#include "report/progress.h"
#include "report/report.h"
#include "app/reporthub.h"
#include "report/tokenreview.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "kube/leader.h"

#define TFJOB_OPERATOR_VERSION "0.1.0"

struct app {
	struct tfj_kube *kube;
	struct tfj_kube *lease_kube; /* own client: a busy controller's rate limit
				      * must never delay lease renewals */
	struct tfj_kube *event_kube; /* own client: events have their own budget */
	struct tfj_controller *ctl;
	struct tfj_report *report;   /* NULL when the report channel is off */
	struct tfj_leader *leader;
	atomic_int leading;   /* 1: we hold the lease (or no election) */
	atomic_int lost;      /* 1: the lease was lost */
};

static int collect(void *ud, struct tfj_buf *out)
{
	struct app *a = ud;
	int rc = tfj_kube_metrics(a->kube, out);
	if (rc == 0)
		rc = tfj_controller_metrics(a->ctl, out);
	if (rc == 0)
		rc = tfj_report_metrics(a->report, out);
	if (rc == 0)
		rc = tfj_buf_printf(out,
				    "# HELP tfjob_operator_leader 1 while this replica is the leader.\n"
				    "# TYPE tfjob_operator_leader gauge\n"
				    "tfjob_operator_leader %d\n",
				    atomic_load(&a->leading));
	return rc;
}

static int ready(void *ud)
{
	struct app *a = ud;
	/* A standby replica is ready: it serves metrics and waits for the lease. */
	return !atomic_load(&a->leading) || tfj_controller_ready(a->ctl);
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
 * glibc gives each thread that allocates its own malloc arena (up to 8 per
 * core), and memory freed in one arena is never reused by another. The
 * operator's threads (informers, workers, HTTP, report channel) allocate
 * little each, so per-thread arenas mostly hold free space: two are enough.
 * A MALLOC_ARENA_MAX set in the environment is left in charge.
 */
static void limit_arenas(void)
{
#ifdef __GLIBC__
	if (!getenv("MALLOC_ARENA_MAX"))
		mallopt(M_ARENA_MAX, 2);
#endif
}

int main(int argc, char **argv)
{
	struct tfj_config cfg;
	struct tfj_kubeconfig kc;
	struct tfj_kube_opts ko = { 0 }, eko;
	struct tfj_controller_opts co = { 0 };
	struct tfj_httpd *httpd = NULL;
	struct tfj_reporthub hub = { 0 };
	struct tfj_progress *prog = NULL;
	int reconciling = 0;
	struct app a = { 0 };
	char host[256] = "", identity[320];
	sigset_t sigs;
	int rc, exit_code = 1, metrics_on;

	memset(&kc, 0, sizeof(kc));
	limit_arenas();
	tfj_log_set_component("operator");
	if (tfj_config_parse(&cfg, argc, argv) != 0) {
		fprintf(stderr, "tfjob-operator: %s\n%s", tfj_err_detail(), tfj_config_usage());
		return 2;
	}
	if (cfg.help) {
		fputs(tfj_config_usage(), stdout);
		return 0;
	}
	if (cfg.version) {
		puts("tfjob-operator " TFJOB_OPERATOR_VERSION);
		return 0;
	}
	tfj_log_set_level(cfg.log_level);
	tfj_log_set_format(cfg.log_format);

	/* Block before any thread exists so every thread inherits the mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	if ((rc = tfj_kubeconfig_load_default(&kc, cfg.kubeconfig))) {
		tfj_log_error("no usable Kubernetes configuration", "error", tfj_err_detail());
		goto out;
	}
	ko.qps = cfg.qps;
	ko.burst = cfg.burst;
	if ((rc = tfj_kube_new(&a.kube, &kc, &ko))) {
		tfj_log_error("API client setup failed", "error", tfj_err_detail());
		goto out;
	}
	/* Events get a client, and so a token bucket, of their own (events.h). */
	eko = ko;
	eko.qps = cfg.event_qps;
	eko.burst = cfg.event_burst;
	eko.timeout_ms = 10000; /* a hung post must not hold up shutdown for long */
	if ((rc = tfj_kube_new(&a.event_kube, &kc, &eko))) {
		tfj_log_error("API client setup failed", "error", tfj_err_detail());
		goto out;
	}
	gethostname(host, sizeof(host) - 1);
	co.namespace = cfg.namespace;
	co.workers = cfg.workers;
	co.cluster_domain = cfg.cluster_domain;
	co.manager = cfg.managed_by[0] ? cfg.managed_by : NULL;
	co.operator_name = cfg.operator_name;
	co.instance = host;
	co.report_addr = cfg.report_service[0] ? cfg.report_service : NULL;
	co.report_audience = cfg.report_audience;
	co.event_kube = a.event_kube;
	if ((rc = tfj_controller_new(&a.ctl, a.kube, &co))) {
		tfj_log_error("controller setup failed", "error", tfj_err_detail());
		goto out;
	}
	if (cfg.report_addr[0]) {
		struct tfj_report_opts ro = { 0 };

		if ((rc = tfj_progress_new(&prog, 0)) ||
		    (rc = tfj_tokenreviewer_new(&hub.tr, a.kube, cfg.report_audience, 0, 0))) {
			tfj_log_error("report channel setup failed", "error", tfj_err_detail());
			goto out;
		}
		hub.ctl = a.ctl;
		hub.prog = prog;
		tfj_controller_set_progress(a.ctl, prog);
		ro.addr = cfg.report_addr;
		ro.auth = tfj_reporthub_auth;
		ro.deliver = tfj_reporthub_deliver;
		ro.ud = &hub;
		if ((rc = tfj_report_start(&a.report, &ro))) {
			tfj_log_error("report service failed", "error", tfj_err_detail());
			goto out;
		}
		tfj_log_info("report service listening", "address", cfg.report_addr, "pods_use",
			     cfg.report_service, "audience", cfg.report_audience);
	}
	metrics_on = cfg.metrics_addr[0] && strcmp(cfg.metrics_addr, "0") != 0;
	if (metrics_on) {
		struct tfj_httpd_opts ho = { cfg.metrics_addr, collect, ready, &a };
		if ((rc = tfj_httpd_start(&httpd, &ho))) {
			tfj_log_error("metrics endpoint failed", "error", tfj_err_detail());
			goto out;
		}
	}
	if (cfg.leader_elect) {
		struct tfj_leader_opts lo = { 0 };
		const char *lns = cfg.leader_namespace[0] ? cfg.leader_namespace
			: cfg.namespace[0] ? cfg.namespace
			: tfj_kube_namespace(a.kube) ? tfj_kube_namespace(a.kube) : "default";
		snprintf(identity, sizeof(identity), "%s_%ld", host[0] ? host : "tfjob-operator",
			 (long)getpid());
		lo.namespace = lns;
		lo.name = cfg.leader_name;
		lo.identity = identity;
		lo.on_started = on_started;
		lo.on_stopped = on_stopped;
		lo.ud = &a;
		ko.qps = 0; /* about one request per retry period; never throttled */
		if ((rc = tfj_kube_new(&a.lease_kube, &kc, &ko)) ||
		    (rc = tfj_leader_new(&a.leader, a.lease_kube, &lo)) ||
		    (rc = tfj_leader_start(a.leader))) {
			tfj_log_error("leader election setup failed", "error", tfj_err_detail());
			goto out;
		}
		tfj_log_info("waiting for leadership", "lease", cfg.leader_name, "namespace", lns,
			     "identity", identity);
	} else {
		atomic_store(&a.leading, 1);
	}
	tfj_log_info("tfjob-operator started", "version", TFJOB_OPERATOR_VERSION,
		     "namespace", cfg.namespace[0] ? cfg.namespace : "(all)",
		     "metrics", metrics_on ? cfg.metrics_addr : "off");

	for (;;) {
		struct timespec ts = { 0, 500 * 1000000L };
		int sig = sigtimedwait(&sigs, NULL, &ts);
		if (sig == SIGINT || sig == SIGTERM) {
			tfj_log_info("signal received; shutting down",
				     "signal", sig == SIGINT ? "SIGINT" : "SIGTERM");
			exit_code = 0;
			break;
		}
		if (atomic_load(&a.lost)) {
			tfj_log_error("leadership lost; exiting so a fresh process can campaign");
			exit_code = 1;
			break;
		}
		if (atomic_load(&a.leading)) {
			/* Waits in short slices so signals stay responsive. */
			rc = tfj_controller_start(a.ctl, 500);
			if (rc == 0 && !reconciling) {
				reconciling = 1;
				/* No report has reached this process before now. */
				if (prog)
					tfj_progress_restart_clock(prog);
			}
			if (rc && rc != TFJ_ETIMEOUT) {
				tfj_log_error("controller start failed", "error", tfj_err_detail());
				break;
			}
		}
	}
out:
	/* Reports first: their callbacks use the controller's caches. */
	tfj_report_stop(a.report);
	tfj_controller_stop(a.ctl);
	tfj_leader_free(a.leader);
	tfj_httpd_stop(httpd);
	tfj_controller_free(a.ctl);
	tfj_tokenreviewer_free(hub.tr);
	tfj_progress_free(prog);
	tfj_kube_free(a.lease_kube);
	tfj_kube_free(a.event_kube);
	tfj_kube_free(a.kube);
	tfj_kubeconfig_free(&kc);
	tfj_log_info("tfjob-operator stopped");
	return exit_code;
}
