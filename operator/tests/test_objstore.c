/*
 * test_objstore.c - the informer's object cache on its own, no network:
 * keys, put/get/delete, the label index, the relist prune, that every copy
 * handed out is the caller's, and readers running beside the writer.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

#include "kube/objstore.h"
#include "tfj_test.h"

#define JOB_LABEL "training.kubeflow.org/job-name"

/* A pod-like object; ns and job may be NULL. */
static cJSON *obj(const char *ns, const char *name, const char *job, const char *rv)
{
	cJSON *o = cJSON_CreateObject(), *m = cJSON_AddObjectToObject(o, "metadata");

	cJSON_AddStringToObject(m, "name", name);
	if (ns)
		cJSON_AddStringToObject(m, "namespace", ns);
	if (rv)
		cJSON_AddStringToObject(m, "resourceVersion", rv);
	if (job)
		cJSON_AddStringToObject(cJSON_AddObjectToObject(m, "labels"), JOB_LABEL, job);
	return o;
}

static const char *name_of(const cJSON *o)
{
	return cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"),
							"name"));
}

static const char *rv_of(const cJSON *o)
{
	return cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"),
							"resourceVersion"));
}

/* Puts obj (freed afterwards) under its own key; the replaced entry is freed. */
static int put(struct tfj_objstore *s, cJSON *o)
{
	struct tfj_objstore_entry *prev = NULL;
	char key[TFJ_OBJSTORE_KEY_MAX];
	int rc = tfj_objstore_key(key, sizeof(key), o);

	if (rc == 0)
		rc = tfj_objstore_put(&prev, s, key, o);
	tfj_objstore_entry_free(prev);
	cJSON_Delete(o);
	return rc;
}

/* 1 if list holds exactly the names in want (in any order). */
static int same_names(cJSON **list, size_t n, const char *const *want, size_t nwant)
{
	if (n != nwant)
		return 0;
	for (size_t i = 0; i < nwant; i++) {
		int found = 0;
		for (size_t j = 0; j < n && !found; j++)
			found = name_of(list[j]) && strcmp(name_of(list[j]), want[i]) == 0;
		if (!found)
			return 0;
	}
	return 1;
}

static void test_key(void)
{
	char key[TFJ_OBJSTORE_KEY_MAX], small[8], longname[600];
	cJSON *o;

	o = obj("ns", "a", NULL, NULL);
	TFJ_CHECK_INT(tfj_objstore_key(key, sizeof(key), o), 0);
	TFJ_CHECK_STR(key, "ns/a");
	TFJ_CHECK_INT(tfj_objstore_key(small, sizeof(small), o), 0);
	TFJ_CHECK_INT(tfj_objstore_key(small, 4, o), TFJ_EINVAL);
	cJSON_Delete(o);
	o = obj(NULL, "node-1", NULL, NULL);
	TFJ_CHECK_INT(tfj_objstore_key(key, sizeof(key), o), 0);
	TFJ_CHECK_STR(key, "node-1");
	cJSON_Delete(o);
	o = obj("ns", "", NULL, NULL);
	TFJ_CHECK_INT(tfj_objstore_key(key, sizeof(key), o), TFJ_EINVAL);
	cJSON_Delete(o);
	o = cJSON_Parse("{\"metadata\":{\"namespace\":\"ns\"}}");
	TFJ_CHECK_INT(tfj_objstore_key(key, sizeof(key), o), TFJ_EINVAL);
	cJSON_Delete(o);
	o = cJSON_Parse("{\"metadata\":{\"name\":7}}");
	TFJ_CHECK_INT(tfj_objstore_key(key, sizeof(key), o), TFJ_EINVAL);
	cJSON_Delete(o);
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	o = obj("ns", longname, NULL, NULL);
	TFJ_CHECK_INT(tfj_objstore_key(key, sizeof(key), o), TFJ_EINVAL);
	cJSON_Delete(o);
}

