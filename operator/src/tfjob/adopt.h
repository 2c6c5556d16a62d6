/*
 * adopt.h - what a 409 AlreadyExists on a child's create means.
 *
 * Pods and services have fixed names (<job>-<type>-<index>), so a create
 * can find the name taken. The object of that name (read back with a GET)
 * is one of:
 *
 *  - OURS: its controller reference is this TFJob's uid. Our own earlier
 *    create (a retry after a timeout, a cache that lags): nothing to do.
 *  - ORPHAN: no controller reference at all, the labels the planner slots
 *    children by (job-name, replica-type, replica-index) with the values of
 *    the child we wanted, not being deleted. Adopted the way Kubernetes controllers do it
 *    (ControllerRefManager): a strategic merge patch adds our controller
 *    reference, with the object's uid as a precondition so that a newer
 *    object of the same name is never adopted by mistake.
 *  - STALE: controlled by an earlier TFJob of the same name (another uid), or
 *    an orphan being deleted: the garbage collector is removing it; wait
 *    (a transient error, with a Warning event).
 *  - FOREIGN: anything else (another controller, or a stranger without our
 *    label). Never touched: a Warning event and, as a permanent create
 *    failure (createfail.h), the TFJob's ReplicaFailure condition.
 *
 * Pure: reads the object and the job, writes strings.
 */
#ifndef TFJ_ADOPT_H
#define TFJ_ADOPT_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "tfjob/tfjob.h"

enum tfj_adopt_verdict {
	TFJ_ADOPT_OURS = 0,
	TFJ_ADOPT_ORPHAN,
	TFJ_ADOPT_STALE,
	TFJ_ADOPT_FOREIGN
};

/*
 * Classifies obj (the existing child named like one of job's; `want` the
 * body we tried to create, may be NULL: then only the job-name label is
 * compared) and writes why, for events and the condition, into why.
 */
enum tfj_adopt_verdict tfj_adopt_decide(char *why, size_t whylen, const cJSON *obj,
					const cJSON *want, const struct tfj_tfjob *job);

/*
 * The strategic merge patch that adopts obj for job: its controller
 * reference plus metadata.uid as precondition. *out is malloc'd (free()).
 * TFJ_EINVAL when obj has no uid, TFJ_ENOMEM.
 */
int tfj_adopt_patch(char **out, const cJSON *obj, const struct tfj_tfjob *job);

/* "ours", "orphan", "stale", "foreign" for logs. */
const char *tfj_adopt_name(enum tfj_adopt_verdict v);

#endif
