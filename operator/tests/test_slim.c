/*
 * test_slim.c - the informer transforms: what a cached pod, service or
 * TFJob keeps, what it loses, and that every reader gets the same answers
 * from the trimmed copy as from the object the API server sent.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <tfj/buf.h>
#include <tfj/err.h>
#include <tfj/json.h>

#include "app/controller.h"
#include "kube/objmeta.h"
#include "kube/objstore.h"
#include "report/tokenreview.h"
#include "tfjob/podspec.h"
#include "tfjob/podstate.h"
#include "app/slim.h"
#include "tfjob/tfjob.h"
#include "tfj_test.h"

/* A worker pod as kube-apiserver returns it, terminated by the agent. */
static const char POD[] =
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{"
	"\"name\":\"mnist-worker-1\",\"namespace\":\"team\",\"uid\":\"pod-uid-1\","
	"\"resourceVersion\":\"4711\",\"generation\":1,"
	"\"creationTimestamp\":\"2026-11-22T07:00:00Z\","
	"\"deletionTimestamp\":\"2026-11-22T07:05:00Z\",\"deletionGracePeriodSeconds\":30,"
	"\"labels\":{\"training.kubeflow.org/job-name\":\"mnist\","
	"\"training.kubeflow.org/replica-type\":\"worker\","
	"\"training.kubeflow.org/replica-index\":\"1\",\"app\":\"mnist\"},"
	"\"annotations\":{\"note\":\"big\",\"kubectl.kubernetes.io/last-applied-configuration\":\"{}\"},"
	"\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
	"\"name\":\"other\",\"uid\":\"cm-uid\"},"
	"{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
	"\"name\":\"mnist\",\"uid\":\"job-uid-1\",\"controller\":true,"
	"\"blockOwnerDeletion\":true}],"
	"\"finalizers\":[\"x/y\",\"kueue.x-k8s.io/managed\"],"
	"\"managedFields\":[{\"manager\":\"tfjob-operator\",\"operation\":\"Update\","
	"\"apiVersion\":\"v1\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{}}}]},"
	"\"spec\":{\"containers\":[{\"name\":\"tensorflow\",\"image\":\"tfjob-runtime:dev\","
	"\"env\":[{\"name\":\"TF_CONFIG\",\"value\":\"{...}\"}]}],\"nodeName\":\"n1\","
	"\"schedulingGates\":[{\"name\":\"other/gate\"},{\"name\":\"kueue.x-k8s.io/admission\"}],"
	"\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}]},"
	"\"status\":{\"phase\":\"Failed\",\"reason\":\"Evicted\",\"message\":\"low memory\","
	"\"hostIP\":\"10.0.0.1\",\"podIP\":\"10.1.0.5\",\"startTime\":\"2026-11-22T07:00:01Z\","
	"\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\","
	"\"lastTransitionTime\":\"2026-11-22T07:04:00Z\"},"
	"{\"type\":\"DisruptionTarget\",\"status\":\"True\",\"reason\":\"TerminationByKubelet\","
	"\"message\":\"evicted\"}],"
	"\"initContainerStatuses\":[{\"name\":\"init\",\"restartCount\":0}],"
	"\"containerStatuses\":[{\"name\":\"tensorflow\",\"restartCount\":2,\"ready\":false,"
	"\"image\":\"tfjob-runtime:dev\",\"imageID\":\"sha256:abc\",\"containerID\":\"c://1\","
	"\"state\":{\"terminated\":{\"exitCode\":137,\"reason\":\"OOMKilled\","
	"\"message\":\"{\\\"reason\\\":\\\"OutOfMemory\\\",\\\"message\\\":\\\"a\\\\nb\\\"}\","
	"\"startedAt\":\"2026-11-22T07:00:02Z\",\"finishedAt\":\"2026-11-22T07:04:00Z\"}},"
	"\"lastState\":{\"terminated\":{\"exitCode\":1,\"reason\":\"Error\"}}},"
	"{\"name\":\"sidecar\",\"restartCount\":1,"
	"\"state\":{\"running\":{\"startedAt\":\"2026-11-22T07:00:03Z\"}},"
	"\"lastState\":{\"waiting\":{\"reason\":\"CrashLoopBackOff\"}}}]}}";

static cJSON *parse(const char *s)
{
	cJSON *j = cJSON_Parse(s);
	TFJ_CHECK(j != NULL);
	return j;
}

static const cJSON *at(const cJSON *o, const char *a, const char *b)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
	return b ? cJSON_GetObjectItemCaseSensitive(x, b) : x;
}

/* A mutable child, for editing fixtures. */
static cJSON *mut(cJSON *o, const char *a)
{
	return cJSON_GetObjectItemCaseSensitive(o, a);
}