static void test_put_get_delete(void)
{
	struct tfj_objstore *s = NULL;
	struct tfj_objstore_entry *prev = (void *)1;
	cJSON *o, *a = NULL, *b = NULL, *old = NULL;

	TFJ_CHECK_INT(tfj_objstore_new(&s, NULL), 0);
	if (!s)
		return;
	TFJ_CHECK_INT(tfj_objstore_size(s), 0);
	TFJ_CHECK_INT(tfj_objstore_get(&a, s, "ns", "x"), TFJ_ENOTFOUND);
	TFJ_CHECK(a == NULL);

	/* put copies: changing the caller's tree afterwards changes nothing cached. */
	o = obj("ns", "x", NULL, "1");
	TFJ_CHECK_INT(tfj_objstore_put(&prev, s, "ns/x", o), 0);
	TFJ_CHECK(prev == NULL);
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(o, "metadata"), "resourceVersion",
				  cJSON_CreateString("changed"));
	cJSON_Delete(o);
	TFJ_CHECK_INT(tfj_objstore_size(s), 1);

	/* get hands out independent copies, each the caller's. */
	TFJ_CHECK_INT(tfj_objstore_get(&a, s, "ns", "x"), 0);
	TFJ_CHECK_INT(tfj_objstore_get(&b, s, "ns", "x"), 0);
	TFJ_CHECK(a && b && a != b);
	TFJ_CHECK_STR(rv_of(a), "1");
	cJSON_DeleteItemFromObject(a, "metadata");
	cJSON_Delete(a);
	TFJ_CHECK_STR(rv_of(b), "1");
	cJSON_Delete(b);
	TFJ_CHECK_INT(tfj_objstore_get(&a, s, "ns", "x"), 0);
	TFJ_CHECK_STR(rv_of(a), "1");
	cJSON_Delete(a);

	/* Replacing hands back the previous entry, still readable after the put. */
	o = obj("ns", "x", NULL, "2");
	TFJ_CHECK_INT(tfj_objstore_put(&prev, s, "ns/x", o), 0);
	cJSON_Delete(o);
	TFJ_CHECK(prev != NULL);
	if (prev) {
		TFJ_CHECK_STR(tfj_objstore_entry_rv(prev), "1");
		TFJ_CHECK_INT(tfj_objstore_entry_parse(&old, prev), 0);
		TFJ_CHECK_STR(rv_of(old), "1");
		cJSON_Delete(old);
	}
	tfj_objstore_entry_free(prev);
	TFJ_CHECK_INT(tfj_objstore_size(s), 1);
	TFJ_CHECK_INT(tfj_objstore_get(&a, s, "ns", "x"), 0);
	TFJ_CHECK_STR(rv_of(a), "2");
	cJSON_Delete(a);

	/* No resourceVersion: the entry says "". */
	o = obj("ns", "x", NULL, NULL);
	TFJ_CHECK_INT(tfj_objstore_put(&prev, s, "ns/x", o), 0);
	cJSON_Delete(o);
	tfj_objstore_entry_free(prev);
	o = obj("ns", "x", NULL, "3");
	TFJ_CHECK_INT(tfj_objstore_put(&prev, s, "ns/x", o), 0);
	cJSON_Delete(o);
	TFJ_CHECK(prev && strcmp(tfj_objstore_entry_rv(prev), "") == 0);
	tfj_objstore_entry_free(prev);

	/* Cluster-scoped objects: ns NULL and "" both mean none. */
	TFJ_CHECK_INT(put(s, obj(NULL, "node", NULL, "5")), 0);
	TFJ_CHECK_INT(tfj_objstore_get(&a, s, NULL, "node"), 0);
	TFJ_CHECK_STR(name_of(a), "node");
	cJSON_Delete(a);
	TFJ_CHECK_INT(tfj_objstore_get(&a, s, "", "node"), 0);
	cJSON_Delete(a);
	TFJ_CHECK_INT(tfj_objstore_size(s), 2);

	/* delete hands back the removed entry once. */
	TFJ_CHECK_INT(tfj_objstore_delete(&prev, s, "ns/x"), 0);
	TFJ_CHECK(prev && strcmp(tfj_objstore_entry_rv(prev), "3") == 0);
	tfj_objstore_entry_free(prev);
	TFJ_CHECK_INT(tfj_objstore_delete(&prev, s, "ns/x"), 0);
	TFJ_CHECK(prev == NULL);
	TFJ_CHECK_INT(tfj_objstore_get(&a, s, "ns", "x"), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(tfj_objstore_size(s), 1);

	/* A key over the cap is refused, not truncated into another key. */
	{
		char longname[600];
		memset(longname, 'n', sizeof(longname) - 1);
		longname[sizeof(longname) - 1] = '\0';
		TFJ_CHECK_INT(tfj_objstore_get(&a, s, "ns", longname), TFJ_EINVAL);
		TFJ_CHECK(a == NULL);
	}
	/* Without an index label there is nothing to select by. */
	{
		cJSON **list = (void *)1;
		size_t n = 9;
		TFJ_CHECK_INT(tfj_objstore_select(&list, &n, s, "ns", "j"), TFJ_ESTATE);
		TFJ_CHECK(list == NULL && n == 0);
	}
	tfj_objstore_free(s);
}

