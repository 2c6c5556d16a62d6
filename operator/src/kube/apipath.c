/*
 * apipath.c - Kubernetes API paths of collections and objects.
 */
#include "kube/apipath.h"

#include <stdio.h>

#include <tfj/err.h>

int tfj_apipath_coll(char *out, size_t outlen, const char *group_path, const char *ns,
		     const char *res)
{
	int n = ns && *ns ? snprintf(out, outlen, "%s/namespaces/%s/%s", group_path, ns, res)
			  : snprintf(out, outlen, "%s/%s", group_path, res);
	return n < 0 || (size_t)n >= outlen ? tfj_err_set(TFJ_ETOOBIG, "path too long") : 0;
}

int tfj_apipath_obj(char *out, size_t outlen, const char *group_path, const char *ns,
		    const char *res, const char *name, const char *sub)
{
	int n = snprintf(out, outlen, "%s/namespaces/%s/%s/%s%s%s", group_path, ns, res, name,
			 sub ? "/" : "", sub ? sub : "");
	return n < 0 || (size_t)n >= outlen ? tfj_err_set(TFJ_ETOOBIG, "path too long") : 0;
}