static void same_podstate(const struct tfj_podstate *a, const struct tfj_podstate *b)
{
	TFJ_CHECK_STR(a->name, b->name);
	TFJ_CHECK_STR(a->uid, b->uid);
	TFJ_CHECK_INT(a->type, b->type);
	TFJ_CHECK_INT(a->index, b->index);
	TFJ_CHECK_INT(a->phase, b->phase);
	TFJ_CHECK_INT(a->deleting, b->deleting);
	TFJ_CHECK_INT(a->disrupted, b->disrupted);
	TFJ_CHECK_STR(a->why, b->why);
	TFJ_CHECK_INT(a->has_exit, b->has_exit);
	TFJ_CHECK_INT(a->exit_code, b->exit_code);
	TFJ_CHECK_STR(a->exit_reason, b->exit_reason);
	TFJ_CHECK_STR(a->container, b->container);
	TFJ_CHECK_INT(a->restarts, b->restarts);
	TFJ_CHECK_STR(a->agent_reason, b->agent_reason);
	TFJ_CHECK_STR(a->agent_message, b->agent_message);
	TFJ_CHECK_INT(a->running_since_ms, b->running_since_ms);
	TFJ_CHECK_EQ(a->finished_at, b->finished_at);
	TFJ_CHECK_EQ(a->delete_asked, b->delete_asked);
	TFJ_CHECK_INT(a->ended_by_delete, b->ended_by_delete);
	TFJ_CHECK_INT(a->gated, b->gated);
	TFJ_CHECK_INT(a->scheduled, b->scheduled);
	TFJ_CHECK_INT(a->kueue_finalizer, b->kueue_finalizer);
	TFJ_CHECK_INT(a->node_unready, b->node_unready);
	TFJ_CHECK_EQ(a->created, b->created);
	TFJ_CHECK_EQ(a->delete_due, b->delete_due);
	TFJ_CHECK_STR(a->target, b->target);
	TFJ_CHECK_STR(a->node, b->node);
}

static void test_pod_kept_and_dropped(void)
{
	cJSON *full = parse(POD), *slim;
	char *before = cJSON_PrintUnformatted(full), *after;
	const cJSON *m, *cs0, *cs1;

	slim = tfj_slim_pod(full);
	TFJ_CHECK(slim != NULL);
	/* The input is left alone. */
	after = cJSON_PrintUnformatted(full);
	TFJ_CHECK_STR(before, after);
	free(before);
	free(after);

	m = at(slim, "metadata", NULL);
	TFJ_CHECK_STR(cJSON_GetStringValue(at(m, "name", NULL)), "mnist-worker-1");
	TFJ_CHECK_STR(cJSON_GetStringValue(at(m, "namespace", NULL)), "team");
	TFJ_CHECK_STR(cJSON_GetStringValue(at(m, "uid", NULL)), "pod-uid-1");
	TFJ_CHECK_STR(cJSON_GetStringValue(at(m, "resourceVersion", NULL)), "4711");
	TFJ_CHECK(at(m, "deletionTimestamp", NULL) != NULL);
	/* When the pod was made is read (a replacement, planlost.h); its
	 * generation and a cached pod's type are not. */
	TFJ_CHECK(at(m, "creationTimestamp", NULL) != NULL);
	TFJ_CHECK(at(m, "generation", NULL) == NULL);
	TFJ_CHECK(at(slim, "kind", NULL) == NULL);
	TFJ_CHECK(at(slim, "apiVersion", NULL) == NULL);
	/* Only the labels readers look at: the author's are not read. */
	TFJ_CHECK_STR(cJSON_GetStringValue(at(m, "labels", "training.kubeflow.org/job-name")),
		      "mnist");
	TFJ_CHECK_STR(cJSON_GetStringValue(at(m, "labels", "training.kubeflow.org/replica-index")),
		      "1");
	TFJ_CHECK(at(m, "labels", "app") == NULL);
	/* Only the controller reference, cut to what readers look at. */
	TFJ_CHECK_INT(cJSON_GetArraySize(at(m, "ownerReferences", NULL)), 1);
	TFJ_CHECK_STR(cJSON_GetStringValue(at(cJSON_GetArrayItem(at(m, "ownerReferences", NULL), 0),
					      "uid", NULL)), "job-uid-1");
	TFJ_CHECK(at(cJSON_GetArrayItem(at(m, "ownerReferences", NULL), 0), "blockOwnerDeletion",
		     NULL) == NULL);
	/* Never read: gone. */
	TFJ_CHECK(at(m, "managedFields", NULL) == NULL);
	TFJ_CHECK(at(m, "annotations", NULL) == NULL);
	/* Kept: when the deletion was asked (podstate.h, ended_by_delete). */
	TFJ_CHECK_INT((int)cJSON_GetNumberValue(at(m, "deletionGracePeriodSeconds", NULL)), 30);
	/* Kept, in their places: Kueue's finalizer and gate (tfjob/kueue.h), the node. */
	TFJ_CHECK_INT(cJSON_GetArraySize(at(m, "finalizers", NULL)), 2);
	TFJ_CHECK_STR(cJSON_GetStringValue(cJSON_GetArrayItem(at(m, "finalizers", NULL), 1)),
		      "kueue.x-k8s.io/managed");
	TFJ_CHECK_STR(cJSON_GetStringValue(at(slim, "spec", "nodeName")), "n1");
	TFJ_CHECK_STR(cJSON_GetStringValue(at(cJSON_GetArrayItem(at(slim, "spec", "schedulingGates"),
							       1), "name", NULL)),
		      "kueue.x-k8s.io/admission");
	/* The rest of the spec is never read. */
	TFJ_CHECK(at(slim, "spec", "containers") == NULL);
	TFJ_CHECK(at(slim, "spec", "volumes") == NULL);
	TFJ_CHECK(at(slim, "status", "message") == NULL);
	TFJ_CHECK(at(slim, "status", "podIP") == NULL);
	TFJ_CHECK(at(slim, "status", "initContainerStatuses") == NULL);
	TFJ_CHECK_STR(cJSON_GetStringValue(at(slim, "status", "phase")), "Failed");

	/* Conditions: only the types the reader looks at, with type, status
	 * and reason (a Ready that is not True and DisruptionTarget kept). */
	TFJ_CHECK_INT(cJSON_GetArraySize(at(slim, "status", "conditions")), 2);
	TFJ_CHECK_STR(cJSON_GetStringValue(at(cJSON_GetArrayItem(at(slim, "status", "conditions"), 0),
					      "type", NULL)), "Ready");
	TFJ_CHECK_STR(cJSON_GetStringValue(at(cJSON_GetArrayItem(at(slim, "status", "conditions"), 0),
					      "status", NULL)), "False");
	TFJ_CHECK(at(cJSON_GetArrayItem(at(slim, "status", "conditions"), 0), "lastTransitionTime",
		     NULL) == NULL);
	TFJ_CHECK_STR(cJSON_GetStringValue(at(cJSON_GetArrayItem(at(slim, "status", "conditions"), 1),
					      "type", NULL)), "DisruptionTarget");
	TFJ_CHECK_STR(cJSON_GetStringValue(at(cJSON_GetArrayItem(at(slim, "status", "conditions"), 1),
					      "reason", NULL)), "TerminationByKubelet");
	TFJ_CHECK(at(cJSON_GetArrayItem(at(slim, "status", "conditions"), 1), "message", NULL) == NULL);

	/* Container statuses: name, restartCount and the cut-down states. */
	cs0 = cJSON_GetArrayItem(at(slim, "status", "containerStatuses"), 0);
	cs1 = cJSON_GetArrayItem(at(slim, "status", "containerStatuses"), 1);
	TFJ_CHECK(at(cs0, "image", NULL) == NULL && at(cs0, "imageID", NULL) == NULL &&
		  at(cs0, "ready", NULL) == NULL);
	TFJ_CHECK_INT((int)cJSON_GetNumberValue(at(cs0, "restartCount", NULL)), 2);
	TFJ_CHECK(at(at(cs0, "state", "terminated"), "message", NULL) != NULL);
	/* finishedAt stays (which replica failed first, podstate.h); startedAt goes. */
	TFJ_CHECK_STR(cJSON_GetStringValue(at(at(cs0, "state", "terminated"), "finishedAt", NULL)),
		      "2026-11-22T07:04:00Z");
	TFJ_CHECK(at(at(cs0, "state", "terminated"), "startedAt", NULL) == NULL);
	TFJ_CHECK(at(at(cs0, "lastState", "terminated"), "exitCode", NULL) != NULL);
	TFJ_CHECK(at(at(cs1, "state", "running"), "startedAt", NULL) != NULL);
	/* A state with nothing kept (waiting) is no state at all. */
	TFJ_CHECK(at(cs1, "lastState", NULL) == NULL);

	cJSON_Delete(full);
	cJSON_Delete(slim);
}

