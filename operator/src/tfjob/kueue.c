/*
 * kueue.c - Kueue's pod-group integration (kueue.h).
 */
#include "tfjob/kueue.h"

#include <stdio.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/json.h>
#include <tfj/names.h>

static int alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

/* A Kubernetes label value that is not empty. */
static int label_value(const char *s)
{
	size_t i, n = strlen(s);

	if (!n || n > TFJ_NAMES_LABEL_MAX || !alnum(s[0]) || !alnum(s[n - 1]))
		return 0;
	for (i = 0; i < n; i++)
		if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return 0;
	return 1;
}

int tfj_kueue_queue(const char **out, const struct tfj_tfjob *job, int pod_groups)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(job->doc, "metadata");
	const cJSON *ann = cJSON_GetObjectItemCaseSensitive(meta, "annotations");
	const cJSON *lbl = cJSON_GetObjectItemCaseSensitive(meta, "labels");
	const char *q = NULL;

	*out = NULL;
	if (!pod_groups)
		return 0;
	if (cJSON_IsObject(ann) && tfj_json_opt_string(&q, ann, TFJ_KUEUE_ANN_QUEUE, NULL))
		return tfj_err_set(TFJ_EINVAL, "annotation %s: %s", TFJ_KUEUE_ANN_QUEUE,
				   tfj_err_detail());
	if (q && !label_value(q))
		return tfj_err_set(TFJ_EINVAL, "annotation %s: not a LocalQueue name (a label "
				   "value: 1-63 letters, digits, '-', '_' or '.')", TFJ_KUEUE_ANN_QUEUE);
	if (!q && cJSON_IsObject(lbl) &&
	    (tfj_json_opt_string(&q, lbl, TFJ_KUEUE_LABEL_QUEUE, NULL) || (q && !label_value(q))))
		q = NULL;
	*out = q;
	return 0;
}

int tfj_kueue_group_name(char *out, size_t n, const struct tfj_tfjob *job)
{
	const char *uid = job->uid;
	size_t i, len = strlen(job->name);
	int hex = strlen(uid) >= 8 && strlen(uid) <= 40;

	for (i = 0; hex && uid[i]; i++)
		hex = (uid[i] >= '0' && uid[i] <= '9') || (uid[i] >= 'a' && uid[i] <= 'f') ||
		      uid[i] == '-';
	if (n <= TFJ_NAMES_LABEL_MAX)
		return tfj_err_set(TFJ_EINVAL, "kueue: group name buffer too small");
	if (hex && len + 9 <= TFJ_NAMES_LABEL_MAX && tfj_names_is_dns1035(job->name))
		snprintf(out, n, "%s-%.8s", job->name, uid);
	else if (hex && alnum(uid[strlen(uid) - 1]))
		snprintf(out, n, "tfjob-%s", uid);
	else
		snprintf(out, n, "tfjob-%08x", (unsigned)tfj_names_hash(uid));
	return 0;
}

int tfj_kueue_pod(cJSON *meta, const struct tfj_tfjob *job, const char *queue)
{
	char group[TFJ_NAMES_LABEL_MAX + 1], total[16];
	cJSON *labels, *ann;
	int rc;

	if ((rc = tfj_kueue_group_name(group, sizeof(group), job)))
		return rc;
	snprintf(total, sizeof(total), "%d", job->total_replicas);
	if (!(labels = tfj_json_ensure_object(meta, "labels")) || !(ann = tfj_json_ensure_object(meta, "annotations")) ||
	    tfj_json_set_string(labels, TFJ_KUEUE_LABEL_QUEUE, queue) ||
	    tfj_json_set_string(labels, TFJ_KUEUE_LABEL_GROUP, group) ||
	    tfj_json_set_string(ann, TFJ_KUEUE_ANN_TOTAL, total))
		return TFJ_ENOMEM;
	return 0;
}
