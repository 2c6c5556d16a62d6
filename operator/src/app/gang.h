/*
 * gang.h - gang scheduling at the edge: carries out the planner's PodGroup
 * actions (plan.h: CREATE_PODGROUP, UPDATE_PODGROUP, DELETE_PODGROUP) on
 * the PodGroup API tfjob/podgroup.h names. What the PodGroup should be,
 * and when, is the planner's (tfjob/planpodgroup.h); the controller's
 * PodGroup informer is what it observes.
 *
 *  - CREATE: POST the action's body (recorded in the expectations first);
 *    409 is success. A 404 means the PodGroup API is not served (its CRD
 *    is not installed): a Warning event PodGroupUnavailable saying what to
 *    install, the job's record notes it (createfail.h's
 *    tfj_createfail_podgroup: the next plans block the job and retry only
 *    after TFJ_CREATEFAIL_PODGROUP_MS, so a missing CRD neither crash-loops
 *    nor storms the API server), and the plan's pods are held. Any other
 *    failure: a Warning FailedCreatePodGroup, pods held, the error returned
 *    (the key's backoff).
 *  - UPDATE: a JSON patch that tests the uid and replaces the spec (the
 *    informer's copy is slim, so the object is never PUT whole); 404 and
 *    409 are no failure (the next plan sees what is there).
 *  - DELETE: with preconditions.uid, Background; 404 and 409 are success.
 * Successes post the action's event, failures a Warning of their own.
 *
 * Ownership: borrows everything.
 */
#ifndef TFJ_GANG_H
#define TFJ_GANG_H

#include <stdint.h>

#include "app/apply.h"
#include "tfjob/createfail.h"
#include "tfjob/plan.h"
#include "tfjob/podgroup.h"
#include "tfjob/tfjob.h"

/*
 * Carries out act (a *_PODGROUP action of job's plan; key "ns/name") with
 * ap->gang's API. *hold is set to 1 when the plan's pods must wait. cf (may
 * be NULL) is the job's record. 0 or the error to retry with backoff.
 */
int tfj_gang_apply(int *hold, struct tfj_apply *ap, const struct tfj_tfjob *job, const char *key,
		   const struct tfj_action *act, struct tfj_createfail *cf, int64_t now_ms);

#endif