/*
 * The other readers of a cached pod or Service agree on the full and the
 * slim copy: the cache's key and index key (kube/objstore.h), the report
 * channel's authorization of the pod (tokenreview.c) for the replica the
 * pod is and for another, and the deletion the controller counts.
 */
static void same_other_readers(const cJSON *full, const cJSON *slim)
{
	static const char *const types[] = { "ps", "worker", "chief" };
	struct tfj_objstore *a = NULL, *b = NULL;
	struct tfj_objstore_entry *prev = NULL;
	struct tfj_tokenreview tr;
	struct tfj_reportmsg_ref ref;
	char ka[TFJ_OBJSTORE_KEY_MAX] = "", kb[TFJ_OBJSTORE_KEY_MAX] = "";
	cJSON **la = NULL, **lb = NULL;
	size_t na = 0, nb = 0;
	const char *ns = tfj_objmeta_str(full, "namespace");
	const char *uid = tfj_objmeta_str(full, "uid");
	const cJSON *ref0 = tfj_objmeta_controller_ref(full);
	const cJSON *ju = ref0 ? cJSON_GetObjectItem(ref0, "uid") : NULL;

	TFJ_CHECK_INT(tfj_objstore_key(ka, sizeof(ka), full), tfj_objstore_key(kb, sizeof(kb), slim));
	TFJ_CHECK_STR(ka, kb);
	TFJ_CHECK_INT(tfj_objstore_new(&a, TFJ_LABEL_JOB_NAME), 0);
	TFJ_CHECK_INT(tfj_objstore_new(&b, TFJ_LABEL_JOB_NAME), 0);
	if (*ka) {
		TFJ_CHECK_INT(tfj_objstore_put(&prev, a, ka, full), 0);
		TFJ_CHECK_INT(tfj_objstore_put(&prev, b, kb, slim), 0);
	}
	TFJ_CHECK_INT(tfj_objstore_select(&la, &na, a, ns ? ns : "", "mnist"), 0);
	TFJ_CHECK_INT(tfj_objstore_select(&lb, &nb, b, ns ? ns : "", "mnist"), 0);
	TFJ_CHECK_EQ(na, nb);
	tfj_objstore_free_list(la, na);
	tfj_objstore_free_list(lb, nb);
	tfj_objstore_free(a);
	tfj_objstore_free(b);

	memset(&tr, 0, sizeof(tr));
	tr.authenticated = 1;
	snprintf(tr.ns, sizeof(tr.ns), "%s", ns ? ns : "n");
	snprintf(tr.pod, sizeof(tr.pod), "%s", tfj_objmeta_str(full, "name"));
	snprintf(tr.pod_uid, sizeof(tr.pod_uid), "%s", uid ? uid : "u");
	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		for (int idx = 0; idx < 3; idx++) {
			enum tfj_rtype rt;

			memset(&ref, 0, sizeof(ref));
			snprintf(ref.ns, sizeof(ref.ns), "%s", tr.ns);
			snprintf(ref.pod, sizeof(ref.pod), "%s", tr.pod);
			snprintf(ref.job, sizeof(ref.job), "mnist");
			snprintf(ref.job_uid, sizeof(ref.job_uid), "%s",
				 cJSON_IsString(ju) ? ju->valuestring : "job-uid-1");
			TFJ_CHECK_INT(tfj_tfjob_type_parse(&rt, types[t]), 0);
			ref.type = (int)rt;
			ref.index = idx;
			TFJ_CHECK_INT(tfj_tokenreview_authorize(&tr, full, &ref),
				      tfj_tokenreview_authorize(&tr, slim, &ref));
		}
	}
}

