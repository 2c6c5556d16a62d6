/*
 * planact.c - the planner's working context: observed objects sorted into
 * slots, and the builders that append actions to the plan.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/names.h>

#include "tfjob/planact.h"

/* vsnprintf into a fixed buffer; truncation is fine for messages. */
void tfj_planact_fmt(char *buf, size_t n, const char *f, ...)
{
	va_list ap;

	va_start(ap, f);
	if (vsnprintf(buf, n, f, ap) < 0)
		buf[0] = '\0';
	va_end(ap);
}

/* ---- actions ------------------------------------------------------- */

struct tfj_action *tfj_planact_push(struct tfj_planctx *c, enum tfj_action_kind kind)
{
	struct tfj_plan *p = c->plan;
	struct tfj_action *a;

	if (p->n == p->cap) {
		size_t ncap = p->cap ? p->cap * 2 : 16;

		if (p->n >= TFJ_PLAN_MAX_ACTIONS) {
			tfj_err_set(TFJ_ETOOBIG, "plan needs more than %d actions",
				    TFJ_PLAN_MAX_ACTIONS);
			return NULL;
		}
		a = realloc(p->actions, ncap * sizeof(*a));
		if (!a) {
			tfj_err_set(TFJ_ENOMEM, "growing plan");
			return NULL;
		}
		p->actions = a;
		p->cap = ncap;
	}
	a = &p->actions[p->n++];
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	return a;
}

int tfj_planact_set_event(struct tfj_action *a, const char *type, const char *reason,
			  const char *msg)
{
	a->ev_type = type;
	a->ev_reason = reason;
	a->ev_message = strdup(msg);
	return a->ev_message ? 0 : tfj_err_set(TFJ_ENOMEM, "event message");
}

int tfj_planact_event(struct tfj_planctx *c, const char *type, const char *reason, const char *msg)
{
	struct tfj_action *a = tfj_planact_push(c, TFJ_ACT_EVENT);

	return a ? tfj_planact_set_event(a, type, reason, msg) : tfj_err_set(TFJ_ENOMEM, "plan");
}

void tfj_planact_requeue_at(struct tfj_planctx *c, int64_t due_s)
{
	int64_t ms = due_s * 1000 - c->in->now_ms;

	if (ms < 1)
		ms = 1;
	if (!c->requeue_ms || ms < c->requeue_ms)
		c->requeue_ms = ms;
}

int tfj_planact_delete_pod(struct tfj_planctx *c, size_t i, enum tfj_delete_reason why,
			   const char *detail)
{
	struct tfj_podstate *ps = &c->pods[i];
	struct tfj_action *a;
	char msg[512];

	if (ps->deleting || c->pod_gone[i])
		return 0;
	if (!(a = tfj_planact_push(c, TFJ_ACT_DELETE_POD)))
		return TFJ_ENOMEM;
	a->reason = why;
	a->exit_code = ps->phase == TFJ_POD_FAILED && ps->has_exit == 2 ? ps->exit_code : -1;
	tfj_planact_fmt(a->name, sizeof(a->name), "%s", ps->name);
	tfj_planact_fmt(a->uid, sizeof(a->uid), "%s", ps->uid);
	tfj_planact_fmt(msg, sizeof(msg), "Deleted pod: %s (%s%s%s)", ps->name, tfj_plan_reason_name(why),
	    detail ? ": " : "", detail ? detail : "");
	c->pod_gone[i] = 1;
	/*
	 * The pod's container restarts vanish with it; keep them in status so
	 * backoffLimit still sees them. Cleanup at the end does not matter.
	 */
	if (ps->type >= 0 && why != TFJ_DEL_CLEANUP)
		c->st.rs[ps->type].restarts += ps->restarts + (why == TFJ_DEL_RESTART ? 1 : 0);
	return tfj_planact_set_event(a, why == TFJ_DEL_RESTART || why == TFJ_DEL_DISRUPTION ? "Warning" :
			 "Normal", "SuccessfulDeletePod", msg);
}

int tfj_planact_delete_service(struct tfj_planctx *c, size_t i, enum tfj_delete_reason why)
{
	struct tfj_podstate *ss = &c->svcs[i];
	struct tfj_action *a;
	char msg[256];

	if (ss->deleting)
		return 0;
	if (!(a = tfj_planact_push(c, TFJ_ACT_DELETE_SERVICE)))
		return TFJ_ENOMEM;
	a->reason = why;
	tfj_planact_fmt(a->name, sizeof(a->name), "%s", ss->name);
	tfj_planact_fmt(a->uid, sizeof(a->uid), "%s", ss->uid);
	tfj_planact_fmt(msg, sizeof(msg), "Deleted service: %s (%s)", ss->name, tfj_plan_reason_name(why));
	return tfj_planact_set_event(a, "Normal", "SuccessfulDeleteService", msg);
}

int tfj_planact_create(struct tfj_planctx *c, enum tfj_action_kind kind, enum tfj_rtype t, int idx)
{
	struct tfj_action *a;
	char msg[256];
	int rc;

	/* The body is built when the action is sent (plan.h); the name now. */
	if (t < 0 || t >= TFJ_RT_COUNT || !c->job->rs[t].present || idx < 0 ||
	    idx >= c->job->rs[t].replicas)
		return tfj_err_set(TFJ_EINVAL, "no replica %s %d in this job",
				   tfj_tfjob_type_lower(t), idx);
	if (!(a = tfj_planact_push(c, kind)))
		return TFJ_ENOMEM;
	a->rtype = (int)t;
	a->index = idx;
	if ((rc = tfj_names_replica(a->name, sizeof(a->name), c->job->name, tfj_tfjob_type_lower(t),
				    idx)))
		return rc;
	tfj_planact_fmt(msg, sizeof(msg), "Created %s: %s", kind == TFJ_ACT_CREATE_POD ? "pod" : "service",
	    a->name);
	return tfj_planact_set_event(a, "Normal", kind == TFJ_ACT_CREATE_POD ? "SuccessfulCreatePod" :
			 "SuccessfulCreateService", msg);
}

