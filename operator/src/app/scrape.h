/*
 * scrape.h - the whole /metrics page: every part's metrics in one order.
 *
 * main.c serves it; test_dashboard renders it from a live stack to check
 * that the chart's Grafana dashboard names only metrics that exist, so the
 * page and the check cannot drift apart.
 *
 * Ownership: struct tfj_scrape borrows every part; a NULL part (off, not
 * started yet) contributes nothing.
 */
#ifndef TFJ_SCRAPE_H
#define TFJ_SCRAPE_H

#include <tfj/buf.h>

#include "app/controller.h"
#include "app/heaptrim.h"
#include "kube/kube.h"
#include "report/progress.h"
#include "report/report.h"
#include "report/servingcert.h"
#include "report/tokenreview.h"

struct tfj_scrape {
	struct tfj_kube *kube;            /* the main client (required) */
	struct tfj_kube *event_kube;      /* the Events' own client */
	struct tfj_controller *ctl;       /* required */
	struct tfj_report *report;
	struct tfj_progress *prog;
	struct tfj_servingcert *cert;
	struct tfj_tokenreviewer *tr;
	const struct tfj_heaptrim *trim;  /* the heap trim's counters; NULL = none */
	int leading;                      /* 1 while this replica leads */
	const char *identity;             /* leader-election identity; NULL or "" = none */
};

/* Appends the page to out; 0 or TFJ_ETOOBIG. */
int tfj_scrape_render(const struct tfj_scrape *s, struct tfj_buf *out);

#endif