static void check_readers_agree(const char *text)
{
	cJSON *full = parse(text), *slim = tfj_slim_pod(full);
	struct tfj_podstate a, b;
	char ka[256] = "", kb[256] = "";

	TFJ_CHECK(slim != NULL);
	TFJ_CHECK_INT(tfj_podstate_read(&a, full), 0);
	TFJ_CHECK_INT(tfj_podstate_read(&b, slim), 0);
	same_podstate(&a, &b);
	TFJ_CHECK_INT(tfj_controller_owner_key(ka, sizeof(ka), full),
		      tfj_controller_owner_key(kb, sizeof(kb), slim));
	TFJ_CHECK_STR(ka, kb);
	same_other_readers(full, slim);
	cJSON_Delete(full);
	cJSON_Delete(slim);
}

static void test_pod_readers_agree(void)
{
	cJSON *p = parse(POD);
	char *s;

	check_readers_agree(POD);
	{
		/* The fixture carries Kueue's marks: the cached copy tells them too. */
		cJSON *sl = tfj_slim_pod(p);
		struct tfj_podstate st;

		TFJ_CHECK_INT(tfj_podstate_read(&st, sl), 0);
		TFJ_CHECK(st.gated && st.scheduled && st.kueue_finalizer == 2);
		cJSON_Delete(sl);
	}
	{
		/* Its container ended after the deletion was asked (07:04:30):
		 * no completion, on the cached copy too. */
		cJSON *q = parse(POD), *sl;
		struct tfj_podstate st;

		cJSON_ReplaceItemInObject(mut(mut(cJSON_GetArrayItem(mut(mut(q, "status"),
			"containerStatuses"), 0), "state"), "terminated"), "finishedAt",
			cJSON_CreateString("2026-11-22T07:04:40Z"));
		s = cJSON_PrintUnformatted(q);
		check_readers_agree(s);
		sl = tfj_slim_pod(q);
		TFJ_CHECK_INT(tfj_podstate_read(&st, sl), 0);
		TFJ_CHECK_INT(st.ended_by_delete, 1);
		cJSON_Delete(sl);
		free(s);
		cJSON_Delete(q);
	}
	/* The same pod running, not terminating, no disruption. */
	cJSON_DeleteItemFromObject(mut(p, "metadata"), "deletionTimestamp");
	cJSON_DeleteItemFromObject(mut(p, "status"), "reason");
	cJSON_DeleteItemFromObject(mut(p, "status"), "conditions");
	cJSON_ReplaceItemInObject(mut(p, "status"), "phase", cJSON_CreateString("Running"));
	cJSON_ReplaceItemInObject(cJSON_GetArrayItem(mut(mut(p, "status"), "containerStatuses"), 0),
				  "state", parse("{\"running\":{\"startedAt\":\"2026-11-22T07:00:09Z\"}}"));
	s = cJSON_PrintUnformatted(p);
	check_readers_agree(s);
	free(s);
	cJSON_Delete(p);
	/* A pending pod without status fields. */
	check_readers_agree("{\"metadata\":{\"name\":\"x-ps-0\",\"namespace\":\"n\","
			    "\"labels\":{\"training.kubeflow.org/replica-type\":\"ps\","
			    "\"training.kubeflow.org/replica-index\":\"0\"}}}");
}

/*
 * Conditions the reader looks at survive among others, Kueue's included,
 * and one past the reader's cap is seen by neither copy.
 */
