/*
 * test_peerlimit.c - per-peer buckets for failed report calls: only
 * refusals drain a peer, a drained peer recovers at the rate, other peers
 * are unaffected, and a flood of new addresses into a full table does not
 * forgive a drained peer.
 */
#include <stdio.h>
#include <string.h>

#include <tfj_test.h>

#include "report/peerlimit.h"

#define S 1000000000ull

static void test_drain_and_refill(void)
{
	struct tfj_peerlimit *p = NULL;
	uint64_t t = 100 * S;
	int i;

	TFJ_CHECK_OK(tfj_peerlimit_new(&p, 2, 5, 0));
	if (!p)
		return;
	TFJ_CHECK_INT(tfj_peerlimit_allowed(p, "10.0.0.1", t), 1);
	for (i = 0; i < 5; i++) {
		TFJ_CHECK_INT(tfj_peerlimit_allowed(p, "10.0.0.1", t), 1);
		tfj_peerlimit_charge(p, "10.0.0.1", t);
	}
	TFJ_CHECK_INT(tfj_peerlimit_allowed(p, "10.0.0.1", t), 0);
	/* Charging a drained peer runs up no debt: half a second buys one look. */
	for (i = 0; i < 100; i++)
		tfj_peerlimit_charge(p, "10.0.0.1", t);
	TFJ_CHECK_INT(tfj_peerlimit_allowed(p, "10.0.0.1", t + S / 4), 0);
	TFJ_CHECK_INT(tfj_peerlimit_allowed(p, "10.0.0.1", t + S / 2), 1);
	tfj_peerlimit_charge(p, "10.0.0.1", t + S / 2);
	TFJ_CHECK_INT(tfj_peerlimit_allowed(p, "10.0.0.1", t + S / 2), 0);
	/* Another address is not touched. */
	TFJ_CHECK_INT(tfj_peerlimit_allowed(p, "10.0.0.2", t), 1);
	/* Long idle: back to the full burst, no more. */
	t += 1000 * S;
	for (i = 0; i < 5; i++)
		tfj_peerlimit_charge(p, "10.0.0.1", t);
	TFJ_CHECK_INT(tfj_peerlimit_allowed(p, "10.0.0.1", t), 0);
	tfj_peerlimit_free(p);
}

static void test_flood_of_addresses(void)
{
	struct tfj_peerlimit *p = NULL;
	uint64_t t = 100 * S;
	char a[32];
	int i;

	/* 8 slots: two sets of four. */
	TFJ_CHECK_OK(tfj_peerlimit_new(&p, 1, 3, 8));
	if (!p)
		return;
	for (i = 0; i < 3; i++)
		tfj_peerlimit_charge(p, "10.9.9.9", t);
	TFJ_CHECK_INT(tfj_peerlimit_allowed(p, "10.9.9.9", t), 0);
	/* 10,000 other addresses fail once each: they evict one another, not the drained one. */
	for (i = 0; i < 10000; i++) {
		snprintf(a, sizeof(a), "10.%d.%d.%d", (i >> 16) & 255, (i >> 8) & 255, i & 255);
		tfj_peerlimit_charge(p, a, t);
	}
	TFJ_CHECK_INT(tfj_peerlimit_allowed(p, "10.9.9.9", t), 0);
	/* Unlimited when configured off. */
	tfj_peerlimit_free(p);
	TFJ_CHECK_OK(tfj_peerlimit_new(&p, 0, 0, 0));
	for (i = 0; i < 100; i++)
		tfj_peerlimit_charge(p, "10.9.9.9", t);
	TFJ_CHECK_INT(tfj_peerlimit_allowed(p, "10.9.9.9", t), 1);
	tfj_peerlimit_free(p);
}

static void test_addr(void)
{
	static const char *const cases[][2] = {
		{ "ipv4:10.244.0.7:40312", "10.244.0.7" },
		{ "ipv6:[fd00::1:2]:5555", "fd00::1:2" },
		{ "unix:/tmp/sock", "unix:/tmp/sock" },
	};
	char out[64], tiny[4];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tfj_peerlimit_addr(out, sizeof(out), cases[i][0]);
		TFJ_CHECK_STR(out, cases[i][1]);
	}
	tfj_peerlimit_addr(out, sizeof(out), NULL);
	TFJ_CHECK_STR(out, "");
	/* Truncated, still terminated. */
	tfj_peerlimit_addr(tiny, sizeof(tiny), "ipv4:10.244.0.7:1");
	TFJ_CHECK_STR(tiny, "10.");
}

int main(void)
{
	TFJ_RUN(test_drain_and_refill);
	TFJ_RUN(test_flood_of_addresses);
	TFJ_RUN(test_addr);
	return tfj_test_finish();
}
