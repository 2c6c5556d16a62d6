/*
 * fuzz_podstate.c - the planner's reading of a pod (tfjob/podstate.h) on
 * arbitrary input. Pod statuses are the API server's, but a container's
 * termination message is whatever the container wrote, so the first byte
 * picks the mode:
 *   even: the input is the whole pod JSON;
 *   odd:  the input is the termination message of a completed tensorflow
 *         container in a fixed, valid pod.
 *
 * Properties: no crash; every string field is terminated within its
 * buffer; a step read from a message is within 0..2^53-1; loss and
 * accuracy, when read, are finite.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <tfj/json.h>

#include "tfjob/podstate.h"

#define IN_MAX (64 * 1024)

static void check(const struct tfj_podstate *st)
{
	if (!memchr(st->why, '\0', sizeof(st->why)) ||
	    !memchr(st->exit_reason, '\0', sizeof(st->exit_reason)) ||
	    !memchr(st->container, '\0', sizeof(st->container)) ||
	    !memchr(st->agent_reason, '\0', sizeof(st->agent_reason)) ||
	    !memchr(st->agent_message, '\0', sizeof(st->agent_message)))
		abort();
	if (st->has_term_step && (st->term_step < 0 || st->term_step > TFJ_JSON_INT_MAX))
		abort();
	if ((st->has_term_loss && !isfinite(st->term_loss)) ||
	    (st->has_term_accuracy && !isfinite(st->term_accuracy)))
		abort();
}

static void read_pod(const cJSON *pod)
{
	struct tfj_podstate st;

	memset(&st, 0, sizeof(st));
	if (tfj_podstate_read(&st, pod) == 0)
		check(&st);
}

/* A completed worker pod whose tensorflow container left `msg`. */
static cJSON *pod_with_message(const char *msg)
{
	cJSON *pod = cJSON_CreateObject(), *meta, *labels, *st, *list, *cs, *state, *t;

	if (!pod || !(meta = cJSON_AddObjectToObject(pod, "metadata")) ||
	    !cJSON_AddStringToObject(meta, "name", "mnist-worker-0") ||
	    !cJSON_AddStringToObject(meta, "uid", "uid-1") ||
	    !(labels = cJSON_AddObjectToObject(meta, "labels")) ||
	    !cJSON_AddStringToObject(labels, "training.kubeflow.org/replica-type", "worker") ||
	    !cJSON_AddStringToObject(labels, "training.kubeflow.org/replica-index", "0") ||
	    !(st = cJSON_AddObjectToObject(pod, "status")) ||
	    !cJSON_AddStringToObject(st, "phase", "Succeeded") ||
	    !(list = cJSON_AddArrayToObject(st, "containerStatuses")) ||
	    !(cs = cJSON_CreateObject()))
		goto fail;
	cJSON_AddItemToArray(list, cs);
	if (!cJSON_AddStringToObject(cs, "name", "tensorflow") ||
	    !(state = cJSON_AddObjectToObject(cs, "state")) ||
	    !(t = cJSON_AddObjectToObject(state, "terminated")) ||
	    !cJSON_AddNumberToObject(t, "exitCode", 0) ||
	    !cJSON_AddStringToObject(t, "finishedAt", "2026-11-25T15:43:27Z") ||
	    !cJSON_AddStringToObject(t, "message", msg))
		goto fail;
	return pod;
fail:
	cJSON_Delete(pod);
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *doc = NULL;
	char *msg;

	if (size < 1 || size > IN_MAX)
		return 0;
	if (!(data[0] & 1)) {
		if (tfj_json_parse(&doc, (const char *)data + 1, size - 1, IN_MAX) == 0)
			read_pod(doc);
		cJSON_Delete(doc);
		return 0;
	}
	if (!(msg = malloc(size)))
		return 0;
	memcpy(msg, data + 1, size - 1);
	msg[size - 1] = '\0';
	if ((doc = pod_with_message(msg)))
		read_pod(doc);
	cJSON_Delete(doc);
	free(msg);
	return 0;
}
