/*
 * scrape.c - the whole /metrics page.
 */
#include "app/scrape.h"

#include <tfj/err.h>

#include "app/procmem.h"

int tfj_scrape_render(const struct tfj_scrape *s, struct tfj_buf *out)
{
	int rc = tfj_kube_metrics(s->kube, out);

	if (rc == 0)
		rc = tfj_procmem_metrics(out);
	if (rc == 0)
		rc = tfj_heaptrim_metrics(s->trim, out);
	/* Events spend a client of their own: counted apart (events.h). */
	if (rc == 0 && s->event_kube)
		rc = tfj_kube_requests_metric(s->event_kube, out,
					      "tfjob_operator_event_api_requests_total",
					      "Kubernetes API requests of the Events' own client "
					      "(POST, PATCH of a count) by verb and HTTP code.");
	if (rc == 0)
		rc = tfj_controller_metrics(s->ctl, out);
	if (rc == 0)
		rc = tfj_report_metrics(s->report, out);
	if (rc == 0)
		rc = tfj_progress_metrics(s->prog, out);
	if (rc == 0)
		rc = tfj_servingcert_metrics(s->cert, out);
	if (rc == 0)
		rc = tfj_tokenreviewer_metrics(s->tr, out);
	if (rc == 0)
		rc = tfj_buf_printf(out,
				    "# HELP tfjob_operator_leader 1 while this replica is the leader.\n"
				    "# TYPE tfjob_operator_leader gauge\n"
				    "tfjob_operator_leader %d\n", s->leading);
	if (rc == 0 && s->identity && s->identity[0])
		rc = tfj_buf_printf(out,
				    "# HELP tfjob_operator_identity_info This process's leader-election "
				    "identity: the Lease's holderIdentity while it leads.\n"
				    "# TYPE tfjob_operator_identity_info gauge\n"
				    "tfjob_operator_identity_info{identity=\"%s\"} 1\n",
				    s->identity);
	return rc;
}
