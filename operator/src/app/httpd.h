/*
 * httpd.h - the operator's HTTP endpoint (libmicrohttpd): /metrics in the
 * Prometheus text format, /healthz (the process is alive), /readyz (the
 * caches are synced and their LIST/WATCH working, controller.h) and
 * /debug/informers (the caches' keys and resourceVersions). GET and HEAD
 * only; everything else is 404 or 405. An endpoint whose function is NULL
 * is 404, so one server can carry the probes alone (main.c starts one per
 * listener: metrics, probes, loopback debug).
 *
 * Each server runs its own thread. Connections are limited in number and
 * time so a slow or hostile scraper cannot tie the operator up.
 */
#ifndef TFJ_HTTPD_H
#define TFJ_HTTPD_H

#include <tfj/buf.h>

/* Appends the metrics text; a nonzero return is a 500. */
typedef int (*tfj_httpd_metrics_fn)(void *ud, struct tfj_buf *out);
/* 1 when ready. */
typedef int (*tfj_httpd_ready_fn)(void *ud);

struct tfj_httpd_opts {
	const char *addr;            /* "host:port", ":port" or "port" */
	tfj_httpd_metrics_fn metrics;/* /metrics body; NULL = 404 */
	tfj_httpd_ready_fn ready;    /* NULL = always ready */
	void *ud;
	tfj_httpd_metrics_fn dump;   /* /debug/informers body; NULL = 404 */
};

struct tfj_httpd;

int tfj_httpd_start(struct tfj_httpd **out, const struct tfj_httpd_opts *o);
/* The port actually bound (useful with port 0). */
int tfj_httpd_port(const struct tfj_httpd *h);
/* Stops and frees. Accepts NULL. */
void tfj_httpd_stop(struct tfj_httpd *h);

#endif
