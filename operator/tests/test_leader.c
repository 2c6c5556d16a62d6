/*
 * test_leader.c - the pure part of leader election.
 */
#include <string.h>
#include <cjson/cJSON.h>

#include <tfj/err.h>

#include "kube/leader.h"
#include "tfj_test.h"

static struct tfj_leader_record rec(const char *holder, int64_t lease_s)
{
	struct tfj_leader_record r;
	memset(&r, 0, sizeof(r));
	strcpy(r.holder, holder);
	r.lease_s = lease_s;
	return r;
}

static void test_decide(void)
{
	struct tfj_leader_record r;

	TFJ_CHECK_INT(tfj_leader_decide(NULL, "me", 0, 0, 15000), TFJ_LEADER_ACQUIRE);
	r = rec("me", 15);
	TFJ_CHECK_INT(tfj_leader_decide(&r, "me", 0, 1000000, 15000), TFJ_LEADER_RENEW);
	r = rec("", 15);
	TFJ_CHECK_INT(tfj_leader_decide(&r, "me", 0, 0, 15000), TFJ_LEADER_ACQUIRE);
	r = rec("other", 15);
	/* Live: observed 14.9 s ago. */
	TFJ_CHECK_INT(tfj_leader_decide(&r, "me", 100, 15000, 15000), TFJ_LEADER_WAIT);
	/* Expired: unchanged for the whole lease duration on our clock. */
	TFJ_CHECK_INT(tfj_leader_decide(&r, "me", 100, 15100, 15000), TFJ_LEADER_ACQUIRE);
	/* The record's own duration wins over our default. */
	r = rec("other", 60);
	TFJ_CHECK_INT(tfj_leader_decide(&r, "me", 0, 30000, 15000), TFJ_LEADER_WAIT);
	r = rec("other", 0);
	TFJ_CHECK_INT(tfj_leader_decide(&r, "me", 0, 15000, 15000), TFJ_LEADER_ACQUIRE);
	/* Identity is compared exactly. */
	r = rec("me-2", 15);
	TFJ_CHECK_INT(tfj_leader_decide(&r, "me", 0, 1, 15000), TFJ_LEADER_WAIT);
}

static void test_parse(void)
{
	struct tfj_leader_record r;
	cJSON *l = cJSON_Parse("{\"spec\":{\"holderIdentity\":\"op-1\",\"leaseDurationSeconds\":15,"
			       "\"renewTime\":\"2026-11-22T02:00:00.000000Z\","
			       "\"leaseTransitions\":3}}");
	TFJ_CHECK_INT(tfj_leader_parse(&r, l), 0);
	TFJ_CHECK_STR(r.holder, "op-1");
	TFJ_CHECK_INT(r.lease_s, 15);
	TFJ_CHECK_INT(r.transitions, 3);
	TFJ_CHECK_STR(r.renew_time, "2026-11-22T02:00:00.000000Z");
	cJSON_Delete(l);
	l = cJSON_Parse("{\"spec\":{}}");
	TFJ_CHECK_INT(tfj_leader_parse(&r, l), 0);
	TFJ_CHECK_STR(r.holder, "");
	cJSON_Delete(l);
	l = cJSON_Parse("{\"metadata\":{}}");
	TFJ_CHECK_INT(tfj_leader_parse(&r, l), TFJ_EPARSE);
	cJSON_Delete(l);
	l = cJSON_Parse("{\"spec\":{\"holderIdentity\":5}}");
	TFJ_CHECK_INT(tfj_leader_parse(&r, l), TFJ_EPARSE);
	cJSON_Delete(l);
	l = cJSON_Parse("{\"spec\":{\"leaseDurationSeconds\":-4}}");
	TFJ_CHECK_INT(tfj_leader_parse(&r, l), TFJ_EPARSE);
	cJSON_Delete(l);
}

/*
 * Two processes of one pod (a container restarted in place has the same
 * host name and pid 1) get different identities: the restarted one is a
 * new candidate, never the holder of its predecessor's Lease.
 */
static void test_identity_per_process(void)
{
	char a[320], b[320], small[20];
	struct tfj_leader_record r;

	TFJ_CHECK_OK(tfj_leader_identity(a, sizeof(a), "tfjob-operator-7d9f-abcde"));
	TFJ_CHECK_OK(tfj_leader_identity(b, sizeof(b), "tfjob-operator-7d9f-abcde"));
	TFJ_CHECK(strncmp(a, "tfjob-operator-7d9f-abcde_", 26) == 0);
	TFJ_CHECK_EQ(strlen(a), 26 + 16);
	TFJ_CHECK(strcmp(a, b) != 0);
	r = rec(a, 15);
	TFJ_CHECK_INT(tfj_leader_decide(&r, b, 0, 1, 15000), TFJ_LEADER_WAIT);
	TFJ_CHECK_OK(tfj_leader_identity(a, sizeof(a), ""));
	TFJ_CHECK(strncmp(a, "tfjob-operator_", 15) == 0);
	TFJ_CHECK_INT(tfj_leader_identity(small, sizeof(small), "a-very-long-host-name"), TFJ_EINVAL);
}

int main(void)
{
	TFJ_RUN(test_decide);
	TFJ_RUN(test_identity_per_process);
	TFJ_RUN(test_parse);
	return tfj_test_finish();
}
