/*
 * podstate.c - reading observed pods and services for the planner.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/json.h>

#include "tfjob/jobstatus.h"
#include "tfjob/kueue.h"
#include "kube/objmeta.h"
#include "tfjob/podspec.h"
#include "tfjob/podstate.h"

/* Pod status reasons that mean "ended by the cluster, not by the program". */
static const char *const disruption_reasons[] = {
	"Evicted", "Preempting", "DeletionByTaintManager", "NodeLost", "Shutdown",
	"Terminated", "NodeShutdown", "UnexpectedAdmissionError"
};

static const char *str_or(const cJSON *obj, const char *key, const char *def)
{
	const char *s;

	if (!cJSON_IsObject(obj) || tfj_json_get_string(&s, obj, key))
		return def;
	return s;
}

static void read_labels(struct tfj_podstate *st, const cJSON *meta)
{
	const cJSON *labels = cJSON_GetObjectItemCaseSensitive(meta, "labels");
	const char *type = str_or(labels, TFJ_LABEL_REPLICA_TYPE, NULL);
	const char *idx = str_or(labels, TFJ_LABEL_REPLICA_INDEX, NULL);
	enum tfj_rtype t;
	char *end;
	long v;

	st->type = -1;
	st->index = -1;
	if (!type || !idx || tfj_tfjob_type_parse(&t, type))
		return;
	if (*idx < '0' || *idx > '9' || strlen(idx) > 6)
		return;
	errno = 0;
	v = strtol(idx, &end, 10);
	if (errno || *end || v < 0 || v >= TFJ_TFJOB_MAX_REPLICAS)
		return;
	st->type = (int)t;
	st->index = (int)v;
}

static int read_meta(struct tfj_podstate *out, const cJSON *obj)
{
	const cJSON *meta, *del;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = tfj_json_get_object(&meta, obj, "metadata")) ||
	    (rc = tfj_json_get_string(&out->name, meta, "name")))
		return rc;
	if (strlen(out->name) > 253)
		return tfj_err_set(TFJ_EINVAL, "object name longer than 253 characters");
	out->uid = tfj_objmeta_str(obj, "uid");
	if (!out->uid || strlen(out->uid) > 127)
		out->uid = "";
	del = cJSON_GetObjectItemCaseSensitive(meta, "deletionTimestamp");
	out->deleting = del && !cJSON_IsNull(del);
	if (out->deleting && cJSON_IsString(del)) {
		int64_t at, grace;

		/* deletionTimestamp is when the grace period ends: the request
		 * came deletionGracePeriodSeconds earlier. */
		if (!tfj_jobstatus_parse_time(&at, del->valuestring))
			out->delete_due = at;
		if (out->delete_due &&
		    !tfj_json_opt_int64(&grace, meta, "deletionGracePeriodSeconds", 0,
					(int64_t)1 << 40, 0))
			out->delete_asked = at - grace;
	}
	read_labels(out, meta);
	return 0;
}

static void read_phase(struct tfj_podstate *st, const cJSON *status)
{
	static const char *const phases[] = { "Pending", "Running", "Succeeded", "Failed" };
	const char *p = str_or(status, "phase", "Pending");
	size_t i;

	st->phase = TFJ_POD_UNKNOWN;
	for (i = 0; i < 4; i++)
		if (!strcmp(p, phases[i]))
			st->phase = (enum tfj_pod_phase)i;
}

/* The reasons a kubelet gives a Ready condition that is not True. */
static int kubelet_reason(const char *reason)
{
	return !strcmp(reason, "ContainersNotReady") || !strcmp(reason, "PodCompleted") ||
	       !strcmp(reason, "ReadinessGatesNotReady");
}

int tfj_podstate_reads_condition(const char *type, const char *status, const char *reason)
{
	if (!strcmp(type, "Ready"))
		return strcmp(status, "True") != 0 && !kubelet_reason(reason);
	return !strcmp(type, "DisruptionTarget") || !strcmp(type, TFJ_PODSTATE_KUEUE_STOP);
}

