/*
 * test_capublish.c - the report CA ConfigMap in job namespaces
 * (report/capublish.h) against the fake API server: created once, then no
 * request while the CA stays; replaced when the CA changes (rotation);
 * a create race (409) ends with the ConfigMap in place; no CA yet is an
 * error the controller retries.
 */
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

#include "fakeapi.h"
#include "report/capublish.h"
#include "tfj_test.h"

static struct fake F;
static struct tfj_kube *K;

struct src {
	const char *pem;
	uint64_t gen;
};

static int ca_of(char **pem, uint64_t *gen, void *ud)
{
	struct src *s = ud;

	*gen = s->gen;
	if (!s->pem) {
		*pem = NULL;
		return tfj_err_set(TFJ_EUNAVAIL, "no CA yet");
	}
	*pem = strdup(s->pem);
	return *pem ? 0 : TFJ_ENOMEM;
}

/* ca.crt of ConfigMap `name` in ns, as the API server holds it (caller frees). */
static char *published_as(const char *ns, const char *name)
{
	char path[256];
	cJSON *cm = NULL;
	char *v = NULL;

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps/%s", ns, name);
	if (tfj_kube_get(K, &cm, path) == 0) {
		const char *s = cJSON_GetStringValue(
			cJSON_GetObjectItem(cJSON_GetObjectItem(cm, "data"), "ca.crt"));
		v = s ? strdup(s) : NULL;
	}
	cJSON_Delete(cm);
	return v;
}

static void check_published_as(const char *ns, const char *name, const char *want)
{
	char *v = published_as(ns, name);

	TFJ_CHECK_STR(v, want);
	free(v);
}

static void check_published(const char *ns, const char *want)
{
	check_published_as(ns, "tfjob-controller-report-ca", want);
}

static void test_publish(void)
{
	struct src s = { NULL, 0 };
	struct tfj_capublish *p = NULL;
	int gets;

	TFJ_CHECK_OK(tfj_capublish_new(&p, K, NULL, NULL, ca_of, &s));
	if (!p)
		return;
	TFJ_CHECK_INT(tfj_capublish_ensure(p, "team-a"), TFJ_EUNAVAIL);
	TFJ_CHECK_INT(tfj_capublish_current(p, "team-a"), 0);
	s.pem = "-----BEGIN CERTIFICATE-----\nA\n-----END CERTIFICATE-----\n";
	s.gen = 1;
	TFJ_CHECK_INT(tfj_capublish_current(p, "team-a"), 0);
	TFJ_CHECK_OK(tfj_capublish_ensure(p, "team-a"));
	TFJ_CHECK_INT(tfj_capublish_current(p, "team-a"), 1);
	check_published("team-a", s.pem);
	TFJ_CHECK_EQ(tfj_capublish_writes(p), 1);
	/* Current: no request at all. */
	gets = F.gets;
	TFJ_CHECK_OK(tfj_capublish_ensure(p, "team-a"));
	TFJ_CHECK_INT(F.gets, gets);
	/* Another namespace gets its own. */
	TFJ_CHECK_OK(tfj_capublish_ensure(p, "team-b"));
	TFJ_CHECK_EQ(tfj_capublish_writes(p), 2);
	/* The CA rotated: replaced on the next ensure. */
	s.pem = "-----BEGIN CERTIFICATE-----\nB\n-----END CERTIFICATE-----\n";
	s.gen = 2;
	TFJ_CHECK_INT(tfj_capublish_current(p, "team-a"), 0);
	TFJ_CHECK_OK(tfj_capublish_ensure(p, "team-a"));
	check_published("team-a", s.pem);
	TFJ_CHECK_EQ(tfj_capublish_writes(p), 3);
	tfj_capublish_free(p);

	/* A second operator process (a new leader) finds them current: reads, no write. */
	TFJ_CHECK_OK(tfj_capublish_new(&p, K, NULL, NULL, ca_of, &s));
	if (!p)
		return;
	TFJ_CHECK_OK(tfj_capublish_ensure(p, "team-a"));
	TFJ_CHECK_EQ(tfj_capublish_writes(p), 0);
	/* Its GET says 404 though another wrote it: the create's 409 is read again. */
	fake_inject(&F, 1, 404, "/configmaps/tfjob-controller-report-ca", "GET", NULL);
	TFJ_CHECK_OK(tfj_capublish_ensure(p, "team-b"));
	fake_inject(&F, 0, 0, NULL, NULL, NULL);
	check_published("team-b", s.pem);
	/* An API failure is returned (the controller retries with backoff). */
	fake_inject(&F, 5, 403, "/configmaps", NULL, NULL);
	TFJ_CHECK_INT(tfj_capublish_ensure(p, "team-c"), TFJ_EFORBIDDEN);
	fake_inject(&F, 0, 0, NULL, NULL, NULL);
	TFJ_CHECK_OK(tfj_capublish_ensure(p, "team-c"));
	tfj_capublish_free(p);
	tfj_capublish_free(NULL);
}

