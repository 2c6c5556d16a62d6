/*
 * replabel.c - the leader's label on its own pod (see replabel.h).
 */
#include "app/replabel.h"

#include <stdio.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/log.h>

#include "kube/apipath.h"

int tfj_replabel_patch(char *out, size_t n, int on)
{
	int len = snprintf(out, n, "{\"metadata\":{\"labels\":{\"" TFJ_REPLABEL_KEY "\":%s}}}",
			   on ? "\"true\"" : "null");

	return len < 0 || (size_t)len >= n ? tfj_err_set(TFJ_ETOOBIG, "label patch") : 0;
}

int tfj_replabel_init(struct tfj_replabel *l, struct tfj_kube *k, const char *ns,
		      const char *pod)
{
	int rc = 0;

	memset(l, 0, sizeof(*l));
	l->have = -1;
	l->backoff_ms = TFJ_REPLABEL_BACKOFF_MIN_MS;
	if (k && pod && *pod && ns && *ns) {
		l->k = k;
		rc = tfj_apipath_obj(l->path, sizeof(l->path), TFJ_APIPATH_CORE, ns, "pods", pod,
				     NULL);
	}
	atomic_store(&l->settled, l->k == NULL);
	return rc;
}

int tfj_replabel_sync(struct tfj_replabel *l, int leading, int64_t now_ms)
{
	char patch[128];
	cJSON *out = NULL;
	int rc;

	leading = !!leading;
	if (!l->k || l->have == leading)
		return 0;
	if (now_ms < l->next_ms)
		return TFJ_EUNAVAIL; /* waiting out the backoff */
	if ((rc = tfj_replabel_patch(patch, sizeof(patch), leading)) ||
	    (rc = tfj_kube_patch(l->k, &out, l->path, TFJ_KUBE_PATCH_MERGE, patch))) {
		tfj_log_warn(leading ? "report channel: cannot label this pod as the leader"
				     : "report channel: cannot clear this pod's leader label",
			     "pod", l->path, "detail", tfj_err_detail());
		l->next_ms = now_ms + l->backoff_ms;
		l->backoff_ms = l->backoff_ms * 2 > TFJ_REPLABEL_BACKOFF_MAX_MS
				? TFJ_REPLABEL_BACKOFF_MAX_MS : l->backoff_ms * 2;
		return rc;
	}
	cJSON_Delete(out);
	l->have = leading;
	l->backoff_ms = TFJ_REPLABEL_BACKOFF_MIN_MS;
	atomic_store(&l->settled, 1);
	tfj_log_info(leading ? "report channel: this pod is the leader's report backend"
			     : "report channel: this pod is no report backend",
		     "label", TFJ_REPLABEL_KEY);
	return 0;
}

int tfj_replabel_settled(struct tfj_replabel *l)
{
	return atomic_load(&l->settled);
}
