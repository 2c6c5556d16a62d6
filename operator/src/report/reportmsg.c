/*
 * reportmsg.c - decoding one agent report (see reportmsg.h).
 */
#include "report/reportmsg.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <tfj/err.h>

#include "tfj_report.pb-c.h"
#include "tfjob/tfjob.h"

static const char *const kind_names[] = { "RegisterReplica", "Heartbeat", "Exit" };
static const char *const kind_paths[] = { TFJ_REPORT_PATH_REGISTER, TFJ_REPORT_PATH_HEARTBEAT,
					  TFJ_REPORT_PATH_EXIT };

const char *tfj_reportmsg_kind_name(enum tfj_reportmsg_kind k)
{
	return (k >= 0 && k < TFJ_RM_COUNT) ? kind_names[k] : "";
}

int tfj_reportmsg_kind_of(enum tfj_reportmsg_kind *out, const char *path)
{
	int i;

	for (i = 0; i < TFJ_RM_COUNT; i++)
		if (path && !strcmp(path, kind_paths[i])) {
			*out = (enum tfj_reportmsg_kind)i;
			return 0;
		}
	return tfj_err_set(TFJ_ENOTFOUND, "unknown report method");
}

/*
 * Kubernetes names and uids: lower-case letters, digits, '-' and '.', not
 * empty, shorter than the buffer. Anything else can never match a pod, so it
 * is rejected before it reaches logs or the caches.
 */
static int copy_name(char *dst, size_t cap, const char *src, const char *what)
{
	size_t n, i;

	if (!src || !*src)
		return tfj_err_set(TFJ_EINVAL, "replica.%s: missing", what);
	n = strnlen(src, cap);
	if (n >= cap)
		return tfj_err_set(TFJ_EINVAL, "replica.%s: longer than %zu bytes", what, cap - 1);
	for (i = 0; i < n; i++) {
		char c = src[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
			return tfj_err_set(TFJ_EINVAL, "replica.%s: invalid character", what);
	}
	memcpy(dst, src, n);
	dst[n] = '\0';
	return 0;
}

/* Copies a free-text field, cut at the buffer, with control bytes as '?'. */
static void copy_text(char *dst, size_t cap, const char *src)
{
	size_t i, n = src ? strnlen(src, cap - 1) : 0;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)src[i];

		dst[i] = (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f ? '?' : (char)c;
	}
	dst[n] = '\0';
}

static int read_ref(struct tfj_reportmsg_ref *out, const Tfj__Report__V1__ReplicaRef *r)
{
	enum tfj_rtype t;
	int rc;

	if (!r)
		return tfj_err_set(TFJ_EINVAL, "replica: missing");
	if ((rc = copy_name(out->ns, sizeof(out->ns), r->namespace_, "namespace")) ||
	    (rc = copy_name(out->job, sizeof(out->job), r->job_name, "job_name")) ||
	    (rc = copy_name(out->job_uid, sizeof(out->job_uid), r->job_uid, "job_uid")) ||
	    (rc = copy_name(out->pod, sizeof(out->pod), r->pod_name, "pod_name")))
		return rc;
	if (!r->replica_type || strnlen(r->replica_type, 16) >= 16 ||
	    tfj_tfjob_type_parse(&t, r->replica_type))
		return tfj_err_set(TFJ_EINVAL, "replica.replica_type: unknown");
	if (r->replica_index < 0 || r->replica_index >= TFJ_TFJOB_MAX_REPLICAS)
		return tfj_err_set(TFJ_EINVAL, "replica.replica_index: out of range");
	out->type = (int)t;
	out->index = r->replica_index;
	return 0;
}

/* A metric name as the status holds it: 1-63 of [A-Za-z0-9_./-]. */
static int metric_name_ok(const char *s)
{
	size_t n = 0;

	if (!s)
		return 0;
	for (; s[n]; n++)
		if (n >= 63 || !(isalnum((unsigned char)s[n]) || strchr("_./-", s[n])))
			return 0;
	return n > 0;
}

