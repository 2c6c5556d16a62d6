/*
 * reporthub.h - the operator's side of each report: the callbacks
 * report.h's server calls, joining TokenReview (tokenreview.h), the
 * controller's caches (controller.h) and the progress store (progress.h).
 *
 *   auth:    the named pod from the pod cache -> the reviewer (local
 *            checks of the token against that pod, then TokenReview,
 *            cached) -> tfj_tokenreview_authorize. UNAUTHENTICATED for a
 *            missing, forged, expired or wrong-audience token;
 *            PERMISSION_DENIED for a token of another pod, job or replica;
 *            UNAVAILABLE when the API server cannot be asked or the
 *            TokenReview budget is spent (reason review_limited).
 *   deliver: the TFJob from the cache must exist with the uid the report
 *            names (NOT_FOUND otherwise) and must not be finished
 *            (FAILED_PRECONDITION); then the report is stored and the job
 *            queued for a reconcile (Exit at once, progress after a second,
 *            the planner bounds the status writes). A succeeded job
 *            still takes reports (its lingering replicas are to be told
 *            stop); a failed one refuses them (FAILED_PRECONDITION).
 *   advise:  a Heartbeat of a succeeded job from a replica stoprule.h
 *            stops is answered with stop.
 *
 * Ownership: the hub borrows the controller, the store and the reviewer.
 */
#ifndef TFJ_REPORTHUB_H
#define TFJ_REPORTHUB_H

#include "app/controller.h"
#include "report/progress.h"
#include "report/report.h"
#include "report/tokenreview.h"

struct tfj_reporthub {
	struct tfj_controller *ctl;
	struct tfj_progress *prog;
	struct tfj_tokenreviewer *tr;
};

enum tfj_report_code tfj_reporthub_auth(void *hub, const struct tfj_reportmsg *m,
					const char *token, char *subject, size_t subject_len,
					const char **reason);
/* The hub's callbacks (auth, deliver, advise, ack, known) and ud into o. */
void tfj_reporthub_wire(struct tfj_report_opts *o, struct tfj_reporthub *hub);

/* known: the token is in the reviewer's verified cache (report.h's peer limit). */
int tfj_reporthub_known(void *hub, const char *token);
enum tfj_report_code tfj_reporthub_deliver(void *hub, const struct tfj_reportmsg *m,
					   const char *subject, const char **reason);
void tfj_reporthub_advise(void *hub, const struct tfj_reportmsg *m, int *stop, char *reason,
			  size_t reason_len);
/* ack: what of the pod's reports the status holds (progress.h's tfj_progress_ack). */
void tfj_reporthub_ack(void *hub, const struct tfj_reportmsg *m, const char *subject,
		       struct tfj_report_ack *out);

#endif
