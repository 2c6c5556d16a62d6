/*
 * capublish.h - the report channel's CA, published to the namespaces where
 * TFJob pods run: a ConfigMap TFJ_PODSPEC_REPORT_CA_CONFIGMAP with key
 * ca.crt, which every pod's report volume projects (tfjob/podspec.h), so
 * agents verify the operator's serving certificate (report/servingcert.h).
 *
 * tfj_capublish_ensure(ns) is called by the controller before it plans a
 * job of namespace ns. It remembers, per namespace, which CA generation it
 * has written, so once a namespace is current it costs a lookup and no
 * request. Otherwise: GET the ConfigMap; create it when missing (409:
 * another worker was faster, read again), replace it (with its
 * resourceVersion) when its ca.crt differs, leave it when equal. A new CA
 * bundle (rotation) has a new generation, so every namespace is brought up
 * to date on its next reconcile; kubelet then updates the file in running
 * pods, and agents re-read it when they reconnect.
 *
 * The ConfigMap holds only public certificates; it is labelled
 * app.kubernetes.io/managed-by=tfjob-operator and shared by the jobs of a
 * namespace, so it has no owner and stays when they are deleted. It is not
 * deleted when a namespace's last TFJob goes either: a job created right
 * after would need it again, its pods cannot start without it (the volume
 * is not optional), and deleting it safely would take a lock against the
 * creates of other workers and `delete` on ConfigMaps in every namespace,
 * for an object of about 1 KiB that discloses nothing.
 *
 * The per-namespace memo is forgotten when a TFJob of the namespace is
 * deleted (tfj_capublish_forget, from the controller's informer): the next
 * job there costs one GET, and a namespace deleted and created again (its
 * TFJobs go first), or a ConfigMap someone deleted along with the jobs,
 * gets the ConfigMap again instead of pods that wait for it forever.
 *
 * Threads: ensure may be called by every worker at once.
 * Ownership: borrows the client (the controller's) and the CA source.
 */
#ifndef TFJ_CAPUBLISH_H
#define TFJ_CAPUBLISH_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "kube/kube.h"

/* The CA bundle to publish (malloc'd, caller frees) and its generation. */
typedef int (*tfj_capublish_ca_fn)(char **pem, uint64_t *gen, void *ud);

struct tfj_capublish;

int tfj_capublish_new(struct tfj_capublish **out, struct tfj_kube *k, tfj_capublish_ca_fn ca,
		      void *ud);
/* 0 when namespace ns holds the current CA; TFJ_EUNAVAIL before there is one. */
int tfj_capublish_ensure(struct tfj_capublish *p, const char *ns);
/* Pure: the ConfigMap for ns holding pem. *out caller deletes. */
int tfj_capublish_configmap(cJSON **out, const char *ns, const char *pem);
/* Forgets that ns is current: its next ensure reads the ConfigMap again. */
void tfj_capublish_forget(struct tfj_capublish *p, const char *ns);
/* Requests written (POST and PUT) so far (tests, metrics). */
uint64_t tfj_capublish_writes(struct tfj_capublish *p);
void tfj_capublish_free(struct tfj_capublish *p);

#endif
