#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfj/err.h"
#include "tfj/tfconfig.h"
#include "tfj_test.h"

static void test_encode_known_document(void)
{
	struct tfj_tfconfig c = { 0 };
	char *s = NULL;

	TFJ_CHECK_INT(tfj_tfconfig_add_job(&c, "ps"), 0);
	TFJ_CHECK_INT(tfj_tfconfig_add_host(&c, "ps", "j-ps-0.ns.svc:2222"), 0);
	TFJ_CHECK_INT(tfj_tfconfig_add_job(&c, "worker"), 0);
	TFJ_CHECK_INT(tfj_tfconfig_add_host(&c, "worker", "j-worker-0.ns.svc:2222"), 0);
	TFJ_CHECK_INT(tfj_tfconfig_add_host(&c, "worker", "j-worker-1.ns.svc:2222"), 0);
	TFJ_CHECK_INT(tfj_tfconfig_set_task(&c, "worker", 1), 0);
	TFJ_CHECK_INT(tfj_tfconfig_set_environment(&c, "cloud"), 0);
	TFJ_CHECK_INT(tfj_tfconfig_encode(&s, &c), 0);
	TFJ_CHECK_STR(s, "{\"cluster\":{\"ps\":[\"j-ps-0.ns.svc:2222\"],\"worker\":"
			 "[\"j-worker-0.ns.svc:2222\",\"j-worker-1.ns.svc:2222\"]},"
			 "\"task\":{\"type\":\"worker\",\"index\":1},\"environment\":\"cloud\"}");
	free(s);
	tfj_tfconfig_free(&c);
	tfj_tfconfig_free(NULL);
}

static void test_decode_known_document(void)
{
	const char *doc = "{\"cluster\":{\"chief\":[\"c:1\"],\"ps\":[\"p:2\",\"q:3\"]},"
			  "\"task\":{\"type\":\"ps\",\"index\":1},\"rpc_layer\":\"grpc\"}";
	struct tfj_tfconfig c;
	const struct tfj_tfconfig_job *ps;

	TFJ_CHECK_INT(tfj_tfconfig_decode(&c, doc, strlen(doc)), 0);
	TFJ_CHECK_INT(c.njobs, 2);
	ps = tfj_tfconfig_find_job(&c, "ps");
	TFJ_CHECK(ps && ps->nhosts == 2);
	if (ps)
		TFJ_CHECK_STR(ps->hosts[1], "q:3");
	TFJ_CHECK(c.has_task);
	TFJ_CHECK_STR(c.task_type, "ps");
	TFJ_CHECK_INT(c.task_index, 1);
	TFJ_CHECK_STR(c.rpc_layer, "grpc");
	TFJ_CHECK(c.environment == NULL);
	TFJ_CHECK(tfj_tfconfig_find_job(&c, "worker") == NULL);
	tfj_tfconfig_free(&c);
}

/* Random strings mixing ASCII, JSON metacharacters, controls and unicode. */
static void random_string(char *out, size_t max)
{
	static const char *const pieces[] = { "a", "Z", "9", "-", ".", ":", "\"", "\\", "/",
					      "\n", "\t", "\x01", "\x1f", "\x7f", "é", "漢",
					      "😀", "\\u0041", "{", "]", " ", "'" };
	size_t n = 1 + tfj_test_below(24), len = 0, i;

	out[0] = '\0';
	for (i = 0; i < n; i++) {
		const char *p = pieces[tfj_test_below(sizeof(pieces) / sizeof(pieces[0]))];
		size_t pl = strlen(p);

		if (len + pl >= max)
			break;
		memcpy(out + len, p, pl + 1);
		len += pl;
	}
	if (len == 0)
		memcpy(out, "h", 2);
}

static void random_config(struct tfj_tfconfig *c)
{
	static const char *const types[] = { "chief", "worker", "ps", "evaluator", "master" };
	int used[5] = { 0 };
	size_t njobs = tfj_test_below(5), i, j;
	char s[128];

	memset(c, 0, sizeof(*c));
	for (i = 0; i < njobs; i++) {
		size_t t = tfj_test_below(5), nh;

		/* chief and master together are invalid; keep one of them. */
		if (used[t] || (t == 0 && used[4]) || (t == 4 && used[0]))
			continue;
		used[t] = 1;
		tfj_tfconfig_add_job(c, types[t]);
		nh = (t == 0 || t == 4) ? 1 : tfj_test_below(6);
		for (j = 0; j < nh; j++) {
			random_string(s, sizeof(s));
			tfj_tfconfig_add_host(c, types[t], s);
		}
	}
	if (c->njobs && tfj_test_below(4)) {
		const struct tfj_tfconfig_job *job = &c->jobs[tfj_test_below(c->njobs)];
		if (job->nhosts)
			tfj_tfconfig_set_task(c, job->name, (int)tfj_test_below(job->nhosts));
	}
	if (tfj_test_below(2)) {
		random_string(s, sizeof(s));
		tfj_tfconfig_set_environment(c, s);
	}
	if (tfj_test_below(2)) {
		random_string(s, sizeof(s));
		tfj_tfconfig_set_rpc_layer(c, s);
	}
}