static void test_index(void)
{
	static const char *const a_j1[] = { "w0", "w1" };
	static const char *const a_j1_after[] = { "w1", "ps0" };
	struct tfj_objstore *s = NULL;
	struct tfj_objstore_entry *prev;
	cJSON **list = NULL;
	size_t n = 0;
	char longjob[600];

	TFJ_CHECK_INT(tfj_objstore_new(&s, JOB_LABEL), 0);
	if (!s)
		return;
	TFJ_CHECK_INT(put(s, obj("a", "w0", "j1", "1")), 0);
	TFJ_CHECK_INT(put(s, obj("a", "w1", "j1", "1")), 0);
	TFJ_CHECK_INT(put(s, obj("b", "w0", "j1", "1")), 0);  /* same job, other namespace */
	TFJ_CHECK_INT(put(s, obj("a", "j2-w0", "j2", "1")), 0);
	TFJ_CHECK_INT(put(s, obj("a", "loose", NULL, "1")), 0);
	TFJ_CHECK_INT(tfj_objstore_size(s), 5);

	TFJ_CHECK_INT(tfj_objstore_select(&list, &n, s, "a", "j1"), 0);
	TFJ_CHECK(same_names(list, n, a_j1, 2));
	/* The copies are the caller's: wrecking them leaves the cache intact. */
	for (size_t i = 0; i < n; i++)
		cJSON_DeleteItemFromObject(list[i], "metadata");
	tfj_objstore_free_list(list, n);
	TFJ_CHECK_INT(tfj_objstore_select(&list, &n, s, "a", "j1"), 0);
	TFJ_CHECK(same_names(list, n, a_j1, 2));
	tfj_objstore_free_list(list, n);
	TFJ_CHECK_INT(tfj_objstore_select(&list, &n, s, "b", "j1"), 0);
	TFJ_CHECK_INT(n, 1);
	tfj_objstore_free_list(list, n);
	TFJ_CHECK_INT(tfj_objstore_select(&list, &n, s, "a", "nope"), 0);
	TFJ_CHECK(list == NULL && n == 0);

	/* Relabelling moves an object between index sets; deleting drops it. */
	TFJ_CHECK_INT(put(s, obj("a", "w0", "j2", "2")), 0);
	TFJ_CHECK_INT(put(s, obj("a", "ps0", "j1", "1")), 0);
	TFJ_CHECK_INT(tfj_objstore_select(&list, &n, s, "a", "j1"), 0);
	TFJ_CHECK(same_names(list, n, a_j1_after, 2));
	tfj_objstore_free_list(list, n);
	TFJ_CHECK_INT(tfj_objstore_select(&list, &n, s, "a", "j2"), 0);
	TFJ_CHECK_INT(n, 2);
	tfj_objstore_free_list(list, n);
	TFJ_CHECK_INT(tfj_objstore_delete(&prev, s, "a/j2-w0"), 0);
	tfj_objstore_entry_free(prev);
	TFJ_CHECK_INT(tfj_objstore_delete(&prev, s, "a/w0"), 0);
	tfj_objstore_entry_free(prev);
	TFJ_CHECK_INT(tfj_objstore_select(&list, &n, s, "a", "j2"), 0);
	TFJ_CHECK(list == NULL && n == 0);
	/* Recreated under another label: not found under the old one. */
	TFJ_CHECK_INT(put(s, obj("a", "w0", "j3", "3")), 0);
	TFJ_CHECK_INT(tfj_objstore_select(&list, &n, s, "a", "j2"), 0);
	TFJ_CHECK(list == NULL && n == 0);
	TFJ_CHECK_INT(tfj_objstore_delete(&prev, s, "a/w0"), 0);
	tfj_objstore_entry_free(prev);
	/* Dropping the label drops it from the index but keeps it cached. */
	TFJ_CHECK_INT(put(s, obj("a", "ps0", NULL, "2")), 0);
	TFJ_CHECK_INT(tfj_objstore_select(&list, &n, s, "a", "j1"), 0);
	TFJ_CHECK_INT(n, 1);
	TFJ_CHECK_STR(n ? name_of(list[0]) : NULL, "w1");
	tfj_objstore_free_list(list, n);

	/* A label value too long for an index key: cached, only not indexed. */
	memset(longjob, 'j', sizeof(longjob) - 1);
	longjob[sizeof(longjob) - 1] = '\0';
	TFJ_CHECK_INT(put(s, obj("a", "odd", longjob, "1")), 0);
	TFJ_CHECK_INT(tfj_objstore_select(&list, &n, s, "a", longjob), TFJ_EINVAL);
	TFJ_CHECK(list == NULL && n == 0);

	TFJ_CHECK_INT(tfj_objstore_list(&list, &n, s), 0);
	TFJ_CHECK_INT(n, 5); /* a/w1, b/w0, a/loose, a/ps0, a/odd */
	tfj_objstore_free_list(list, n);
	tfj_objstore_free(s);
}