static int read_metrics(struct tfj_reportmsg *m, const Tfj__Report__V1__Progress *p)
{
	size_t i;

	if (p->n_metrics > TFJ_PROGREC_METRICS_MAX)
		return tfj_err_set(TFJ_EINVAL, "progress.metrics: %zu, at most %d", p->n_metrics,
				   TFJ_PROGREC_METRICS_MAX);
	for (i = 0; i < p->n_metrics; i++) {
		const Tfj__Report__V1__Metric *mt = p->metrics[i];

		if (!mt || !metric_name_ok(mt->name) || !isfinite(mt->value))
			return tfj_err_set(TFJ_EINVAL, "progress.metrics[%zu]: bad name or value", i);
		memcpy(m->metrics[i].name, mt->name, strlen(mt->name) + 1);
		m->metrics[i].value = mt->value;
	}
	m->nmetrics = (unsigned)p->n_metrics;
	return 0;
}

static int read_progress(struct tfj_reportmsg *m, const Tfj__Report__V1__Progress *p)
{
	int rc;

	if (!p)
		return 0;
	if ((p->has_loss && !isfinite(p->loss)) || (p->has_accuracy && !isfinite(p->accuracy)) ||
	    (p->has_examples_per_sec && !isfinite(p->examples_per_sec)))
		return tfj_err_set(TFJ_EINVAL, "progress: non-finite number");
	if (p->has_step && p->global_step < 0)
		return tfj_err_set(TFJ_EINVAL, "progress.global_step: negative");
	if (p->unix_time_ms < 0)
		return tfj_err_set(TFJ_EINVAL, "progress.unix_time_ms: negative");
	if (p->has_total_steps && p->total_steps < 1)
		return tfj_err_set(TFJ_EINVAL, "progress.total_steps: below 1");
	m->has_step = p->has_step;
	m->step = p->global_step;
	m->has_loss = p->has_loss;
	m->loss = p->loss;
	m->has_accuracy = p->has_accuracy;
	m->accuracy = p->accuracy;
	m->has_eps = p->has_examples_per_sec;
	m->eps = p->examples_per_sec;
	m->has_total = p->has_total_steps;
	m->total = p->total_steps;
	if ((rc = read_metrics(m, p)))
		return rc;
	m->progress_ms = p->unix_time_ms;
	return 0;
}

int tfj_reportmsg_decode(struct tfj_reportmsg *out, enum tfj_reportmsg_kind kind,
			 const uint8_t *data, size_t len)
{
	ProtobufCMessage *msg = NULL;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (len > TFJ_REPORTMSG_MAX)
		return tfj_err_set(TFJ_ETOOBIG, "report: %zu bytes", len);
	if (!data && len)
		return tfj_err_set(TFJ_EINVAL, "report: no data");
	out->kind = kind;
	switch (kind) {
	case TFJ_RM_REGISTER: {
		Tfj__Report__V1__RegisterRequest *r =
			tfj__report__v1__register_request__unpack(NULL, len, data);
		if (!r)
			return tfj_err_set(TFJ_EINVAL, "report: malformed RegisterRequest");
		msg = &r->base;
		rc = read_ref(&out->ref, r->replica);
		break;
	}
	case TFJ_RM_HEARTBEAT: {
		Tfj__Report__V1__HeartbeatRequest *r =
			tfj__report__v1__heartbeat_request__unpack(NULL, len, data);
		if (!r)
			return tfj_err_set(TFJ_EINVAL, "report: malformed HeartbeatRequest");
		msg = &r->base;
		if (!(rc = read_ref(&out->ref, r->replica)))
			rc = read_progress(out, r->progress);
		out->child_running = r->child_running;
		break;
	}
	case TFJ_RM_EXIT: {
		Tfj__Report__V1__ExitRequest *r = tfj__report__v1__exit_request__unpack(NULL, len, data);
		if (!r)
			return tfj_err_set(TFJ_EINVAL, "report: malformed ExitRequest");
		msg = &r->base;
		if ((rc = read_ref(&out->ref, r->replica)))
			break;
		if (r->exit_code < 0 || r->exit_code > 255 || r->signal < 0 || r->signal > 128) {
			rc = tfj_err_set(TFJ_EINVAL, "exit: code or signal out of range");
			break;
		}
		out->exit_code = r->exit_code;
		out->retryable = r->retryable;
		out->signal = r->signal;
		copy_text(out->reason, sizeof(out->reason), r->reason);
		copy_text(out->message, sizeof(out->message), r->message);
		if (r->has_last_step && r->last_step >= 0) {
			out->has_step = 1;
			out->step = r->last_step;
		}
		break;
	}
	default:
		return tfj_err_set(TFJ_EINVAL, "report: unknown kind");
	}
	protobuf_c_message_free_unpacked(msg, NULL);
	if (rc)
		memset(out, 0, sizeof(*out));
	return rc;
}
