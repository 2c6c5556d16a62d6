/*
 * inject.c - wrapping the tensorflow container's command in the agent.
 */
#include <string.h>

#include <tfj/err.h>

#include "tfjob/inject.h"
#include "tfjob/podspec.h"

int tfj_inject_wanted(const struct tfj_tfjob *job, enum tfj_rtype t,
		      const struct tfj_podspec_opts *o)
{
	if (job->agent == TFJ_AGENT_INJECT)
		return 1;
	return job->agent == TFJ_AGENT_DEFAULT && o && o->agent_inject_default &&
	       job->rs[t].has_command;
}

static int add_strings(cJSON *arr, const char *const *v, int n)
{
	cJSON *s;
	int i;

	for (i = 0; i < n; i++) {
		if (!(s = cJSON_CreateString(v[i])))
			return TFJ_ENOMEM;
		cJSON_AddItemToArray(arr, s);
	}
	return 0;
}

/* A volume mount of the agent directory, read-only for the trainer. */
static int add_mount(cJSON *ctr, int read_only)
{
	return tfj_podspec_mount(ctr, TFJ_INJECT_VOLUME, TFJ_INJECT_DIR, read_only);
}

/* What Pod Security "restricted" asks of every container, and a read-only root. */
static int add_security(cJSON *ctr)
{
	static const char *const drop[] = { "ALL" };
	cJSON *sc, *caps, *seccomp;

	if (!(sc = cJSON_AddObjectToObject(ctr, "securityContext")) ||
	    !cJSON_AddFalseToObject(sc, "allowPrivilegeEscalation") ||
	    !cJSON_AddTrueToObject(sc, "runAsNonRoot") ||
	    !cJSON_AddNumberToObject(sc, "runAsUser", 65532) ||
	    !cJSON_AddNumberToObject(sc, "runAsGroup", 65532) ||
	    !cJSON_AddTrueToObject(sc, "readOnlyRootFilesystem") ||
	    !(caps = cJSON_AddObjectToObject(sc, "capabilities")) ||
	    !(seccomp = cJSON_AddObjectToObject(sc, "seccompProfile")) ||
	    !cJSON_AddStringToObject(seccomp, "type", "RuntimeDefault"))
		return TFJ_ENOMEM;
	return add_strings(cJSON_AddArrayToObject(caps, "drop"), drop, 1);
}

/* Small fixed resources: a copy of ~15 MB, done in well under a second. */
static int add_resources(cJSON *ctr)
{
	cJSON *res, *req, *lim;

	if (!(res = cJSON_AddObjectToObject(ctr, "resources")) ||
	    !(req = cJSON_AddObjectToObject(res, "requests")) ||
	    !cJSON_AddStringToObject(req, "cpu", "10m") ||
	    !cJSON_AddStringToObject(req, "memory", "16Mi") ||
	    !(lim = cJSON_AddObjectToObject(res, "limits")) ||
	    !cJSON_AddStringToObject(lim, "cpu", "500m") ||
	    !cJSON_AddStringToObject(lim, "memory", "64Mi"))
		return TFJ_ENOMEM;
	return 0;
}

static int add_init(cJSON *spec, const char *image)
{
	static const char *const cmd[] = { "/usr/bin/tfjob-agent", "--install", TFJ_INJECT_DIR };
	cJSON *inits = tfj_podspec_ensure_array(spec, "initContainers"), *c, *arr;
	int rc;

	if (!inits)
		return TFJ_ENOMEM;
	tfj_podspec_drop_named(inits, TFJ_INJECT_INIT);
	if (!(c = cJSON_CreateObject()))
		return TFJ_ENOMEM;
	/* First, so the user's own init containers may already use the agent's files. */
	cJSON_InsertItemInArray(inits, 0, c);
	if (!cJSON_AddStringToObject(c, "name", TFJ_INJECT_INIT) ||
	    !cJSON_AddStringToObject(c, "image", image) ||
	    !(arr = cJSON_AddArrayToObject(c, "command")))
		return TFJ_ENOMEM;
	if ((rc = add_strings(arr, cmd, 3)) || (rc = add_mount(c, 0)) || (rc = add_security(c)) ||
	    (rc = add_resources(c)))
		return rc;
	return 0;
}

static int add_volume(cJSON *spec)
{
	cJSON *v = tfj_podspec_volume(spec, TFJ_INJECT_VOLUME), *ed;

	return v && (ed = cJSON_AddObjectToObject(v, "emptyDir")) &&
	       cJSON_AddStringToObject(ed, "sizeLimit", TFJ_INJECT_VOLUME_LIMIT) ? 0 : TFJ_ENOMEM;
}

/* Appends every string of src (command, then args) to dst; TFJ_EINVAL on a non-string. */
static int append_all(cJSON *dst, const cJSON *src)
{
	const cJSON *it;
	cJSON *s;

	cJSON_ArrayForEach(it, src) {
		if (!cJSON_IsString(it) || !it->valuestring)
			return tfj_err_set(TFJ_EINVAL, "command and args must be strings");
		if (!(s = cJSON_CreateString(it->valuestring)))
			return TFJ_ENOMEM;
		cJSON_AddItemToArray(dst, s);
	}
	return 0;
}

static int wrap_command(cJSON *ctr, const struct tfj_tfjob *job)
{
	static const char *const head[] = { TFJ_INJECT_DIR "/ld.so", "--library-path",
					    TFJ_INJECT_DIR "/lib", TFJ_INJECT_DIR "/tfjob-agent" };
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(ctr, "command");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(ctr, "args");
	const cJSON *tpath = cJSON_GetObjectItemCaseSensitive(ctr, "terminationMessagePath");
	cJSON *w = cJSON_CreateArray();
	int rc;

	if (!w)
		return TFJ_ENOMEM;
	if ((rc = add_strings(w, head, 4)))
		goto out;
	/* The agent writes where kubelet reads, wherever the template moved it. */
	if (cJSON_IsString(tpath) && tpath->valuestring && *tpath->valuestring) {
		const char *v[] = { "--termination-log", tpath->valuestring };
		if ((rc = add_strings(w, v, 2)))
			goto out;
	}
	if (job->progress_regex) {
		const char *v[] = { "--progress-regex", job->progress_regex };
		if ((rc = add_strings(w, v, 2)))
			goto out;
	}
	{
		const char *v[] = { "--" };
		if ((rc = add_strings(w, v, 1)))
			goto out;
	}
	if ((rc = append_all(w, cmd)) || (args && (rc = append_all(w, args))))
		goto out;
	cJSON_DeleteItemFromObjectCaseSensitive(ctr, "args");
	cJSON_ReplaceItemInObjectCaseSensitive(ctr, "command", w);
	return 0;
out:
	cJSON_Delete(w);
	return rc;
}

int tfj_inject_pod(cJSON *spec, cJSON *ctr, const struct tfj_tfjob *job,
		   const struct tfj_podspec_opts *o)
{
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(ctr, "command");
	int rc;

	if (!o || !o->agent_image || !*o->agent_image)
		return tfj_err_set(TFJ_EINVAL, "the job asks for the agent but the operator has "
				   "no --agent-image");
	if (!cJSON_IsArray(cmd) || cJSON_GetArraySize(cmd) == 0)
		return tfj_err_set(TFJ_EINVAL, "the %s container has no command to wrap in the "
				   "agent", TFJ_PODSPEC_CONTAINER);
	if ((rc = wrap_command(ctr, job)) || (rc = add_mount(ctr, 1)) || (rc = add_volume(spec)) ||
	    (rc = add_init(spec, o->agent_image)))
		return rc;
	return 0;
}
