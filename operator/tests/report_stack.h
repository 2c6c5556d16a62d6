/*
 * report_stack.h - the operator's report side as main.c wires it, for the
 * integration tests (itest_report.c, itest_reportflood.c): a controller for
 * one namespace and one runPolicy.managedBy value, the progress store, the
 * token reviewer (on its own API client when given one; with the issuer's
 * keys after rs_use_issuer, else TokenReview only) and the report
 * server on loopback with the hub's callbacks. Header-only (static).
 */
#ifndef TFJ_REPORT_STACK_H
#define TFJ_REPORT_STACK_H

#include <string.h>

#include "app/controller.h"
#include "app/reporthub.h"
#include "report/issuer.h"
#include "report/progress.h"
#include "report/report.h"
#include "report/tokenreview.h"
#include "tfj_test.h"

struct rstack {
	struct tfj_controller *c;
	struct tfj_progress *prog;
	struct tfj_reporthub hub;
	struct tfj_report *srv;
	struct tfj_issuer *issuer;  /* NULL: TokenReview only (rs_use_issuer) */
};

/*
 * Starts it all against k (the reviewer on review_k, or k when NULL);
 * `tune` (may be NULL) sets the server's limits (threads, peer_qps,
 * peer_burst) and may name another address than 127.0.0.1:0 (the report
 * load benchmark listens on every interface). Failures are checks; returns 0 when the server listens.
 */
static inline int rs_start(struct rstack *s, struct tfj_kube *k, struct tfj_kube *review_k,
			   const char *ns, const char *manager, const char *aud,
			   const struct tfj_report_opts *tune)
{
	struct tfj_controller_opts co = { 0 };
	struct tfj_report_opts ro;

	memset(s, 0, sizeof(*s));
	co.namespace = ns;
	co.workers = 2;
	co.report_addr = "tfjob-operator.tfjob-system.svc:9443";
	co.report_audience = aud;
	co.report_insecure = 1; /* the server below is plaintext (TLS: test_servingcert, e2e report-tls) */
	co.manager = manager;
	TFJ_CHECK_OK(tfj_controller_new(&s->c, k, &co));
	TFJ_CHECK_OK(tfj_progress_new(&s->prog, 0));
	TFJ_CHECK_OK(tfj_tokenreviewer_new(&s->hub.tr, review_k ? review_k : k, aud, 0, 0));
	if (!s->c || !s->prog || !s->hub.tr)
		return -1;
	s->hub.ctl = s->c;
	s->hub.prog = s->prog;
	tfj_controller_set_progress(s->c, s->prog);
	TFJ_CHECK_OK(tfj_controller_start(s->c, 30000));
	memset(&ro, 0, sizeof(ro));
	if (tune)
		ro = *tune;
	if (!ro.addr)
		ro.addr = "127.0.0.1:0";
	tfj_reporthub_wire(&ro, &s->hub);
	TFJ_CHECK_OK(tfj_report_start(&s->srv, &ro));
	return s->srv ? 0 : -1;
}

/* Verifies tokens with the API server's keys as main.c does, on the reviewer's client. */
static inline void rs_use_issuer(struct rstack *s, struct tfj_kube *review_k)
{
	TFJ_CHECK_OK(tfj_issuer_new(&s->issuer, review_k, 0));
	tfj_tokenreviewer_use_issuer(s->hub.tr, s->issuer);
}

/* Another server on the same hub (other limits); NULL on failure (checked). */
static inline struct tfj_report *rs_another(struct rstack *s, const struct tfj_report_opts *tune)
{
	struct tfj_report_opts ro = *tune;
	struct tfj_report *srv = NULL;

	ro.addr = "127.0.0.1:0";
	tfj_reporthub_wire(&ro, &s->hub);
	TFJ_CHECK_OK(tfj_report_start(&srv, &ro));
	return srv;
}

static inline void rs_stop(struct rstack *s)
{
	tfj_report_stop(s->srv);
	tfj_controller_free(s->c);
	tfj_tokenreviewer_free(s->hub.tr);
	tfj_issuer_free(s->issuer);
	tfj_progress_free(s->prog);
	memset(s, 0, sizeof(*s));
}

#endif
