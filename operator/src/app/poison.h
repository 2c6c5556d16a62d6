/*
 * poison.h - TFJobs the informer could not decode, made visible.
 *
 * A TFJob too deep, too large or of the wrong shape for the decoder is kept
 * out of the cache (informer.h) and so never reconciled. So that its owner
 * sees why, the TFJob informer's reject callback notes it here and queues
 * its key; the worker that then finds the key missing from the cache writes
 * `Failed` with reason `InvalidSpec` and a message through the status
 * subresource, plus a Warning event. The write is a PUT (the verb the
 * operator's RBAC grants on tfjobs/status) of a minimal object: name,
 * namespace, the resourceVersion read with the scanner, and the status; the
 * API server keeps everything but .status from the stored object. On a
 * conflict the object is read again as text and scanned. A job that had
 * already ended (status.phase Succeeded or Failed) is left alone, and so is
 * one whose spec.runPolicy.managedBy names another controller than
 * `manager` (or cannot be read as a string): the managedBy filter comes
 * before any write, here as in the planner (tfjob/plan.h), checked on the
 * text the informer rejected and again on every re-read.
 *
 * Threads: note runs on the informer thread, write on a worker; a mutex
 * guards the pending set.
 */
#ifndef TFJ_POISON_H
#define TFJ_POISON_H

#include <stdint.h>
#include <cjson/cJSON.h>

#include "app/events.h"
#include "kube/informer.h"
#include "kube/kube.h"

struct tfj_poison;

/* manager: the runPolicy.managedBy this operator owns; NULL = TFJ_TFJOB_MANAGER. */
int tfj_poison_new(struct tfj_poison **out, struct tfj_kube *k, struct tfj_events *events,
		   const char *manager);
void tfj_poison_free(struct tfj_poison *p);

/*
 * Notes a rejected TFJob (r->key set) for a status write. 1 when it was
 * noted (the caller queues r->key), 0 when there is nothing to write (no
 * key, the job already ended, or it is another controller's), or a
 * negative code.
 */
int tfj_poison_note(struct tfj_poison *p, const struct tfj_informer_reject *r);

/*
 * Writes the Failed/InvalidSpec status of key when it is noted. *handled is
 * 1 when key was noted (then the return is the write's result; on failure
 * the key stays noted for the retry), 0 otherwise. A TFJob gone meanwhile
 * (404) counts as written.
 */
int tfj_poison_write(struct tfj_poison *p, const char *key, int *handled);

/*
 * The status update that marks TFJob ns/name (at resourceVersion rv) Failed
 * with reason InvalidSpec and message msg at unix time now: apiVersion,
 * kind, metadata {name, namespace, resourceVersion} and status {conditions,
 * phase, completionTime}. Pure; *out is a new tree.
 */
int tfj_poison_status(cJSON **out, const char *ns, const char *name, const char *rv,
		      const char *msg, int64_t now);

/* TFJobs marked Failed/InvalidSpec so far. */
uint64_t tfj_poison_written(const struct tfj_poison *p);

#endif