struct gone_log {
	struct tfj_objstore *s;
	char keys[8][64];
	char rvs[8][16];
	int n, reads_ok;
};

static void on_gone(void *ud, const char *key, const struct tfj_objstore_entry *e)
{
	struct gone_log *g = ud;
	cJSON *parsed = NULL, *other = NULL;

	if (g->n >= 8)
		return;
	snprintf(g->keys[g->n], sizeof(g->keys[0]), "%s", key);
	if (tfj_objstore_entry_parse(&parsed, e) == 0)
		snprintf(g->rvs[g->n], sizeof(g->rvs[0]), "%s", rv_of(parsed));
	cJSON_Delete(parsed);
	/* The store is unlocked during the call: a read neither deadlocks
	 * nor still finds the removed object. */
	if (tfj_objstore_get(&other, g->s, "a", "keep") == 0 &&
	    tfj_objstore_get(&parsed, g->s, "a", strchr(key, '/') + 1) == TFJ_ENOTFOUND)
		g->reads_ok++;
	cJSON_Delete(parsed);
	cJSON_Delete(other);
	g->n++;
}

static void test_prune(void)
{
	struct tfj_strmap keep = TFJ_STRMAP_INIT;
	struct tfj_objstore *s = NULL;
	struct gone_log g = { 0 };
	cJSON **list = NULL, *got = NULL;
	size_t n = 0;

	TFJ_CHECK_INT(tfj_objstore_new(&s, JOB_LABEL), 0);
	if (!s)
		return;
	g.s = s;
	TFJ_CHECK_INT(put(s, obj("a", "keep", "j", "1")), 0);
	TFJ_CHECK_INT(put(s, obj("a", "gone1", "j", "7")), 0);
	TFJ_CHECK_INT(put(s, obj("a", "gone2", NULL, "8")), 0);
	TFJ_CHECK_INT(tfj_strmap_put(&keep, "a/keep", NULL, NULL), 0);
	TFJ_CHECK_INT(tfj_strmap_put(&keep, "a/never-cached", NULL, NULL), 0);

	TFJ_CHECK_INT(tfj_objstore_prune(s, &keep, on_gone, &g), 0);
	TFJ_CHECK_INT(g.n, 2);
	TFJ_CHECK_INT(g.reads_ok, 2);
	for (int i = 0; i < g.n; i++) {
		if (strcmp(g.keys[i], "a/gone1") == 0)
			TFJ_CHECK_STR(g.rvs[i], "7");
		else if (strcmp(g.keys[i], "a/gone2") == 0)
			TFJ_CHECK_STR(g.rvs[i], "8");
		else
			tfj_test_fail(__FILE__, __LINE__, "unexpected prune of %s", g.keys[i]);
	}
	TFJ_CHECK_INT(tfj_objstore_size(s), 1);
	TFJ_CHECK_INT(tfj_objstore_get(&got, s, "a", "keep"), 0);
	cJSON_Delete(got);
	TFJ_CHECK_INT(tfj_objstore_select(&list, &n, s, "a", "j"), 0);
	TFJ_CHECK_INT(n, 1);
	tfj_objstore_free_list(list, n);

	/* Nothing left to drop: no calls. An empty keep set without a callback
	 * empties the store. */
	g.n = 0;
	TFJ_CHECK_INT(tfj_objstore_prune(s, &keep, on_gone, &g), 0);
	TFJ_CHECK_INT(g.n, 0);
	tfj_strmap_free(&keep, NULL);
	TFJ_CHECK_INT(tfj_objstore_prune(s, &keep, NULL, NULL), 0);
	TFJ_CHECK_INT(tfj_objstore_size(s), 0);
	TFJ_CHECK_INT(tfj_objstore_select(&list, &n, s, "a", "j"), 0);
	TFJ_CHECK(list == NULL && n == 0);
	tfj_objstore_free(s);
}