static void test_property_roundtrip(void)
{
	int i, failures = 0;

	for (i = 0; i < 2000 && failures < 5; i++) {
		struct tfj_tfconfig a, b;
		char *s = NULL;
		int rc;

		random_config(&a);
		rc = tfj_tfconfig_encode(&s, &a);
		if (rc) {
			tfj_test_fail(__FILE__, __LINE__, "encode failed: %s", tfj_err_detail());
			failures++;
		} else if ((rc = tfj_tfconfig_decode(&b, s, strlen(s))) != 0) {
			tfj_test_fail(__FILE__, __LINE__, "decode of %s failed: %s", s,
				      tfj_err_detail());
			failures++;
		} else {
			if (!tfj_tfconfig_equal(&a, &b)) {
				tfj_test_fail(__FILE__, __LINE__, "round trip changed %s", s);
				failures++;
			}
			/* The encoding escapes controls: no raw byte below 0x20. */
			for (const char *p = s; *p; p++)
				if ((unsigned char)*p < 0x20) {
					tfj_test_fail(__FILE__, __LINE__, "raw control in %s", s);
					failures++;
					break;
				}
			tfj_tfconfig_free(&b);
		}
		free(s);
		tfj_tfconfig_free(&a);
	}
	TFJ_CHECK_INT(failures, 0);
}

struct bad_case {
	const char *doc;
	int rc;
	const char *detail;
};

