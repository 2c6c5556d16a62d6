/*
 * capublish.h - the report channel's CA, published to the namespaces where
 * TFJob pods run: a ConfigMap `<operator name>-report-ca` with key ca.crt
 * (tfjob/podspec.h's tfj_podspec_report_ca_name), which every pod's report
 * volume projects, so agents verify the operator's serving certificate
 * (report/servingcert.h). The name is per install: a cluster-wide and a
 * namespaced install running jobs in one namespace each keep their own.
 *
 * tfj_capublish_ensure(ns) carries out the planner's PUBLISH_CA action
 * (tfjob/plan.h), which a running job's plan holds while
 * tfj_capublish_current(ns) says 0. It remembers, per namespace, which CA generation it
 * has written, so once a namespace is current it costs a lookup and no
 * request. Otherwise: GET the ConfigMap; create it when missing (409:
 * another worker was faster, read again), replace it (with its
 * resourceVersion) when its ca.crt differs, leave it when equal. A new CA
 * bundle (rotation) has a new generation, so every namespace is brought up
 * to date on its next reconcile; kubelet then updates the file in running
 * pods, and agents re-read it when they reconnect.
 *
 * The ConfigMap holds only public certificates; it is labelled
 * app.kubernetes.io/managed-by=tfjob-operator, component=report-ca and
 * training.kubeflow.org/operator-name=<operator name>, and shared by the
 * jobs of a namespace, so it has no owner and stays when they are deleted.
 * An existing ConfigMap of that name without those labels is never
 * replaced (TFJ_ESTATE: the job's pods wait, and the controller logs why).
 * The controller calls ensure only for jobs that pass its managedBy filter. It is not
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

/*
 * operator_name: the install's (NULL = tfjob/podspec.h's default), on the
 * ConfigMap's label; name: the ConfigMap's (the chart gives each release its
 * own; NULL = "<operator name>-report-ca").
 */
int tfj_capublish_new(struct tfj_capublish **out, struct tfj_kube *k, const char *operator_name,
		      const char *name, tfj_capublish_ca_fn ca, void *ud);
/* 0 when namespace ns holds the current CA; TFJ_EUNAVAIL before there is one. */
int tfj_capublish_ensure(struct tfj_capublish *p, const char *ns);
/* Pure: the ConfigMap `name` for ns holding pem, labelled for opname. *out caller deletes. */
int tfj_capublish_configmap(cJSON **out, const char *ns, const char *name, const char *opname,
			    const char *pem);
/*
 * 1 when ns is known to hold the current CA (no request: the memo and the
 * CA source only), 0 otherwise, also before there is a CA. The planner's
 * input (tfjob/plan.h's report_ca_current).
 */
int tfj_capublish_current(struct tfj_capublish *p, const char *ns);
/* Forgets that ns is current: its next ensure reads the ConfigMap again. */
void tfj_capublish_forget(struct tfj_capublish *p, const char *ns);
/* Requests written (POST and PUT) so far (tests, metrics). */
uint64_t tfj_capublish_writes(struct tfj_capublish *p);
void tfj_capublish_free(struct tfj_capublish *p);

#endif