static void test_pod_conditions(void)
{
	static const char head[] =
		"{\"metadata\":{\"name\":\"x-worker-0\",\"namespace\":\"n\"},"
		"\"status\":{\"phase\":\"Running\",\"conditions\":[";
	struct tfj_buf b;
	struct tfj_podstate st;
	cJSON *full, *slim;

	tfj_buf_init(&b, 1 << 16);
	TFJ_CHECK_INT(tfj_buf_puts(&b, head), 0);
	TFJ_CHECK_INT(tfj_buf_puts(&b, "{\"type\":\"PodScheduled\",\"status\":\"True\"},"
				   "{\"type\":\"TerminationTarget\",\"status\":\"True\","
				   "\"reason\":\"Preempted\"},{\"type\":\"Ready\",\"status\":\"True\"}]}}"), 0);
	full = parse(b.ptr);
	slim = tfj_slim_pod(full);
	TFJ_CHECK_INT(cJSON_GetArraySize(at(slim, "status", "conditions")), 1);
	TFJ_CHECK_INT(tfj_podstate_read(&st, slim), 0);
	TFJ_CHECK_INT(st.disrupted, 1);
	TFJ_CHECK_STR(st.why, "Preempted");
	check_readers_agree(b.ptr);
	cJSON_Delete(full);
	cJSON_Delete(slim);

	/* 64 others, then a DisruptionTarget the reader never reaches. */
	tfj_buf_clear(&b);
	TFJ_CHECK_INT(tfj_buf_puts(&b, head), 0);
	for (int i = 0; i < TFJ_PODSTATE_MAX_CONDITIONS; i++)
		TFJ_CHECK_INT(tfj_buf_puts(&b, "{\"type\":\"Other\",\"status\":\"True\"},"), 0);
	TFJ_CHECK_INT(tfj_buf_puts(&b, "{\"type\":\"DisruptionTarget\",\"status\":\"True\"}]}}"), 0);
	full = parse(b.ptr);
	slim = tfj_slim_pod(full);
	TFJ_CHECK_INT(cJSON_GetArraySize(at(slim, "status", "conditions")), 0);
	TFJ_CHECK_INT(tfj_podstate_read(&st, full), 0);
	TFJ_CHECK_INT(st.disrupted, 0);
	check_readers_agree(b.ptr);
	cJSON_Delete(full);
	cJSON_Delete(slim);
	tfj_buf_free(&b);
}

/*
 * A Ready condition that is not True is kept, and read as "the node stopped
 * reporting" only when its kubelet did not set it and the pod runs.
 */
static void test_pod_ready(void)
{
	static const struct {
		const char *phase, *ready;
		int running, unready;
	} cases[] = {
		/* The node lifecycle controller's mark: status False, no reason. */
		{ "Running", "{\"type\":\"Ready\",\"status\":\"False\"}", 1, 1 },
		{ "Running", "{\"type\":\"Ready\",\"status\":\"Unknown\",\"reason\":\"X\"}", 1, 1 },
		/* Its own kubelet's: a failing probe or a container that stopped. */
		{ "Running", "{\"type\":\"Ready\",\"status\":\"False\","
		  "\"reason\":\"ContainersNotReady\"}", 1, 0 },
		{ "Running", "{\"type\":\"Ready\",\"status\":\"True\"}", 1, 0 },
		/* Never up: nothing its peers lost. */
		{ "Pending", "{\"type\":\"Ready\",\"status\":\"False\"}", 0, 0 },
		{ "Running", "{\"type\":\"Ready\",\"status\":\"False\"}", 0, 0 },
	};
	struct tfj_podstate st;
	char text[1024];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *full, *slim;
		int n = snprintf(text, sizeof(text),
		    "{\"metadata\":{\"name\":\"x-ps-0\",\"namespace\":\"n\","
		    "\"creationTimestamp\":\"2026-11-22T07:00:00Z\"},\"status\":{\"phase\":\"%s\","
		    "\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"True\"},%s],"
		    "\"containerStatuses\":[{\"name\":\"tensorflow\",\"state\":{%s}}]}}",
		    cases[i].phase, cases[i].ready,
		    cases[i].running ? "\"running\":{\"startedAt\":\"2026-11-22T07:00:02Z\"}" : "");

		TFJ_CHECK(n > 0 && (size_t)n < sizeof(text));
		full = parse(text);
		slim = tfj_slim_pod(full);
		TFJ_CHECK_INT(cJSON_GetArraySize(at(slim, "status", "conditions")),
			      strstr(cases[i].ready, "True") || strstr(cases[i].ready, "Containers") ?
			      0 : 1);
		TFJ_CHECK_INT(tfj_podstate_read(&st, slim), 0);
		TFJ_CHECK_INT(st.node_unready, cases[i].unready);
		TFJ_CHECK_INT(st.disrupted, 0);
		TFJ_CHECK_EQ(st.created, (int64_t)1795330800);
		check_readers_agree(text);
		cJSON_Delete(full);
		cJSON_Delete(slim);
	}
}

static void test_pod_bad_types(void)
{
	cJSON *full = parse("{\"metadata\":{\"name\":\"p\",\"labels\":\"not-an-object\","
			    "\"ownerReferences\":{},\"uid\":7},"
			    "\"status\":{\"phase\":3,\"conditions\":{},\"containerStatuses\":"
			    "[1,{\"name\":\"tensorflow\",\"restartCount\":\"2\"}]}}");
	cJSON *slim = tfj_slim_pod(full);
	struct tfj_podstate st;

	TFJ_CHECK(slim != NULL);
	/* Mistyped fields are left out, not copied. */
	TFJ_CHECK(at(slim, "metadata", "labels") == NULL);
	TFJ_CHECK(at(slim, "metadata", "ownerReferences") == NULL);
	TFJ_CHECK(at(slim, "metadata", "uid") == NULL);
	TFJ_CHECK(at(slim, "status", "phase") == NULL);
	TFJ_CHECK(at(slim, "status", "conditions") == NULL);
	TFJ_CHECK_INT(cJSON_GetArraySize(at(slim, "status", "containerStatuses")), 1);
	TFJ_CHECK_INT(tfj_podstate_read(&st, slim), 0);
	TFJ_CHECK_INT(st.type, -1);
	cJSON_Delete(full);
	cJSON_Delete(slim);

	TFJ_CHECK(tfj_slim_pod(NULL) == NULL);
	full = parse("[1,2]");
	TFJ_CHECK(tfj_slim_pod(full) == NULL);
	TFJ_CHECK(tfj_slim_service(full) == NULL);
	TFJ_CHECK(tfj_slim_tfjob(full) == NULL);
	cJSON_Delete(full);
}