/*
 * The namespace's jobs are deleted and the ConfigMap with them (or the
 * namespace is made again): while the memo says current nothing is read;
 * once forgotten (a TFJob of the namespace was deleted) the next ensure
 * reads and creates it again.
 */
static void test_forget(void)
{
	struct src s = { "-----BEGIN CERTIFICATE-----\nC\n-----END CERTIFICATE-----\n", 7 };
	struct tfj_capublish *p = NULL;
	int gets;

	TFJ_CHECK_OK(tfj_capublish_new(&p, K, NULL, NULL, ca_of, &s));
	if (!p)
		return;
	TFJ_CHECK_OK(tfj_capublish_ensure(p, "team-d"));
	check_published("team-d", s.pem);
	TFJ_CHECK_OK(tfj_kube_delete(K, "/api/v1/namespaces/team-d/configmaps/tfjob-controller-report-ca",
				     NULL, "Background"));
	gets = F.gets;
	TFJ_CHECK_OK(tfj_capublish_ensure(p, "team-d"));
	TFJ_CHECK_INT(F.gets, gets); /* the memo: no request */
	tfj_capublish_forget(p, "team-d");
	tfj_capublish_forget(p, "never-seen");
	tfj_capublish_forget(p, NULL);
	tfj_capublish_forget(NULL, "team-d");
	TFJ_CHECK_OK(tfj_capublish_ensure(p, "team-d"));
	TFJ_CHECK_INT(F.gets, gets + 1); /* ensure's GET (404), then its POST */
	check_published("team-d", s.pem);
	tfj_capublish_free(p);
}

/*
 * Two installs (say a cluster-wide and a namespaced one, both with the
 * chart's default operator name) run jobs in one namespace: each publishes
 * its own CA under its own name (the second under the name its release
 * gives it), and neither replaces the other's. A ConfigMap of that name that is not the install's
 * (no labels, or another operator name) is left as it is, with an error.
 */
static void test_two_installs(void)
{
	struct src sa = { "-----BEGIN CERTIFICATE-----\nA\n-----END CERTIFICATE-----\n", 1 };
	struct src sb = { "-----BEGIN CERTIFICATE-----\nB\n-----END CERTIFICATE-----\n", 1 };
	struct tfj_capublish *a = NULL, *b = NULL;
	cJSON *cm;

	TFJ_CHECK_OK(tfj_capublish_new(&a, K, "op-a", NULL, ca_of, &sa));
	TFJ_CHECK_OK(tfj_capublish_new(&b, K, "op-a", "rel-b-report-ca", ca_of, &sb));
	if (!a || !b)
		goto out;
	TFJ_CHECK_OK(tfj_capublish_ensure(a, "shared"));
	TFJ_CHECK_OK(tfj_capublish_ensure(b, "shared"));
	check_published_as("shared", "op-a-report-ca", sa.pem);
	check_published_as("shared", "rel-b-report-ca", sb.pem);
	/* A stranger holds op-a's name elsewhere: not ours, never replaced. */
	cm = cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{"
			 "\"name\":\"op-a-report-ca\",\"labels\":{\"app.kubernetes.io/managed-by\":"
			 "\"tfjob-operator\",\"app.kubernetes.io/component\":\"report-ca\","
			 "\"training.kubeflow.org/operator-name\":\"op-b\"}},"
			 "\"data\":{\"ca.crt\":\"theirs\"}}");
	TFJ_CHECK_OK(tfj_kube_create(K, NULL, "/api/v1/namespaces/other/configmaps", cm));
	cJSON_Delete(cm);
	TFJ_CHECK_INT(tfj_capublish_ensure(a, "other"), TFJ_ESTATE);
	check_published_as("other", "op-a-report-ca", "theirs");
out:
	tfj_capublish_free(a);
	tfj_capublish_free(b);
}

int main(void)
{
	int rc = fake_start(&F, "tok");

	if (fake_unavailable(&F, rc))
		return 77;
	TFJ_CHECK_OK(rc);
	K = fake_client(&F, NULL);
	if (K) {
		TFJ_RUN(test_publish);
		TFJ_RUN(test_forget);
		TFJ_RUN(test_two_installs);
	}
	tfj_kube_free(K);
	fake_stop(&F);
	return tfj_test_finish();
}
