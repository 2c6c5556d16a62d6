/*
 * test_netpol_cache.c - the NetworkPolicy cache (app/slim.c's
 * tfj_slim_netpol) and the digest it keeps instead of the spec
 * (tfjob/netpol.h): the planner's question, whether the observed policy is
 * current, gets the same answer from the cached copy as from the whole one.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <tfj/err.h>
#include <tfj/json.h>

#include "app/slim.h"
#include "tfjob/netpol.h"
#include "tfjob/tfjob.h"
#include "tfj_test.h"

static const cJSON *at(const cJSON *o, const char *a, const char *b)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
	return b ? cJSON_GetObjectItemCaseSensitive(x, b) : x;
}

/* obj's members, and those of every object in it, in reverse order (another printer's). */
static void reverse_members(cJSON *obj)
{
	cJSON *it, *rev = NULL, *next;

	for (it = obj->child; it; it = next) {
		next = it->next;
		if (cJSON_IsObject(it))
			reverse_members(it);
		else if (cJSON_IsArray(it))
			for (cJSON *e = it->child; e; e = e->next)
				if (cJSON_IsObject(e))
					reverse_members(e);
		it->next = rev;
		rev = it;
	}
	if (!rev)
		return;
	obj->child = rev;
	for (it = rev; it; it = it->next) {
		if (it->next)
			it->next->prev = it;
		else
			rev->prev = it;
	}
}

/*
 * A job's NetworkPolicy as the API server returns it: the slim copy keeps
 * its metadata and the digest of its spec, and no spec; the planner's
 * question (tfj_netpol_current) gets the same answer from the slim copy
 * as from the whole policy, for the policy as made, printed in another
 * member order, edited in several ways, and made for other ports.
 */