static void test_free_null(void)
{
	struct tfj_objstore *s = NULL;
	cJSON **l = NULL;
	size_t n = 1;

	tfj_objstore_free(NULL);
	tfj_objstore_entry_free(NULL);
	tfj_objstore_free_list(NULL, 0);
	/* What an empty store hands out is freed the same way. */
	TFJ_CHECK_INT(tfj_objstore_new(&s, NULL), 0);
	TFJ_CHECK_INT(tfj_objstore_list(&l, &n, s), 0);
	TFJ_CHECK_INT(n, 0);
	tfj_objstore_free_list(l, n);
	tfj_objstore_free(s);
}

/* ---- one writer, concurrent readers ---- */

#define ROUNDS 2000

struct race {
	struct tfj_objstore *s;
	atomic_int done;
	atomic_int bad;
};

static void *reader(void *arg)
{
	struct race *r = arg;

	while (!atomic_load(&r->done)) {
		cJSON **list = NULL, *got = NULL;
		size_t n = 0;

		/* Whatever a reader sees is a whole object with the right labels. */
		if (tfj_objstore_get(&got, r->s, "r", "p0") == 0 &&
		    (!name_of(got) || strcmp(name_of(got), "p0") != 0))
			atomic_fetch_add(&r->bad, 1);
		cJSON_Delete(got);
		if (tfj_objstore_select(&list, &n, r->s, "r", "j") != 0)
			atomic_fetch_add(&r->bad, 1);
		for (size_t i = 0; i < n; i++)
			if (!name_of(list[i]) || !rv_of(list[i]))
				atomic_fetch_add(&r->bad, 1);
		tfj_objstore_free_list(list, n);
	}
	return NULL;
}

