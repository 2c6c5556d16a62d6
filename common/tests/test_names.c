#include <stdio.h>
#include <string.h>

#include "tfj/err.h"
#include "tfj/names.h"
#include "tfj_test.h"

static void test_plain_names(void)
{
	char n[64];

	TFJ_CHECK_INT(tfj_names_replica(n, sizeof(n), "mnist", "Worker", 3), 0);
	TFJ_CHECK_STR(n, "mnist-worker-3");
	TFJ_CHECK_INT(tfj_names_replica(n, sizeof(n), "a", "PS", 0), 0);
	TFJ_CHECK_STR(n, "a-ps-0");
	TFJ_CHECK_INT(tfj_names_replica(n, sizeof(n), "job", "evaluator", 12), 0);
	TFJ_CHECK_STR(n, "job-evaluator-12");
}

static void test_invalid_arguments(void)
{
	char n[64], small[10];

	TFJ_CHECK_INT(tfj_names_replica(small, sizeof(small), "a", "ps", 0), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_names_replica(n, sizeof(n), "", "ps", 0), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_names_replica(n, sizeof(n), "a", "p-s", 0), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_names_replica(n, sizeof(n), "a", "", 0), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_names_replica(n, sizeof(n), "a", "ps", -1), TFJ_ERANGE);
}

static void test_long_and_odd_names_are_hashed(void)
{
	char n[64], m[64], want[64];
	const char *long_job = "a-very-long-training-job-name-that-goes-on-and-on-forever-x";

	TFJ_CHECK_INT(tfj_names_replica(n, sizeof(n), long_job, "evaluator", 0), 0);
	TFJ_CHECK(tfj_names_is_dns1035(n));
	TFJ_CHECK_LE(strlen(n), 63);
	snprintf(want, sizeof(want), "-%08x-evaluator-0", tfj_names_hash(long_job));
	TFJ_CHECK(strstr(n, want) != NULL);
	TFJ_CHECK(strncmp(n, "a-very-long", 11) == 0);
	/* Deterministic. */
	TFJ_CHECK_INT(tfj_names_replica(m, sizeof(m), long_job, "evaluator", 0), 0);
	TFJ_CHECK_STR(n, m);
	/* Dots and a leading digit (valid job names, invalid labels). */
	TFJ_CHECK_INT(tfj_names_replica(n, sizeof(n), "7.up", "worker", 1), 0);
	TFJ_CHECK(tfj_names_is_dns1035(n));
	TFJ_CHECK(strncmp(n, "up-", 3) == 0);
	TFJ_CHECK_INT(tfj_names_replica(n, sizeof(n), "123", "ps", 0), 0);
	TFJ_CHECK(tfj_names_is_dns1035(n));
	TFJ_CHECK(n[0] == 'j');
}

static void test_is_dns1035(void)
{
	TFJ_CHECK(tfj_names_is_dns1035("abc-1"));
	TFJ_CHECK(!tfj_names_is_dns1035("1abc"));
	TFJ_CHECK(!tfj_names_is_dns1035("abc-"));
	TFJ_CHECK(!tfj_names_is_dns1035("Abc"));
	TFJ_CHECK(!tfj_names_is_dns1035("a.b"));
	TFJ_CHECK(!tfj_names_is_dns1035(""));
	TFJ_CHECK(!tfj_names_is_dns1035(NULL));
	TFJ_CHECK(tfj_names_is_dns1035("a23456789012345678901234567890123456789012345678901234567890123"));
	TFJ_CHECK(!tfj_names_is_dns1035("a234567890123456789012345678901234567890123456789012345678901234"));
}

/* Namespaces: a leading digit is fine, a leading or trailing '-' is not; the
 * length is the caller's (a namespace inside a longer key). */