static void test_netpol(void)
{
	static const char job_text[] =
		"{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\",\"metadata\":{"
		"\"name\":\"mnist\",\"namespace\":\"team\",\"uid\":\"job-uid-1\"},"
		"\"spec\":{\"tfReplicaSpecs\":{\"Worker\":{\"replicas\":1,\"template\":{"
		"\"spec\":{\"containers\":[{\"name\":\"tensorflow\",\"image\":\"x\"}]}}}}}}";
	static const char job3333_text[] =
		"{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\",\"metadata\":{"
		"\"name\":\"mnist\",\"namespace\":\"team\",\"uid\":\"job-uid-1\"},"
		"\"spec\":{\"tfReplicaSpecs\":{\"Worker\":{\"replicas\":1,\"template\":{"
		"\"spec\":{\"containers\":[{\"name\":\"tensorflow\",\"image\":\"x\","
		"\"ports\":[{\"name\":\"tfjob-port\",\"containerPort\":3333}]}]}}}}}}";
	/* Edits of the policy as made, each one a different spec. */
	static const char *const edits[] = {
		"as made", "reordered", "no ingress", "ports swapped", "port as string",
		"extra rule", "other selector", "no spec", "spec not an object",
	};
	struct tfj_tfjob job, job3333;
	cJSON *np = NULL, *slim, *meta, *labels, *spec, *v;
	const cJSON *m;
	char *big;
	int kept = 0;

	memset(&job, 0, sizeof(job));
	memset(&job3333, 0, sizeof(job3333));
	TFJ_CHECK_INT(tfj_tfjob_decode(&job, job_text, sizeof(job_text) - 1), 0);
	TFJ_CHECK_INT(tfj_tfjob_decode(&job3333, job3333_text, sizeof(job3333_text) - 1), 0);
	TFJ_CHECK_INT(tfj_netpol_body(&np, &job, NULL), 0);
	meta = cJSON_GetObjectItem(np, "metadata");
	cJSON_AddStringToObject(meta, "uid", "np-uid");
	cJSON_AddStringToObject(meta, "resourceVersion", "17");
	cJSON_AddItemToObject(meta, "managedFields", cJSON_Parse("[{\"manager\":\"x\"}]"));
	TFJ_CHECK((slim = tfj_slim_netpol(np)) != NULL);
	TFJ_CHECK(at(slim, "metadata", "managedFields") == NULL);
	TFJ_CHECK_STR(cJSON_GetObjectItem(at(slim, "metadata", NULL), "uid")->valuestring,
		      "np-uid");
	TFJ_CHECK(at(slim, "metadata", "ownerReferences") != NULL);
	/* Exactly the metadata and the digest: no spec, no type. */
	cJSON_ArrayForEach(m, slim)
		kept |= !strcmp(m->string, "apiVersion") ? 1 : !strcmp(m->string, "kind") ? 2
		      : !strcmp(m->string, "metadata") ? 4
		      : !strcmp(m->string, TFJ_NETPOL_DIGEST_KEY) ? 8 : 16;
	TFJ_CHECK_INT(kept, 12);
	v = cJSON_GetObjectItem(slim, TFJ_NETPOL_DIGEST_KEY);
	TFJ_CHECK(cJSON_IsString(v) && strlen(v->valuestring) == 7 + 64 &&
		  !strncmp(v->valuestring, "sha256:", 7));
	TFJ_CHECK_INT(tfj_netpol_current(slim, &job, NULL), 1);
	TFJ_CHECK_INT(tfj_netpol_current(slim, &job3333, NULL), 0);
	cJSON_Delete(slim);

	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		cJSON *e = cJSON_Duplicate(np, 1), *rule, *ports;

		TFJ_CHECK(e != NULL);
		spec = cJSON_GetObjectItem(e, "spec");
		rule = cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "ingress"), 1);
		ports = cJSON_GetObjectItem(rule, "ports");
		switch (i) {
		case 1:
			reverse_members(e);
			break;
		case 2:
			cJSON_DeleteItemFromObject(spec, "ingress");
			break;
		case 3:
			cJSON_AddItemToArray(ports, cJSON_DetachItemFromArray(ports, 0));
			break;
		case 4:
			rule = cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "ingress"), 0);
			ports = cJSON_GetArrayItem(cJSON_GetObjectItem(rule, "ports"), 0);
			cJSON_ReplaceItemInObject(ports, "port", cJSON_CreateString("2222"));
			break;
		case 5:
			cJSON_AddItemToArray(cJSON_GetObjectItem(spec, "ingress"), cJSON_CreateObject());
			break;
		case 6:
			labels = cJSON_GetObjectItem(cJSON_GetObjectItem(spec, "podSelector"),
						     "matchLabels");
			cJSON_ReplaceItemInObject(labels, "training.kubeflow.org/job-name",
						  cJSON_CreateString("other"));
			break;
		case 7:
			cJSON_DeleteItemFromObject(e, "spec");
			break;
		case 8:
			cJSON_ReplaceItemInObject(e, "spec", cJSON_CreateString("x"));
			break;
		}
		TFJ_CHECK((slim = tfj_slim_netpol(e)) != NULL);
		TFJ_CHECK(cJSON_GetObjectItem(slim, "spec") == NULL);
		/* Current only as made (in whatever member order), for either reader. */
		TFJ_CHECK_INT(tfj_netpol_current(e, &job, NULL), i <= 1);
		TFJ_CHECK_INT(tfj_netpol_current(slim, &job, NULL), i <= 1);
		TFJ_CHECK_INT(tfj_netpol_current(e, &job3333, NULL), 0);
		TFJ_CHECK_INT(tfj_netpol_current(slim, &job3333, NULL), 0);
		if (tfj_netpol_current(slim, &job, NULL) != (i <= 1))
			fprintf(stderr, "# edit '%s' read wrongly\n", edits[i]);
		cJSON_Delete(slim);
		cJSON_Delete(e);
	}

	/* A spec over the cap is not digested: the planner then replaces it. */
	TFJ_CHECK((big = malloc(TFJ_SLIM_NETPOL_SPEC_MAX + 1)) != NULL);
	memset(big, 'a', TFJ_SLIM_NETPOL_SPEC_MAX);
	big[TFJ_SLIM_NETPOL_SPEC_MAX] = '\0';
	labels = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(np, "spec"),
							 "podSelector"), "matchLabels");
	cJSON_AddStringToObject(labels, "pad", big);
	free(big);
	TFJ_CHECK((slim = tfj_slim_netpol(np)) != NULL);
	TFJ_CHECK(cJSON_GetObjectItem(slim, "spec") == NULL);
	TFJ_CHECK(cJSON_GetObjectItem(slim, TFJ_NETPOL_DIGEST_KEY) == NULL);
	TFJ_CHECK(at(slim, "metadata", "name") != NULL);
	TFJ_CHECK_INT(tfj_netpol_current(slim, &job, NULL), 0);
	cJSON_Delete(slim);
	cJSON_Delete(np);
	tfj_tfjob_free(&job);
	tfj_tfjob_free(&job3333);
}

