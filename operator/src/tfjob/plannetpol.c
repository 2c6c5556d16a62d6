/*
 * plannetpol.c - the planner's rules for the job's NetworkPolicy
 * (plannetpol.h).
 */
#include "tfjob/plannetpol.h"

#include <string.h>

#include <tfj/err.h>

#include "kube/objmeta.h"
#include "tfjob/createfail.h"
#include "tfjob/jobstatus.h"
#include "tfjob/netpol.h"

/*
 * The observed `<job>-training` (the input holds only the job's own), and
 * whether it is current: *cur 1 current, 0 not; the policy or NULL.
 */
static int observed_netpol(const cJSON **np, int *cur, struct tfj_planctx *c)
{
	char name[300];
	const char *n;
	size_t i;
	int rc;

	*np = NULL;
	*cur = 0;
	if (!c->in->cfg || !c->in->cfg->netpol || !c->job->spec_valid)
		return 0;
	if ((rc = tfj_netpol_name(name, sizeof(name), c->job)))
		return rc;
	for (i = 0; i < c->in->nnetpols && !*np; i++) {
		n = tfj_objmeta_str(c->in->netpols[i], "name");
		if (n && !strcmp(n, name))
			*np = c->in->netpols[i];
	}
	if (!*np)
		return 0;
	rc = tfj_netpol_current(*np, c->job, &c->opts);
	if (rc < 0)
		return rc;
	*cur = rc;
	return 0;
}

/*
 * NetworkPolicyFailure: True while the last write of the policy failed
 * (create_failure's netpol fields), removed once the policy is seen current;
 * left as it is when nothing is known (after a restart, until a write or
 * the cache tells).
 */
int tfj_plannetpol_condition(struct tfj_planctx *c)
{
	const struct tfj_createfail *cf = c->in->create_failure;
	const cJSON *np;
	int cur, rc;

	if ((rc = observed_netpol(&np, &cur, c)))
		return rc;
	if (np && cur) {
		tfj_jobstatus_remove(&c->st, TFJ_COND_NETWORK_POLICY_FAILURE);
		return 0;
	}
	if (cf && cf->netpol_failed)
		return tfj_jobstatus_set(&c->st, TFJ_COND_NETWORK_POLICY_FAILURE, 1,
					 cf->netpol_reason, cf->netpol_message, c->now);
	return 0;
}

/*
 * The policy is wanted while the job runs: created when missing, updated
 * when not current. Suspended or finished jobs keep theirs as it is (pods
 * of a finished job may linger under cleanPodPolicy None and still need
 * the fence); the garbage collector deletes it with the job.
 */
int tfj_plannetpol_plan(struct tfj_planctx *c)
{
	const cJSON *np;
	struct tfj_action *a;
	int cur, rc;

	if (!c->in->cfg || !c->in->cfg->netpol || !c->job->spec_valid || c->job->run.suspend ||
	    tfj_jobstatus_finished(&c->st))
		return 0;
	if ((rc = observed_netpol(&np, &cur, c)) || (np && cur))
		return rc;
	if (!(a = tfj_planact_push(c, np ? TFJ_ACT_UPDATE_NETPOL : TFJ_ACT_CREATE_NETPOL)))
		return TFJ_ENOMEM;
	if ((rc = tfj_netpol_name(a->name, sizeof(a->name), c->job)))
		return rc;
	if (np)
		tfj_planact_fmt(a->uid, sizeof(a->uid), "%s", tfj_objmeta_str(np, "uid") ?
				tfj_objmeta_str(np, "uid") : "");
	return tfj_planact_set_event(a, "Normal",
				     np ? "UpdatedNetworkPolicy" : "CreatedNetworkPolicy",
				     np ? "NetworkPolicy updated to the job's training ports"
					: "NetworkPolicy created: training ports only from the "
					  "job's pods");
}