/* obj's member names, comma-separated, in order, into out. */
static const char *keys_of(char *out, size_t len, const cJSON *obj)
{
	const cJSON *m;
	size_t o = 0;

	out[0] = '\0';
	cJSON_ArrayForEach(m, obj) {
		int n = snprintf(out + o, len - o, "%s%s", o ? "," : "", m->string ? m->string : "?");

		if (n < 0 || (size_t)n >= len - o)
			break;
		o += (size_t)n;
	}
	return out;
}

/*
 * A Service of a job as the API server returns it: the cache keeps exactly
 * the metadata its readers look at, and every reader answers the same from
 * either copy.
 */
static void test_service(void)
{
	cJSON *full = parse("{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{"
			    "\"name\":\"mnist-ps-0\",\"namespace\":\"team\",\"uid\":\"svc-1\","
			    "\"resourceVersion\":\"9\",\"creationTimestamp\":\"2026-11-22T07:00:00Z\","
			    "\"labels\":{\"training.kubeflow.org/job-name\":"
			    "\"mnist\",\"training.kubeflow.org/operator-name\":\"tfjob-controller\","
			    "\"training.kubeflow.org/replica-type\":\"ps\","
			    "\"training.kubeflow.org/replica-index\":\"0\"},"
			    "\"ownerReferences\":[{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
			    "\"name\":\"mnist\",\"uid\":\"job-uid-1\",\"controller\":true,"
			    "\"blockOwnerDeletion\":true}],"
			    "\"managedFields\":[{\"manager\":\"m\"}]},"
			    "\"spec\":{\"clusterIP\":\"None\",\"ports\":[{\"port\":2222}]},"
			    "\"status\":{\"loadBalancer\":{}}}");
	cJSON *slim = tfj_slim_service(full);
	struct tfj_podstate a, b;
	char k[512];

	TFJ_CHECK(slim != NULL);
	TFJ_CHECK_STR(keys_of(k, sizeof(k), slim), "metadata");
	TFJ_CHECK_STR(keys_of(k, sizeof(k), at(slim, "metadata", NULL)),
		      "name,namespace,uid,resourceVersion,labels,ownerReferences");
	TFJ_CHECK_STR(keys_of(k, sizeof(k), at(slim, "metadata", "labels")),
		      "training.kubeflow.org/job-name,training.kubeflow.org/replica-type,"
		      "training.kubeflow.org/replica-index");
	TFJ_CHECK_STR(keys_of(k, sizeof(k), cJSON_GetArrayItem(at(slim, "metadata",
								  "ownerReferences"), 0)),
		      "apiVersion,kind,name,uid,controller");
	TFJ_CHECK_INT(tfj_podstate_read_service(&a, full), 0);
	TFJ_CHECK_INT(tfj_podstate_read_service(&b, slim), 0);
	same_podstate(&a, &b);
	same_other_readers(full, slim);
	cJSON_Delete(full);
	cJSON_Delete(slim);
}

/*
 * A pod of the scale run (docs/benchmarks.md), terminated: its cached copy
 * holds exactly what the pod's readers look at, and nothing empty.
 */