/* ---- observation --------------------------------------------------- */

int tfj_planact_observe(struct tfj_planctx *c)
{
	const struct tfj_plan_input *in = c->in;
	size_t i;

	c->pods = calloc(in->npods ? in->npods : 1, sizeof(*c->pods));
	c->svcs = calloc(in->nservices ? in->nservices : 1, sizeof(*c->svcs));
	c->pod_used = calloc(in->npods + 1, 1);
	c->pod_gone = calloc(in->npods + 1, 1);
	c->pod_mark = calloc(in->npods + 1, 1);
	c->svc_used = calloc(in->nservices + 1, 1);
	if (!c->pods || !c->svcs || !c->pod_used || !c->pod_gone || !c->pod_mark || !c->svc_used)
		return tfj_err_set(TFJ_ENOMEM, "plan: observed objects");
	/* Objects without a name cannot be acted on; they are skipped. */
	for (i = 0; i < in->npods; i++)
		if (!tfj_podstate_read(&c->pods[c->npods], in->pods[i]))
			c->npods++;
	for (i = 0; i < in->nservices; i++)
		if (!tfj_podstate_read_service(&c->svcs[c->nsvcs], in->services[i]))
			c->nsvcs++;
	return 0;
}

/* Puts each object whose name is exactly the one we would give it in its slot. */
static int assign(struct tfj_planctx *c, struct tfj_podstate *objs, size_t n, int **slots,
		  unsigned char *used)
{
	const struct tfj_tfjob *job = c->job;
	char want[TFJ_NAMES_LABEL_MAX + 1];
	size_t i;
	int t;

	for (t = 0; t < TFJ_RT_COUNT; t++) {
		int k, r = job->rs[t].present ? job->rs[t].replicas : 0;

		slots[t] = malloc((size_t)(r ? r : 1) * sizeof(int));
		if (!slots[t])
			return tfj_err_set(TFJ_ENOMEM, "plan: slots");
		for (k = 0; k < r; k++)
			slots[t][k] = -1;
	}
	for (i = 0; i < n; i++) {
		t = objs[i].type;
		if (t < 0 || !job->rs[t].present || objs[i].index >= job->rs[t].replicas)
			continue;
		if (tfj_names_replica(want, sizeof(want), job->name, tfj_tfjob_type_lower(t),
				      objs[i].index) || strcmp(want, objs[i].name))
			continue;
		if (slots[t][objs[i].index] >= 0)
			continue;
		slots[t][objs[i].index] = (int)i;
		used[i] = 1;
	}
	return 0;
}

int tfj_planact_assign(struct tfj_planctx *c)
{
	int rc = assign(c, c->pods, c->npods, c->pod_slot, c->pod_used);

	return rc ? rc : assign(c, c->svcs, c->nsvcs, c->svc_slot, c->svc_used);
}

void tfj_planact_release(struct tfj_planctx *c)
{
	int t;

	for (t = 0; t < TFJ_RT_COUNT; t++) {
		free(c->pod_slot[t]);
		free(c->svc_slot[t]);
	}
	free(c->pods);
	free(c->svcs);
	free(c->pod_used);
	free(c->pod_gone);
	free(c->pod_mark);
	free(c->svc_used);
}

void tfj_planact_describe(char *buf, size_t n, const struct tfj_podstate *ps)
{
	/* The agent's own reason (termination message or Exit report) says more
	 * than kubelet's "Error". */
	const char *reason = ps->agent_reason[0] ? ps->agent_reason : ps->exit_reason;
	const char *sep = ps->agent_message[0] ? ": " : "";

	if (ps->has_exit && reason[0])
		tfj_planact_fmt(buf, n, "%s replica %d (pod %s): container %s exited with code %d (%s)%s%s",
		    tfj_tfjob_type_lower(ps->type), ps->index, ps->name, ps->container, ps->exit_code,
		    reason, sep, ps->agent_message);
	else if (ps->has_exit)
		tfj_planact_fmt(buf, n, "%s replica %d (pod %s): container %s exited with code %d%s%s",
		    tfj_tfjob_type_lower(ps->type), ps->index, ps->name, ps->container, ps->exit_code,
		    sep, ps->agent_message);
	else
		tfj_planact_fmt(buf, n, "%s replica %d (pod %s) failed%s%s", tfj_tfjob_type_lower(ps->type),
		    ps->index, ps->name, ps->why[0] ? ": " : "", ps->why);
}

/* Deletes of pods and services share a rank: they keep their relative order. */
static int rank(enum tfj_action_kind k)
{
	return k >= TFJ_ACT_DELETE_SERVICE ? (int)k - 1 : (int)k;
}

/* Stable order by kind: the apply order plan.h promises. */
int tfj_planact_order(struct tfj_plan *p)
{
	struct tfj_action *sorted;
	size_t i, n = 0;
	int r;

	if (p->n < 2)
		return 0;
	sorted = malloc(p->n * sizeof(*sorted));
	if (!sorted)
		return tfj_err_set(TFJ_ENOMEM, "ordering plan");
	for (r = 0; r <= rank(TFJ_ACT_REQUEUE); r++)
		for (i = 0; i < p->n; i++)
			if (rank(p->actions[i].kind) == r)
				sorted[n++] = p->actions[i];
	free(p->actions);
	p->actions = sorted;
	p->cap = p->n;
	return 0;
}