static void test_readers_beside_writer(void)
{
	struct race r = { 0 };
	pthread_t t[2];
	char name[32], rv[32];

	TFJ_CHECK_INT(tfj_objstore_new(&r.s, JOB_LABEL), 0);
	if (!r.s)
		return;
	for (int i = 0; i < 2; i++)
		TFJ_CHECK_INT(pthread_create(&t[i], NULL, reader, &r), 0);
	for (int i = 0; i < ROUNDS; i++) {
		struct tfj_objstore_entry *prev = NULL;

		snprintf(name, sizeof(name), "p%d", i % 7);
		snprintf(rv, sizeof(rv), "%d", i);
		if (i % 5 == 4) {
			char key[64];
			snprintf(key, sizeof(key), "r/%s", name);
			TFJ_CHECK_INT(tfj_objstore_delete(&prev, r.s, key), 0);
			tfj_objstore_entry_free(prev);
		} else {
			TFJ_CHECK_INT(put(r.s, obj("r", name, i % 3 ? "j" : "k", rv)), 0);
		}
	}
	atomic_store(&r.done, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	TFJ_CHECK_INT(atomic_load(&r.bad), 0);
	tfj_objstore_free(r.s);
}

/*
 * The text reader hands out the cached bytes (the caller's copy), and the
 * byte count follows puts, replacements and deletes back to zero.
 */
static void test_text_and_bytes(void)
{
	struct tfj_objstore *s = NULL;
	struct tfj_objstore_entry *prev = NULL;
	char *text = NULL, big[4096];
	size_t len = 1, small_bytes, big_bytes;
	cJSON *o;

	TFJ_CHECK_INT(tfj_objstore_new(&s, JOB_LABEL), 0);
	if (!s)
		return;
	TFJ_CHECK_INT(tfj_objstore_bytes(s), 0);
	TFJ_CHECK_INT(tfj_objstore_get_text(&text, &len, s, "ns", "x"), TFJ_ENOTFOUND);
	TFJ_CHECK(text == NULL && len == 0);

	TFJ_CHECK_INT(put(s, obj("ns", "x", "job", "7")), 0);
	TFJ_CHECK_INT(tfj_objstore_get_text(&text, &len, s, "ns", "x"), 0);
	TFJ_CHECK_STR(text, "{\"metadata\":{\"name\":\"x\",\"namespace\":\"ns\","
		      "\"resourceVersion\":\"7\",\"labels\":{\"" JOB_LABEL "\":\"job\"}}}");
	TFJ_CHECK_INT(len, text ? strlen(text) : 0);
	small_bytes = tfj_objstore_bytes(s);
	/* The text, its resourceVersion and index key, and the entry itself. */
	TFJ_CHECK(small_bytes >= len + 1 + 2 + 7);
	TFJ_CHECK(small_bytes < len + 256);
	free(text);

	/* A bigger version replaces the smaller one's bytes, not adds to them. */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	o = obj("ns", "x", "job", "8");
	cJSON_AddStringToObject(o, "data", big);
	TFJ_CHECK_INT(put(s, o), 0);
	big_bytes = tfj_objstore_bytes(s);
	TFJ_CHECK(big_bytes >= small_bytes + sizeof(big) - 1);
	TFJ_CHECK(big_bytes < small_bytes + sizeof(big) + 64);

	TFJ_CHECK_INT(put(s, obj("ns", "y", NULL, "9")), 0);
	TFJ_CHECK(tfj_objstore_bytes(s) > big_bytes);
	TFJ_CHECK_INT(tfj_objstore_delete(&prev, s, "ns/x"), 0);
	tfj_objstore_entry_free(prev);
	TFJ_CHECK_INT(tfj_objstore_delete(&prev, s, "ns/y"), 0);
	tfj_objstore_entry_free(prev);
	TFJ_CHECK_INT(tfj_objstore_bytes(s), 0);
	tfj_objstore_free(s);
}

int main(void)
{
	TFJ_RUN(test_key);
	TFJ_RUN(test_put_get_delete);
	TFJ_RUN(test_index);
	TFJ_RUN(test_prune);
	TFJ_RUN(test_text_and_bytes);
	TFJ_RUN(test_free_null);
	TFJ_RUN(test_readers_beside_writer);
	return tfj_test_finish();
}