static void test_pod_exact(void)
{
	cJSON *full = parse(POD), *slim;
	cJSON *cs = mut(full, "status");
	char k[512];

	/* As the scale run's: no Kueue marks, no deletion, no disruption. */
	cJSON_DeleteItemFromObject(mut(full, "metadata"), "finalizers");
	cJSON_DeleteItemFromObject(mut(full, "metadata"), "deletionTimestamp");
	cJSON_DeleteItemFromObject(mut(full, "metadata"), "deletionGracePeriodSeconds");
	cJSON_DeleteItemFromObject(mut(full, "spec"), "schedulingGates");
	cJSON_DeleteItemFromObject(cs, "reason");
	cJSON_ReplaceItemInObject(cs, "phase", cJSON_CreateString("Succeeded"));
	cJSON_ReplaceItemInObject(cs, "conditions",
				  parse("[{\"type\":\"Initialized\",\"status\":\"True\"},"
					"{\"type\":\"PodScheduled\",\"status\":\"True\"}]"));
	cJSON_ReplaceItemInObject(cs, "containerStatuses",
				  parse("[{\"name\":\"tensorflow\",\"restartCount\":0,"
					"\"state\":{\"terminated\":{\"exitCode\":0,"
					"\"reason\":\"Completed\",\"finishedAt\":\"2026-11-22T07:04:00Z\"}},"
					"\"lastState\":{},\"ready\":false}]"));
	cJSON_AddStringToObject(mut(mut(full, "metadata"), "labels"),
				"training.kubeflow.org/operator-name", "tfjob-controller");
	TFJ_CHECK((slim = tfj_slim_pod(full)) != NULL);
	TFJ_CHECK_STR(keys_of(k, sizeof(k), slim), "metadata,spec,status");
	TFJ_CHECK_STR(keys_of(k, sizeof(k), at(slim, "metadata", NULL)),
		      "name,namespace,uid,resourceVersion,creationTimestamp,labels,ownerReferences");
	TFJ_CHECK_STR(keys_of(k, sizeof(k), at(slim, "metadata", "labels")),
		      "training.kubeflow.org/job-name,training.kubeflow.org/replica-type,"
		      "training.kubeflow.org/replica-index");
	TFJ_CHECK_STR(keys_of(k, sizeof(k), at(slim, "spec", NULL)), "nodeName");
	/* No condition the reader looks at (podstate.c decides which): no list. */
	TFJ_CHECK(!tfj_podstate_reads_condition("Initialized", "True", "") &&
		  !tfj_podstate_reads_condition("PodScheduled", "True", "") &&
		  !tfj_podstate_reads_condition("Ready", "False", "PodCompleted"));
	TFJ_CHECK_STR(keys_of(k, sizeof(k), at(slim, "status", NULL)),
		      "phase,containerStatuses");
	TFJ_CHECK_STR(keys_of(k, sizeof(k), cJSON_GetArrayItem(at(slim, "status",
								  "containerStatuses"), 0)),
		      "name,restartCount,state");
	cJSON_Delete(slim);
	{
		char *text = cJSON_PrintUnformatted(full);

		check_readers_agree(text);
		free(text);
	}
	cJSON_Delete(full);
}

static void test_tfjob(void)
{
	cJSON *full = parse(
		"{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\",\"metadata\":{"
		"\"name\":\"mnist\",\"namespace\":\"team\",\"uid\":\"job-uid-1\","
		"\"resourceVersion\":\"12\",\"generation\":3,"
		"\"annotations\":{\"kubectl.kubernetes.io/last-applied-configuration\":\"{...}\","
		"\"team\":\"a\"},\"labels\":{\"x\":\"y\"},"
		"\"managedFields\":[{\"manager\":\"kubectl\"},{\"manager\":\"tfjob-operator\"}]},"
		"\"spec\":{\"runPolicy\":{\"backoffLimit\":2},\"tfReplicaSpecs\":{\"Worker\":{"
		"\"replicas\":2,\"template\":{\"spec\":{\"containers\":[{\"name\":\"tensorflow\","
		"\"image\":\"i\"}]}}}}},"
		"\"status\":{\"conditions\":[{\"type\":\"Created\",\"status\":\"True\","
		"\"reason\":\"TFJobCreated\",\"message\":\"m\","
		"\"lastUpdateTime\":\"2026-11-22T07:00:00Z\","
		"\"lastTransitionTime\":\"2026-11-22T07:00:00Z\"}],"
		"\"replicaStatuses\":{\"Worker\":{\"active\":2}}}}");
	cJSON *slim = tfj_slim_tfjob(full), *only;
	struct tfj_tfjob a, b;
	char *sa, *sb;

	TFJ_CHECK(slim != NULL);
	TFJ_CHECK(at(slim, "metadata", "managedFields") == NULL);
	TFJ_CHECK(at(at(slim, "metadata", "annotations"), TFJ_SLIM_LAST_APPLIED, NULL) == NULL);
	TFJ_CHECK_STR(cJSON_GetStringValue(at(at(slim, "metadata", "annotations"), "team", NULL)),
		      "a");
	TFJ_CHECK(at(full, "metadata", "managedFields") != NULL); /* input untouched */
	/* Spec and status are what the controller plans from and writes back. */
	sa = cJSON_PrintUnformatted(at(full, "spec", NULL));
	sb = cJSON_PrintUnformatted(at(slim, "spec", NULL));
	TFJ_CHECK_STR(sa, sb);
	free(sa);
	free(sb);
	sa = cJSON_PrintUnformatted(at(full, "status", NULL));
	sb = cJSON_PrintUnformatted(at(slim, "status", NULL));
	TFJ_CHECK_STR(sa, sb);
	free(sa);
	free(sb);
	TFJ_CHECK_INT(tfj_tfjob_from_json(&a, full), 0);
	TFJ_CHECK_INT(tfj_tfjob_from_json(&b, slim), 0);
	TFJ_CHECK_STR(a.resource_version, b.resource_version);
	TFJ_CHECK_INT(a.generation, b.generation);
	TFJ_CHECK_INT(a.spec_valid, b.spec_valid);
	TFJ_CHECK_INT(a.total_replicas, b.total_replicas);
	tfj_tfjob_free(&a);
	tfj_tfjob_free(&b);
	cJSON_Delete(slim);

	/* An annotations object left empty goes too. */
	cJSON_DeleteItemFromObject(mut(mut(full, "metadata"), "annotations"), "team");
	only = tfj_slim_tfjob(full);
	TFJ_CHECK(only != NULL);
	TFJ_CHECK(at(only, "metadata", "annotations") == NULL);
	TFJ_CHECK(at(only, "metadata", "labels") != NULL);
	cJSON_Delete(only);
	cJSON_Delete(full);
}

/*
 * A pod that carries a job's name label and a megabyte of other labels and
 * owner references (issue 27): the cached copy costs what a plain pod does.
 */
