/*
 * apipath.h - the paths of Kubernetes API collections and objects, built in
 * one place for every caller of the client (kube.h):
 *
 *   collection  "<group>/namespaces/<ns>/<res>", or "<group>/<res>" when ns
 *               is NULL or "" (all namespaces, or a cluster-scoped resource)
 *   object      "<group>/namespaces/<ns>/<res>/<name>[/<sub>]"
 *
 * <group> is the API group's root: TFJ_APIPATH_CORE for core/v1, or a
 * "/apis/<group>/<version>" such as TFJ_APIPATH_COORDINATION; resources of
 * other subsystems define their own (tfjob.h's TFJ_TFJOB_API_PATH).
 *
 * Pure: no I/O. The parts are written as given (names the API server
 * accepts need no escaping); a path that does not fit `out` is TFJ_ETOOBIG.
 */
#ifndef TFJ_APIPATH_H
#define TFJ_APIPATH_H

#include <stddef.h>

#define TFJ_APIPATH_CORE "/api/v1"
#define TFJ_APIPATH_COORDINATION "/apis/coordination.k8s.io/v1"

/* A collection of resource `res` in namespace ns (NULL or "": all). */
int tfj_apipath_coll(char *out, size_t outlen, const char *group_path, const char *ns,
		     const char *res);
/* Object `name` of resource `res` in namespace ns; sub (may be NULL) a subresource. */
int tfj_apipath_obj(char *out, size_t outlen, const char *group_path, const char *ns,
		    const char *res, const char *name, const char *sub);

#endif