/*
 * The digest: the same for the same spec in any member order, different
 * when a value, an array's order or a member changes, and refused for what
 * is not an object, a text over the cap or a buffer too small.
 */
static void test_netpol_digest(void)
{
	cJSON *a = cJSON_Parse("{\"b\":[1,{\"y\":2,\"x\":\"s\"}],\"a\":{\"q\":true,\"p\":null}}");
	cJSON *b = cJSON_Parse("{\"a\":{\"p\":null,\"q\":true},\"b\":[1,{\"x\":\"s\",\"y\":2}]}");
	cJSON *c = cJSON_Parse("{\"a\":{\"p\":null,\"q\":true},\"b\":[{\"x\":\"s\",\"y\":2},1]}");
	cJSON *d = cJSON_Parse("{\"a\":{\"p\":null,\"q\":false},\"b\":[1,{\"x\":\"s\",\"y\":2}]}");
	cJSON *s = cJSON_CreateString("x");
	char da[TFJ_NETPOL_DIGEST_MAX], db[TFJ_NETPOL_DIGEST_MAX], dc[TFJ_NETPOL_DIGEST_MAX];
	char dd[TFJ_NETPOL_DIGEST_MAX], small[16];
	char *text = NULL;

	TFJ_CHECK(a && b && c && d && s);
	TFJ_CHECK_INT(tfj_netpol_spec_digest(da, sizeof(da), a, SIZE_MAX), 0);
	TFJ_CHECK_INT(tfj_netpol_spec_digest(db, sizeof(db), b, SIZE_MAX), 0);
	TFJ_CHECK_INT(tfj_netpol_spec_digest(dc, sizeof(dc), c, SIZE_MAX), 0);
	TFJ_CHECK_INT(tfj_netpol_spec_digest(dd, sizeof(dd), d, SIZE_MAX), 0);
	TFJ_CHECK_STR(da, db);
	TFJ_CHECK(strcmp(da, dc) != 0);
	TFJ_CHECK(strcmp(da, dd) != 0);
	/* The input is left as it was: the members are sorted in a copy. */
	TFJ_CHECK(tfj_json_print(&text, a) == 0 && text && text[2] == 'b');
	free(text);
	TFJ_CHECK_INT(tfj_netpol_spec_digest(dd, sizeof(dd), s, SIZE_MAX), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_netpol_spec_digest(dd, sizeof(dd), a, 10), TFJ_ETOOBIG);
	TFJ_CHECK_INT(tfj_netpol_spec_digest(small, sizeof(small), a, SIZE_MAX), TFJ_ETOOBIG);
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(c);
	cJSON_Delete(d);
	cJSON_Delete(s);
}

int main(void)
{
	TFJ_RUN(test_netpol);
	TFJ_RUN(test_netpol_digest);
	return tfj_test_finish();
}
