/*
 * replabel.h - only the leader receives reports: the leader's pod carries
 * the label TFJ_REPLABEL_KEY=true and the report Service selects it
 * (deploy/operator/service.yaml, the chart's service.yaml), so the agents'
 * connections land on the leader and never on a standby.
 *
 * Each process clears the label from its own pod first (a container
 * restarted in place keeps its pod's labels, and a fresh process is never
 * the leader) and is not ready until that is done; once it leads and
 * reconciles it sets the label. A leader that loses the Lease exits (main.c),
 * so its pod leaves the Service's endpoints when it stops being Ready and
 * its restarted process clears the label. Until the endpoints follow (a
 * few seconds), a standby still reached answers UNAVAILABLE and the agents
 * reconnect (docs/agent.md).
 *
 * Failed PATCHes are retried with a capped backoff. Not thread-safe: the
 * main thread alone calls tfj_replabel_sync; tfj_replabel_settled may be
 * read from any thread.
 */
#ifndef TFJ_REPLABEL_H
#define TFJ_REPLABEL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "kube/kube.h"

#define TFJ_REPLABEL_KEY "tfjob.kubeflow.org/report-leader"
#define TFJ_REPLABEL_BACKOFF_MIN_MS 500
#define TFJ_REPLABEL_BACKOFF_MAX_MS 10000

struct tfj_replabel {
	struct tfj_kube *k;        /* borrowed; NULL: labelling off (no pod name) */
	char path[512];            /* the pod's API path */
	int have;                  /* the label as last written: -1 unknown, 0 off, 1 on */
	int64_t next_ms;           /* monotonic ms of the next try after a failure */
	int64_t backoff_ms;
	atomic_int settled;        /* the label was written as wanted at least once */
};

/*
 * Pure: the JSON merge patch that sets (on) or removes the label; removing
 * a label that is not there is no error.
 */
int tfj_replabel_patch(char *out, size_t n, int on);

/* k NULL or pod ""/NULL: labelling off (tfj_replabel_sync does nothing). */
int tfj_replabel_init(struct tfj_replabel *l, struct tfj_kube *k, const char *ns,
		      const char *pod);

/*
 * Brings the label to `leading` when it is not yet and the backoff allows
 * (now_ms monotonic). 0 when it is as wanted, else the PATCH's error.
 */
int tfj_replabel_sync(struct tfj_replabel *l, int leading, int64_t now_ms);

/* 1 once the label was cleared or set (or labelling is off): readiness. */
int tfj_replabel_settled(struct tfj_replabel *l);

#endif