static void test_malformed_rejected(void)
{
	static const struct bad_case cases[] = {
		{ "", TFJ_EPARSE, "empty" },
		{ "{", TFJ_EPARSE, "invalid JSON" },
		{ "[]", TFJ_ETYPE, "must be a JSON object" },
		{ "{}", TFJ_EINVAL, "no \"cluster\"" },
		{ "{\"cluster\":[]}", TFJ_ETYPE, "cluster" },
		{ "{\"cluster\":{\"worker\":\"h:1\"}}", TFJ_ETYPE, "array" },
		{ "{\"cluster\":{\"worker\":[1]}}", TFJ_ETYPE, "string" },
		{ "{\"cluster\":{\"gpu\":[\"h:1\"]}}", TFJ_EINVAL, "unknown task type 'gpu'" },
		{ "{\"cluster\":{\"Worker\":[\"h:1\"]}}", TFJ_EINVAL, "unknown task type 'Worker'" },
		{ "{\"cluster\":{\"worker\":[\"h:1\"],\"worker\":[\"h:2\"]}}", TFJ_EINVAL, "twice" },
		{ "{\"cluster\":{\"chief\":[\"a:1\",\"b:1\"]}}", TFJ_EINVAL, "at most one" },
		{ "{\"cluster\":{\"chief\":[\"a:1\"],\"master\":[\"b:1\"]}}", TFJ_EINVAL, "both" },
		{ "{\"cluster\":{\"worker\":[\"\"]}}", TFJ_EINVAL, "empty" },
		{ "{\"cluster\":{\"worker\":[\"h:1\"]},\"task\":{\"type\":\"worker\",\"index\":1}}",
		  TFJ_ERANGE, "out of range" },
		{ "{\"cluster\":{\"worker\":[\"h:1\"]},\"task\":{\"type\":\"worker\",\"index\":-1}}",
		  TFJ_ERANGE, "negative" },
		{ "{\"cluster\":{\"worker\":[\"h:1\"]},\"task\":{\"type\":\"worker\",\"index\":0.5}}",
		  TFJ_ETYPE, "integer" },
		{ "{\"cluster\":{\"worker\":[\"h:1\"]},\"task\":{\"type\":\"worker\",\"index\":1e12}}",
		  TFJ_ERANGE, "outside" },
		{ "{\"cluster\":{\"worker\":[\"h:1\"]},\"task\":{\"type\":\"ps\",\"index\":0}}",
		  TFJ_EINVAL, "does not appear in cluster" },
		{ "{\"cluster\":{\"worker\":[\"h:1\"]},\"task\":{\"type\":\"boss\"}}", TFJ_EINVAL,
		  "not a known task type" },
		{ "{\"cluster\":{\"worker\":[\"h:1\"]},\"task\":{\"index\":0}}", TFJ_ENOTFOUND,
		  "type" },
		{ "{\"cluster\":{\"worker\":[\"h:1\"]},\"task\":7}", TFJ_ETYPE, "task" },
		{ "{\"cluster\":{},\"environment\":3}", TFJ_ETYPE, "environment" },
		{ "{\"cluster\":{\"worker\":[\"\xff\"]}}", TFJ_EINVAL, "UTF-8" },
		{ "{\"cluster\":{\"worker\":{\"x\":\"h:1\"}}}", TFJ_EINVAL, "task index" },
		{ "{\"cluster\":{\"worker\":{\"-1\":\"h:1\"}}}", TFJ_EINVAL, "task index" },
		{ "{\"cluster\":{\"worker\":{\"1\":2}}}", TFJ_ETYPE, "string" },
		{ "{\"cluster\":{\"worker\":{\"1\":\"a:1\",\"1\":\"b:1\"}}}", TFJ_EINVAL,
		  "task 1 listed twice" },
		{ "{\"cluster\":{\"worker\":{\"1\":\"h:1\"}},\"task\":{\"type\":\"worker\","
		  "\"index\":0}}", TFJ_ERANGE, "not in the sparse" },
		{ "{\"cluster\":{\"ps\":null}}", TFJ_ETYPE, "array" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tfj_tfconfig c;
		int rc = tfj_tfconfig_decode(&c, cases[i].doc, strlen(cases[i].doc));

		if (rc != cases[i].rc || !strstr(tfj_err_detail(), cases[i].detail))
			tfj_test_fail(__FILE__, __LINE__, "case %zu (%s): rc %d (%s), detail '%s'",
				      i, cases[i].doc, rc, tfj_err_name(rc), tfj_err_detail());
		TFJ_CHECK(c.njobs == 0 && c.jobs == NULL && c.task_type == NULL);
		TFJ_CHECK(strncmp(tfj_err_detail(), "TF_CONFIG:", 10) == 0);
	}
}

static void test_evaluator_outside_cluster(void)
{
	const char *doc = "{\"cluster\":{\"ps\":[\"p:1\"],\"worker\":[\"w:1\"]},"
			  "\"task\":{\"type\":\"evaluator\",\"index\":0}}";
	struct tfj_tfconfig c;

	TFJ_CHECK_INT(tfj_tfconfig_decode(&c, doc, strlen(doc)), 0);
	TFJ_CHECK(tfj_tfconfig_find_job(&c, "evaluator") == NULL);
	tfj_tfconfig_free(&c);
}

static void test_huge_documents(void)
{
	size_t n = TFJ_TFCONFIG_MAX_BYTES + 16, i;
	char *doc = malloc(n);
	struct tfj_tfconfig c = { 0 };
	char host[16];
	char *s = NULL;

	/* Over the byte cap: refused before parsing. */
	memset(doc, ' ', n);
	memcpy(doc, "{\"cluster\":{}}", 14);
	TFJ_CHECK_INT(tfj_tfconfig_decode(&c, doc, n), TFJ_ETOOBIG);
	free(doc);
	/* Too many hosts for one type: refused by the builder and validator. */
	tfj_tfconfig_add_job(&c, "worker");
	for (i = 0; i < TFJ_TFCONFIG_MAX_HOSTS; i++) {
		snprintf(host, sizeof(host), "w%zu:1", i);
		TFJ_CHECK_INT(tfj_tfconfig_add_host(&c, "worker", host), 0);
	}
	TFJ_CHECK_INT(tfj_tfconfig_add_host(&c, "worker", "x:1"), TFJ_ETOOBIG);
	TFJ_CHECK_INT(tfj_tfconfig_encode(&s, &c), 0);
	free(s);
	tfj_tfconfig_free(&c);
}

static void test_encode_rejects_invalid(void)
{
	struct tfj_tfconfig c = { 0 };
	char *s = NULL;

	tfj_tfconfig_add_job(&c, "worker");
	tfj_tfconfig_add_host(&c, "worker", "bad\xc3(utf8");
	TFJ_CHECK_INT(tfj_tfconfig_encode(&s, &c), TFJ_EINVAL);
	TFJ_CHECK(s == NULL);
	tfj_tfconfig_free(&c);
	tfj_tfconfig_add_job(&c, "worker");
	tfj_tfconfig_add_host(&c, "worker", "h:1");
	tfj_tfconfig_set_task(&c, "worker", 3);
	TFJ_CHECK_INT(tfj_tfconfig_encode(&s, &c), TFJ_ERANGE);
	TFJ_CHECK_INT(tfj_tfconfig_add_job(&c, "worker"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_tfconfig_add_host(&c, "ps", "h:1"), TFJ_EINVAL);
	tfj_tfconfig_free(&c);
}

/*
 * The sparse form Kubeflow's enableDynamicWorker writes: a worker sees only
 * itself, {"<index>": host}; chief and evaluator stand outside the cluster.
 */
static void test_sparse_cluster(void)
{
	const char *doc = "{\"cluster\":{\"worker\":{\"3\":\"w3:2222\"},\"ps\":[\"p0:2222\"]},"
			  "\"task\":{\"type\":\"worker\",\"index\":3}}";
	const char *chief = "{\"cluster\":{\"worker\":{},\"ps\":[]},"
			    "\"task\":{\"type\":\"chief\",\"index\":0}}";
	struct tfj_tfconfig c, d;
	const struct tfj_tfconfig_job *w;
	char *s = NULL;

	TFJ_CHECK_INT(tfj_tfconfig_decode(&c, doc, strlen(doc)), 0);
	w = tfj_tfconfig_find_job(&c, "worker");
	TFJ_CHECK(w && w->sparse && w->nhosts == 1);
	TFJ_CHECK_INT(w ? tfj_tfconfig_host_index(w, 0) : -1, 3);
	TFJ_CHECK_INT(tfj_tfconfig_host_index(tfj_tfconfig_find_job(&c, "ps"), 0), 0);
	TFJ_CHECK_INT(tfj_tfconfig_encode(&s, &c), 0);
	TFJ_CHECK_STR(s, doc);
	TFJ_CHECK_INT(tfj_tfconfig_decode(&d, s, strlen(s)), 0);
	TFJ_CHECK(tfj_tfconfig_equal(&c, &d));
	tfj_tfconfig_free(&d);
	free(s);
	/* A list and a sparse job with the same hosts are not the same cluster. */
	TFJ_CHECK_INT(tfj_tfconfig_add_job(&d, "worker"), 0);
	TFJ_CHECK_INT(tfj_tfconfig_add_host(&d, "worker", "w3:2222"), 0);
	TFJ_CHECK_INT(tfj_tfconfig_add_host_at(&d, "worker", 1, "x:1"), TFJ_EINVAL);
	TFJ_CHECK(!tfj_tfconfig_equal(&c, &d));
	tfj_tfconfig_free(&d);
	tfj_tfconfig_free(&c);
	TFJ_CHECK_INT(tfj_tfconfig_decode(&c, chief, strlen(chief)), 0);
	TFJ_CHECK_STR(c.task_type, "chief");
	TFJ_CHECK_INT(tfj_tfconfig_encode(&s, &c), 0);
	TFJ_CHECK_STR(s, chief);
	free(s);
	tfj_tfconfig_free(&c);
	/* Builders: a host by index only on a sparse job. */
	TFJ_CHECK_INT(tfj_tfconfig_add_sparse_job(&c, "worker"), 0);
	TFJ_CHECK_INT(tfj_tfconfig_add_host(&c, "worker", "h:1"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_tfconfig_add_host_at(&c, "worker", 7, "h:1"), 0);
	TFJ_CHECK_INT(tfj_tfconfig_set_task(&c, "worker", 7), 0);
	TFJ_CHECK_INT(tfj_tfconfig_encode(&s, &c), 0);
	TFJ_CHECK_STR(s, "{\"cluster\":{\"worker\":{\"7\":\"h:1\"}},\"task\":{\"type\":\"worker\","
		      "\"index\":7}}");
	free(s);
	tfj_tfconfig_free(&c);
}

int main(void)
{
	TFJ_RUN(test_encode_known_document);
	TFJ_RUN(test_decode_known_document);
	TFJ_RUN(test_property_roundtrip);
	TFJ_RUN(test_malformed_rejected);
	TFJ_RUN(test_evaluator_outside_cluster);
	TFJ_RUN(test_sparse_cluster);
	TFJ_RUN(test_huge_documents);
	TFJ_RUN(test_encode_rejects_invalid);
	return tfj_test_finish();
}
