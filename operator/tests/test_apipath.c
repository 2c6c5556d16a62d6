/*
 * test_apipath.c - the API paths of collections and objects.
 */
#include <tfj/err.h>

#include "kube/apipath.h"
#include "tfjob/tfjob.h"
#include "tfj_test.h"

static void test_coll(void)
{
	char p[128];

	TFJ_CHECK_INT(tfj_apipath_coll(p, sizeof(p), TFJ_APIPATH_CORE, "ml", "pods"), 0);
	TFJ_CHECK_STR(p, "/api/v1/namespaces/ml/pods");
	/* No namespace: all namespaces (or a cluster-scoped resource). */
	TFJ_CHECK_INT(tfj_apipath_coll(p, sizeof(p), TFJ_TFJOB_API_PATH, "", "tfjobs"), 0);
	TFJ_CHECK_STR(p, "/apis/kubeflow.org/v1/tfjobs");
	TFJ_CHECK_INT(tfj_apipath_coll(p, sizeof(p), TFJ_APIPATH_CORE, NULL, "services"), 0);
	TFJ_CHECK_STR(p, "/api/v1/services");
}

static void test_obj(void)
{
	char p[128];

	TFJ_CHECK_INT(tfj_apipath_obj(p, sizeof(p), TFJ_TFJOB_API_PATH, "ml", "tfjobs", "mnist",
				      "status"), 0);
	TFJ_CHECK_STR(p, "/apis/kubeflow.org/v1/namespaces/ml/tfjobs/mnist/status");
	TFJ_CHECK_INT(tfj_apipath_obj(p, sizeof(p), TFJ_APIPATH_COORDINATION, "kube-system",
				      "leases", "tfjob-operator", NULL), 0);
	TFJ_CHECK_STR(p, "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/tfjob-operator");
}

static void test_too_long(void)
{
	char p[24];

	/* "/api/v1/namespaces/ml/pods" needs 27 bytes with its NUL. */
	TFJ_CHECK_INT(tfj_apipath_coll(p, sizeof(p), TFJ_APIPATH_CORE, "ml", "pods"), TFJ_ETOOBIG);
	TFJ_CHECK_INT(tfj_apipath_obj(p, sizeof(p), TFJ_APIPATH_CORE, "ml", "pods", "p", NULL),
		      TFJ_ETOOBIG);
	/* Exactly fitting is fine: "/api/v1/pods" is 12 bytes and its NUL. */
	TFJ_CHECK_INT(tfj_apipath_coll(p, 13, TFJ_APIPATH_CORE, NULL, "pods"), 0);
	TFJ_CHECK_INT(tfj_apipath_coll(p, 12, TFJ_APIPATH_CORE, NULL, "pods"), TFJ_ETOOBIG);
}

int main(void)
{
	TFJ_RUN(test_coll);
	TFJ_RUN(test_obj);
	TFJ_RUN(test_too_long);
	return tfj_test_finish();
}