static void read_disruption(struct tfj_podstate *st, const cJSON *status)
{
	const char *reason = str_or(status, "reason", "");
	const cJSON *conds = cJSON_GetObjectItemCaseSensitive(status, "conditions"), *c;
	size_t i;
	int n = 0;

	snprintf(st->why, sizeof(st->why), "%s", reason);
	for (i = 0; i < sizeof(disruption_reasons) / sizeof(disruption_reasons[0]); i++)
		if (!strcmp(reason, disruption_reasons[i]))
			st->disrupted = 1;
	if (!cJSON_IsArray(conds))
		return;
	cJSON_ArrayForEach(c, conds) {
		if (++n > TFJ_PODSTATE_MAX_CONDITIONS)
			break;
		const char *type = str_or(c, "type", "");
		const char *cstat = str_or(c, "status", "");

		if (!tfj_podstate_reads_condition(type, cstat, str_or(c, "reason", "")))
			continue;
		if (!strcmp(type, "Ready")) {
			/* tfj_podstate_read keeps it only for a running pod. */
			st->node_unready = 1;
			continue;
		}
		/* Kueue marks the pods of a pod group it evicts or preempts
		 * with TerminationTarget (pkg/controller/jobs/pod, Stop)
		 * before it deletes them, not with DisruptionTarget. */
		if (!strcmp(cstat, "True")) {
			st->disrupted = 1;
			snprintf(st->target, sizeof(st->target), "%s", str_or(c, "reason", ""));
			if (!st->why[0])
				snprintf(st->why, sizeof(st->why), "%s",
					 str_or(c, "reason", type));
		}
	}
}

/* The terminated state of a container status: current, else last. */
static const cJSON *terminated(const cJSON *cs)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(cs, "state");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(s, "terminated");

	if (cJSON_IsObject(t))
		return t;
	s = cJSON_GetObjectItemCaseSensitive(cs, "lastState");
	t = cJSON_GetObjectItemCaseSensitive(s, "terminated");
	return cJSON_IsObject(t) ? t : NULL;
}

/* Reads the agent's JSON termination message; anything else is ignored. */
static void read_termmsg(struct tfj_podstate *st, const cJSON *term)
{
	const char *msg = str_or(term, "message", ""), *r, *m;
	cJSON *doc = NULL;
	size_t i, o = 0;

	if (msg[0] != '{' || tfj_json_parse(&doc, msg, strlen(msg), 4096))
		return;
	if (!tfj_json_get_string(&r, doc, "reason"))
		snprintf(st->agent_reason, sizeof(st->agent_reason), "%s", r);
	st->has_term_step = !tfj_json_get_int64(&st->term_step, doc, "lastStep", 0,
						 TFJ_JSON_INT_MAX);
	st->has_term_loss = !tfj_json_get_number(&st->term_loss, doc, "loss") &&
			    isfinite(st->term_loss);
	st->has_term_accuracy = !tfj_json_get_number(&st->term_accuracy, doc, "accuracy") &&
				isfinite(st->term_accuracy);
	/* finished_at: read_containers took it from the same termination. */
	if (!tfj_json_get_string(&m, doc, "message")) {
		/* The newest lines matter most: keep the tail. */
		size_t len = strlen(m);

		if (len > sizeof(st->agent_message) - 1)
			m += len - (sizeof(st->agent_message) - 1);
		for (i = 0; m[i] && o + 3 < sizeof(st->agent_message); i++) {
			if (m[i] == '\n') {
				if (m[i + 1] && o) {
					st->agent_message[o++] = ';';
					st->agent_message[o++] = ' ';
				}
			} else {
				st->agent_message[o++] = (unsigned char)m[i] < 0x20 ? ' ' : m[i];
			}
		}
		st->agent_message[o] = '\0';
	}
	cJSON_Delete(doc);
}

static void read_running(struct tfj_podstate *st, const cJSON *cs)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(cs, "state");
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(s, "running");
	int64_t t;

	if (cJSON_IsObject(r) && !tfj_jobstatus_parse_time(&t, str_or(r, "startedAt", "")))
		st->running_since_ms = t * 1000;
}

static void read_ended_by_delete(struct tfj_podstate *st, const cJSON *cs)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(cs, "state");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(s, "terminated");
	int64_t fin;

	/* Only the current state: a lastState ended before this run. */
	if (st->delete_asked && cJSON_IsObject(t) &&
	    !tfj_jobstatus_parse_time(&fin, str_or(t, "finishedAt", "")) &&
	    fin >= st->delete_asked)
		st->ended_by_delete = 1;
}

