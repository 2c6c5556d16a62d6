/*
 * nsinformer.h - one resource's informers over a list of watched
 * namespaces, used as one (the operator's namespaced mode).
 *
 * With `--namespace a,b,c` the operator may hold only a Role in each of those
 * namespaces (docs/security.md, "RBAC"): a cluster-wide LIST/WATCH would be
 * forbidden, so each namespace gets an informer of its own on the
 * namespaced path (apipath.h), and reads are routed by namespace. With one
 * namespace, or none (every namespace, one cluster-wide informer), this is
 * a thin shell around a single informer. Objects of a namespace that is not
 * watched are simply absent.
 *
 * Every function mirrors its informer.h namesake; statistics add up over
 * the namespaces (idle: the longest), the dump is sorted by key as one
 * informer's would be.
 *
 * Ownership: the set owns its informers; see informer.h for the copies.
 */
#ifndef TFJ_NSINFORMER_H
#define TFJ_NSINFORMER_H

#include <stddef.h>
#include <stdint.h>

#include "kube/informer.h"

#define TFJ_NSINFORMER_MAX 64   /* watched namespaces at most */

/*
 * Splits a comma-separated namespace list ("a, b,c"; "" = all) into
 * names[] (each a DNS label, at most 63 characters), sorted so that their
 * keys ("ns/name") sort as one cache would, duplicates dropped. *n = 0 for
 * "" or NULL. TFJ_EINVAL with a detail on a bad name or more than
 * TFJ_NSINFORMER_MAX. Pure.
 */
int tfj_nsinformer_parse(char names[][64], size_t *n, const char *list);

struct tfj_nsinformer;

/*
 * One informer of collection `res` under API root `group` per namespace of
 * `namespaces` (a list as above; NULL or "": one informer for every
 * namespace). `io` gives the rest of the options (its name and path are
 * set here).
 */
int tfj_nsinformer_new(struct tfj_nsinformer **out, struct tfj_kube *k,
		       const struct tfj_informer_opts *io, const char *group, const char *res,
		       const char *namespaces);
int tfj_nsinformer_start(struct tfj_nsinformer *s);
void tfj_nsinformer_stop(struct tfj_nsinformer *s);
void tfj_nsinformer_free(struct tfj_nsinformer *s);
int tfj_nsinformer_synced(struct tfj_nsinformer *s);
int tfj_nsinformer_wait_synced(struct tfj_nsinformer *s, long timeout_ms);
cJSON *tfj_nsinformer_get(struct tfj_nsinformer *s, const char *ns, const char *name);
/* tfj_informer_get_text of the namespace's informer; TFJ_ENOTFOUND when unwatched. */
int tfj_nsinformer_get_text(char **out, size_t *len, struct tfj_nsinformer *s, const char *ns,
			    const char *name);
int tfj_nsinformer_select(struct tfj_nsinformer *s, cJSON ***out, size_t *n, const char *ns,
			  const char *value);
void tfj_nsinformer_stats(struct tfj_nsinformer *s, struct tfj_informer_stats *out);
/* tfj_informer_absent of namespace ns's informer (0 when ns is not watched). */
int tfj_nsinformer_absent(struct tfj_nsinformer *s, const char *ns);
const char *tfj_nsinformer_name(const struct tfj_nsinformer *s);
int64_t tfj_nsinformer_idle_ms(struct tfj_nsinformer *s);
int tfj_nsinformer_dump(struct tfj_nsinformer *s, struct tfj_buf *out);

#endif