static void test_pod_fat_metadata(void)
{
	cJSON *full = parse(POD), *labels, *refs, *slim;
	char key[64], *text = NULL;
	size_t plain;

	slim = tfj_slim_pod(full);
	TFJ_CHECK(slim && (text = cJSON_PrintUnformatted(slim)) != NULL);
	plain = text ? strlen(text) : 0;
	free(text);
	cJSON_Delete(slim);

	labels = mut(mut(full, "metadata"), "labels");
	refs = mut(mut(full, "metadata"), "ownerReferences");
	for (int i = 0; i < 10000; i++) {
		snprintf(key, sizeof(key), "example.com/label-%05d", i);
		cJSON_AddStringToObject(labels, key, "0123456789012345678901234567890123456789"
					"01234567890123456789012");
		cJSON_AddItemToArray(refs, cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"Secret\","
						       "\"name\":\"s\",\"uid\":\"u\"}"));
	}
	/* A second controller reference is refused by the API server; it is
	 * the first that readers take, so the first is kept. */
	cJSON_AddItemToArray(refs, cJSON_Parse("{\"apiVersion\":\"kubeflow.org/v1\","
					       "\"kind\":\"TFJob\",\"name\":\"x\",\"uid\":\"x\","
					       "\"controller\":true}"));
	TFJ_CHECK(tfj_json_text_size(full, SIZE_MAX - 1) > (1u << 20));
	slim = tfj_slim_pod(full);
	TFJ_CHECK(slim && (text = cJSON_PrintUnformatted(slim)) != NULL);
	TFJ_CHECK_INT(text ? strlen(text) : 0, plain);
	free(text);
	cJSON_Delete(slim);
	cJSON_Delete(full);
}

/*
 * A TFJob whose spec is over the size the operator serves: the cache keeps
 * everything else and the spec's size, and the decoder fails it the same
 * way as from the whole object, with InvalidSpec's message.
 */
static void test_tfjob_oversize_spec(void)
{
	cJSON *full = parse("{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\",\"metadata\":{"
			    "\"name\":\"fat\",\"namespace\":\"team\",\"uid\":\"job-uid-2\","
			    "\"resourceVersion\":\"5\"},"
			    "\"spec\":{\"tfReplicaSpecs\":{\"Worker\":{\"replicas\":64,\"template\":{"
			    "\"spec\":{\"containers\":[{\"name\":\"tensorflow\",\"image\":\"i\","
			    "\"env\":[]}]}}}}},\"status\":{\"conditions\":[]}}");
	cJSON *tmpl = mut(mut(mut(mut(full, "spec"), "tfReplicaSpecs"), "Worker"), "template");
	cJSON *env = cJSON_GetArrayItem(mut(mut(tmpl, "spec"), "containers"), 0);
	cJSON *slim, *e;
	struct tfj_tfjob a, b;
	char name[32];
	size_t bytes = 0;

	env = mut(env, "env");
	for (int i = 0; i < 12000; i++) {
		snprintf(name, sizeof(name), "E%d", i);
		e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "name", name);
		cJSON_AddStringToObject(e, "value", "");
		cJSON_AddItemToArray(env, e);
	}
	TFJ_CHECK_INT(tfj_tfjob_spec_oversize(&bytes, full), 1);
	TFJ_CHECK_INT(bytes, TFJ_TFJOB_MAX_SPEC_BYTES + 1);
	slim = tfj_slim_tfjob(full);
	TFJ_CHECK(slim != NULL);
	TFJ_CHECK(at(slim, "spec", NULL) == NULL);
	TFJ_CHECK(cJSON_IsNumber(at(slim, TFJ_TFJOB_OVERSIZE_KEY, NULL)));
	TFJ_CHECK(at(slim, "status", "conditions") != NULL);
	TFJ_CHECK(tfj_json_text_size(slim, 4096) < 4096);
	TFJ_CHECK_INT(tfj_tfjob_from_json(&a, full), 0);
	TFJ_CHECK_INT(tfj_tfjob_from_json(&b, slim), 0);
	TFJ_CHECK_INT(a.spec_valid, 0);
	TFJ_CHECK_INT(b.spec_valid, 0);
	TFJ_CHECK_STR(a.spec_error, b.spec_error);
	TFJ_CHECK(strstr(a.spec_error, "more than 262144 bytes") != NULL);
	TFJ_CHECK_STR(a.uid, "job-uid-2");
	/* The decoded job does not keep the spec it refused. */
	TFJ_CHECK(cJSON_GetObjectItem(a.doc, "spec") == NULL);
	tfj_tfjob_free(&a);
	tfj_tfjob_free(&b);
	cJSON_Delete(slim);
	cJSON_Delete(full);
}

int main(void)
{
	TFJ_RUN(test_pod_kept_and_dropped);
	TFJ_RUN(test_pod_readers_agree);
	TFJ_RUN(test_pod_conditions);
	TFJ_RUN(test_pod_ready);
	TFJ_RUN(test_pod_bad_types);
	TFJ_RUN(test_service);
	TFJ_RUN(test_pod_exact);
	TFJ_RUN(test_tfjob);
	TFJ_RUN(test_pod_fat_metadata);
	TFJ_RUN(test_tfjob_oversize_spec);
	return tfj_test_finish();
}