static void read_containers(struct tfj_podstate *st, const cJSON *status)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(status, "containerStatuses"), *cs, *t;
	const char *name;
	int64_t rc;
	int n = 0, code;

	if (!cJSON_IsArray(list))
		return;
	cJSON_ArrayForEach(cs, list) {
		if (++n > 64)
			break;
		if (!tfj_json_opt_int64(&rc, cs, "restartCount", 0, 1 << 30, 0))
			st->restarts += rc;
		name = str_or(cs, "name", "");
		if (!strcmp(name, TFJ_PODSPEC_CONTAINER))
			read_running(st, cs);
		t = terminated(cs);
		if (!t || tfj_json_get_int(&code, t, "exitCode", -(1 << 30), 1 << 30))
			continue;
		/*
		 * The tensorflow container decides ExitCode restarts; any other
		 * container is reported only when tensorflow has no exit yet.
		 */
		if (strcmp(name, TFJ_PODSPEC_CONTAINER) && (st->has_exit || code == 0))
			continue;
		if (!strcmp(name, TFJ_PODSPEC_CONTAINER))
			read_ended_by_delete(st, cs);
		if (!strcmp(name, TFJ_PODSPEC_CONTAINER) || !st->has_exit) {
			st->has_exit = !strcmp(name, TFJ_PODSPEC_CONTAINER) ? 2 : 1;
			st->exit_code = code;
			snprintf(st->exit_reason, sizeof(st->exit_reason), "%s",
				 str_or(t, "reason", ""));
			snprintf(st->container, sizeof(st->container), "%s", name);
			if (tfj_jobstatus_parse_time(&st->finished_at, str_or(t, "finishedAt", "")))
				st->finished_at = 0;
			st->agent_reason[0] = st->agent_message[0] = '\0';
			st->has_term_step = st->has_term_loss = st->has_term_accuracy = 0;
			if (!strcmp(name, TFJ_PODSPEC_CONTAINER))
				read_termmsg(st, t);
		}
	}
}

/* The marks of Kueue's pod integration: its gate, its finalizer, a node. */
static void read_kueue(struct tfj_podstate *st, const cJSON *pod)
{
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(pod, "spec");
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(pod, "metadata");
	const cJSON *it;
	int n = 0;

	st->scheduled = *str_or(spec, "nodeName", "") != '\0';
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(spec, "schedulingGates")) {
		if (++n > 64)
			break;
		if (!strcmp(str_or(it, "name", ""), TFJ_KUEUE_GATE))
			st->gated = 1;
	}
	n = 0;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(meta, "finalizers")) {
		if (++n > 64)
			break;
		if (cJSON_IsString(it) && it->valuestring &&
		    !strcmp(it->valuestring, TFJ_KUEUE_FINALIZER)) {
			st->kueue_finalizer = n;
			break;
		}
	}
}

int tfj_podstate_read(struct tfj_podstate *out, const cJSON *pod)
{
	const cJSON *status;
	const char *node;
	int rc;

	if ((rc = read_meta(out, pod)))
		return rc;
	read_kueue(out, pod);
	if (tfj_jobstatus_parse_time(&out->created, str_or(cJSON_GetObjectItemCaseSensitive(pod,
				     "metadata"), "creationTimestamp", "")))
		out->created = 0;
	node = str_or(cJSON_GetObjectItemCaseSensitive(pod, "spec"), "nodeName", "");
	if (strlen(node) < sizeof(out->node))
		memcpy(out->node, node, strlen(node) + 1);
	status = cJSON_GetObjectItemCaseSensitive(pod, "status");
	if (!cJSON_IsObject(status)) {
		out->phase = TFJ_POD_PENDING;
		return 0;
	}
	read_phase(out, status);
	read_disruption(out, status);
	read_containers(out, status);
	/* Unready means something only for a replica that was up. */
	if (out->phase != TFJ_POD_RUNNING || !out->running_since_ms)
		out->node_unready = 0;
	return 0;
}

int tfj_podstate_read_service(struct tfj_podstate *out, const cJSON *svc)
{
	return read_meta(out, svc);
}