static void test_is_dns1123_label(void)
{
	static const char l63[] = "123456789012345678901234567890123456789012345678901234567890123";

	TFJ_CHECK(tfj_names_is_dns1123_label("1abc", 4));
	TFJ_CHECK(tfj_names_is_dns1123_label("ns-a/job", 4));
	TFJ_CHECK(!tfj_names_is_dns1123_label("ns-a/job", 5));
	TFJ_CHECK(!tfj_names_is_dns1123_label("-abc", 4));
	TFJ_CHECK(!tfj_names_is_dns1123_label("abc-", 4));
	TFJ_CHECK(!tfj_names_is_dns1123_label("aBc", 3));
	TFJ_CHECK(!tfj_names_is_dns1123_label("", 0));
	TFJ_CHECK(!tfj_names_is_dns1123_label(NULL, 3));
	TFJ_CHECK(tfj_names_is_dns1123_label(l63, 63));
	TFJ_CHECK(!tfj_names_is_dns1123_label("a23456789012345678901234567890123456789012345678901234567890123a", 64));
}

static void test_host(void)
{
	char h[TFJ_NAMES_HOST_MAX + 1];

	TFJ_CHECK_INT(tfj_names_host(h, sizeof(h), "mnist", "PS", 0, "team-a", NULL, 2222), 0);
	TFJ_CHECK_STR(h, "mnist-ps-0.team-a.svc:2222");
	TFJ_CHECK_INT(tfj_names_host(h, sizeof(h), "mnist", "worker", 1, "ns", "cluster.local", 80), 0);
	TFJ_CHECK_STR(h, "mnist-worker-1.ns.svc.cluster.local:80");
	TFJ_CHECK_INT(tfj_names_host(h, sizeof(h), "m", "ps", 0, "Bad_NS", NULL, 1), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_names_host(h, sizeof(h), "m", "ps", 0, "ns", "bad domain", 1), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_names_host(h, sizeof(h), "m", "ps", 0, "ns", NULL, 0), TFJ_ERANGE);
	TFJ_CHECK_INT(tfj_names_host(h, sizeof(h), "m", "ps", 0, "ns", NULL, 65536), TFJ_ERANGE);
}

/* Any job name Kubernetes accepts (a DNS-1123 subdomain up to 253), plus
 * some it does not, yields a valid label; distinct jobs give distinct names. */
static void test_property_always_valid_and_distinct(void)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789-.ABZ_";
	static const char *const types[] = { "chief", "worker", "ps", "evaluator", "master" };
	char job[260], prev_job[260] = "", n[64], prev[64] = "";
	int i, bad = 0;

	for (i = 0; i < 20000 && bad < 5; i++) {
		size_t len = 1 + tfj_test_below(253), k;
		const char *type = types[tfj_test_below(5)];
		int index = (int)tfj_test_below(100000);

		for (k = 0; k < len; k++)
			job[k] = alphabet[tfj_test_below(sizeof(alphabet) - 1)];
		job[len] = '\0';
		if (tfj_names_replica(n, sizeof(n), job, type, index) != 0 ||
		    !tfj_names_is_dns1035(n)) {
			tfj_test_fail(__FILE__, __LINE__, "job '%s' %s %d gave '%s' (%s)", job, type,
				      index, n, tfj_err_detail());
			bad++;
			continue;
		}
		/* Two different jobs (same type/index) must not collide. */
		if (prev_job[0] && strcmp(prev_job, job) != 0) {
			char a[64];
			tfj_names_replica(a, sizeof(a), prev_job, type, index);
			if (strcmp(a, n) == 0) {
				tfj_test_fail(__FILE__, __LINE__, "'%s' and '%s' both map to '%s'",
					      prev_job, job, n);
				bad++;
			}
		}
		memcpy(prev_job, job, len + 1);
		memcpy(prev, n, sizeof(n));
	}
	/* A long job: every (type, index) pair stays distinct. */
	memset(job, 'x', 200);
	job[200] = '\0';
	tfj_names_replica(prev, sizeof(prev), job, "worker", 1);
	tfj_names_replica(n, sizeof(n), job, "worker", 11);
	TFJ_CHECK(strcmp(prev, n) != 0);
}

int main(void)
{
	TFJ_RUN(test_plain_names);
	TFJ_RUN(test_invalid_arguments);
	TFJ_RUN(test_long_and_odd_names_are_hashed);
	TFJ_RUN(test_is_dns1035);
	TFJ_RUN(test_is_dns1123_label);
	TFJ_RUN(test_host);
	TFJ_RUN(test_property_always_valid_and_distinct);
	return tfj_test_finish();
}
