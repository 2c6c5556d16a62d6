/*
 * test_rtconfig.c - flag parsing and the TF_CONFIG-derived task config.
 */
#include <string.h>

#include <tfj/err.h>

#include "task/rtconfig.h"
#include "tfj_test.h"

#define ARGS(...) ((char *const[]){ __VA_ARGS__ })
#define NARGS(...) ((int)(sizeof((char *const[]){ __VA_ARGS__ }) / sizeof(char *)))
#define PARSE(cfg, tfc, ...) tfj_rtconfig_parse(cfg, NARGS(__VA_ARGS__), ARGS(__VA_ARGS__), tfc)

static const char *tfc_chief =
	"{\"cluster\":{\"chief\":[\"c:1\"],\"worker\":[\"w0:2\",\"w1:2\"],"
	"\"ps\":[\"p0:3\",\"p1:3\"],\"evaluator\":[\"e:4\"]},"
	"\"task\":{\"type\":\"worker\",\"index\":1}}";

static void test_classic_flags(void)
{
	struct tfj_rtconfig c;

	TFJ_CHECK_INT(PARSE(&c, NULL, "--job_name", "worker", "--task_index=1", "--ps_hosts",
			    "a:1,b:2", "--worker_hosts", "w:1,w:2,w:3", "--model", "mlp", "--hidden",
			    "64,32", "--batch_size", "32", "--sync", "--replicas_to_aggregate", "2",
			    "--optimizer", "momentum", "--learning_rate", "0.05"), 0);
	TFJ_CHECK_INT(c.role, TFJ_ROLE_WORKER);
	TFJ_CHECK_INT(c.index, 1);
	TFJ_CHECK_INT(c.nps, 2);
	TFJ_CHECK_INT(c.nworkers, 3);
	TFJ_CHECK_INT(c.has_chief, 0);
	TFJ_CHECK_INT(c.replica, 1);
	TFJ_CHECK_INT(c.nreplicas, 3);
	TFJ_CHECK_INT(c.is_coordinator, 0);
	TFJ_CHECK_INT(c.sync, 1);
	TFJ_CHECK_INT(c.replicas_to_aggregate, 2);
	TFJ_CHECK_INT(c.batch_size, 32);
	TFJ_CHECK_INT(c.spec.kind, TFJ_MODEL_MLP);
	TFJ_CHECK_INT(c.spec.n_hidden, 2);
	TFJ_CHECK_INT(c.optim, TFJ_OPTIM_MOMENTUM);
	TFJ_CHECK_GT(c.hp.lr, 0.0499f);
	TFJ_CHECK_LT(c.hp.lr, 0.0501f);
	TFJ_CHECK_STR(tfj_rtconfig_host(&c, "ps", 1), "b:2");
	TFJ_CHECK(tfj_rtconfig_host(&c, "ps", 2) == NULL);
	tfj_rtconfig_free(&c);

	/* Worker 0 coordinates when there is no chief; defaults apply. */
	TFJ_CHECK_INT(PARSE(&c, NULL, "--job_name", "worker", "--ps_hosts", "a:1",
			    "--worker_hosts", "w:1"), 0);
	TFJ_CHECK_INT(c.is_coordinator, 1);
	TFJ_CHECK_INT(c.replicas_to_aggregate, 1);
	TFJ_CHECK_INT(c.placement, TFJ_PLACE_BALANCED);
	TFJ_CHECK_STR(c.model, "softmax");
	TFJ_CHECK_INT(c.overlap, 0);
	tfj_rtconfig_free(&c);
}

/*
 * --model mlp-large is the 784-1024-1024-10 MLP (issue #18's benchmark
 * model): the same spec as --model mlp --hidden 1024,1024, so both spellings
 * train together. --overlap turns the async overlap on (off by default).
 */
static void test_mlp_large(void)
{
	struct tfj_rtconfig c;

	TFJ_CHECK_INT(PARSE(&c, tfc_chief, "--model", "mlp-large", "--overlap"), 0);
	TFJ_CHECK_STR(c.model, "mlp");
	TFJ_CHECK_STR(c.hidden, "1024,1024");
	TFJ_CHECK_INT(c.spec.kind, TFJ_MODEL_MLP);
	TFJ_CHECK_INT(c.spec.n_hidden, 2);
	TFJ_CHECK_INT(c.spec.hidden[0], 1024);
	TFJ_CHECK_INT(c.spec.hidden[1], 1024);
	TFJ_CHECK_INT(c.spec.input_dim, 784);
	TFJ_CHECK_INT(c.spec.classes, 10);
	TFJ_CHECK_INT(c.overlap, 1);
	tfj_rtconfig_free(&c);
	/* Its widths can still be chosen. */
	TFJ_CHECK_INT(PARSE(&c, tfc_chief, "--model", "mlp-large", "--hidden", "512,512"), 0);
	TFJ_CHECK_STR(c.hidden, "512,512");
	tfj_rtconfig_free(&c);
	TFJ_CHECK_LT(PARSE(&c, tfc_chief, "--overlap=maybe"), 0);
}

/* --overlap: bare or true = step (as before push existed), step, push, off/false. */
static void test_overlap_modes(void)
{
	static const struct {
		char *arg;
		int want;
	} cases[] = {
		{ "--overlap", TFJ_OVERLAP_STEP }, { "--overlap=true", TFJ_OVERLAP_STEP },
		{ "--overlap=step", TFJ_OVERLAP_STEP }, { "--overlap=push", TFJ_OVERLAP_PUSH },
		{ "--overlap=off", TFJ_OVERLAP_OFF }, { "--overlap=false", TFJ_OVERLAP_OFF },
	};
	struct tfj_rtconfig c;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		TFJ_CHECK_INT(PARSE(&c, tfc_chief, cases[i].arg), 0);
		TFJ_CHECK_INT(c.overlap, cases[i].want);
		tfj_rtconfig_free(&c);
	}
	TFJ_CHECK_INT(PARSE(&c, tfc_chief, "--overlap=layer"), TFJ_EINVAL);
	TFJ_CHECK(strstr(tfj_err_detail(), "off, step or push") != NULL);
}

/* --towers: 1 by default, 1..16, anything else refused. */
static void test_towers(void)
{
	struct tfj_rtconfig c;

	TFJ_CHECK_INT(PARSE(&c, tfc_chief), 0);
	TFJ_CHECK_INT(c.towers, 1);
	tfj_rtconfig_free(&c);
	TFJ_CHECK_INT(PARSE(&c, tfc_chief, "--towers", "16"), 0);
	TFJ_CHECK_INT(c.towers, 16);
	tfj_rtconfig_free(&c);
	TFJ_CHECK_INT(PARSE(&c, tfc_chief, "--towers", "17"), TFJ_EINVAL);
	TFJ_CHECK_INT(PARSE(&c, tfc_chief, "--towers", "0"), TFJ_EINVAL);
	TFJ_CHECK_INT(PARSE(&c, tfc_chief, "--towers", "two"), TFJ_EINVAL);
}

/* --protocol is gone with protocol v1: the stream is the only transport. */
static void test_protocol(void)
{
	struct tfj_rtconfig c;

	TFJ_CHECK_INT(PARSE(&c, tfc_chief, "--protocol", "2"), TFJ_EINVAL);
	TFJ_CHECK(strstr(tfj_err_detail(), "protocol") != NULL);
}

static void test_tf_config(void)
{
	struct tfj_rtconfig c;

	TFJ_CHECK_INT(PARSE(&c, tfc_chief, "--epochs", "2"), 0);
	TFJ_CHECK_INT(c.role, TFJ_ROLE_WORKER);
	TFJ_CHECK_INT(c.has_chief, 1);
	TFJ_CHECK_INT(c.replica, 2); /* chief is replica 0 */
	TFJ_CHECK_INT(c.nreplicas, 3);
	TFJ_CHECK_INT(c.is_coordinator, 0);
	tfj_rtconfig_free(&c);

	TFJ_CHECK_INT(PARSE(&c, "{\"cluster\":{\"chief\":[\"c:1\"],\"ps\":[\"p:7\"]},"
			    "\"task\":{\"type\":\"ps\",\"index\":0}}", "--bind_address", "127.0.0.1"),
		      0);
	TFJ_CHECK_INT(c.role, TFJ_ROLE_PS);
	TFJ_CHECK_STR(c.bind, "127.0.0.1:7");
	TFJ_CHECK_INT(c.nreplicas, 1);
	tfj_rtconfig_free(&c);

	TFJ_CHECK_INT(PARSE(&c, "{\"cluster\":{\"chief\":[\"c:1\"],\"ps\":[\"p:7\"]},"
			    "\"task\":{\"type\":\"chief\",\"index\":0}}", "--epochs", "1"), 0);
	TFJ_CHECK_INT(c.role, TFJ_ROLE_CHIEF);
	TFJ_CHECK_INT(c.is_coordinator, 1);
	TFJ_CHECK_INT(c.replica, 0);
	tfj_rtconfig_free(&c);

	/* The evaluator may stand outside the cluster. */
	TFJ_CHECK_INT(PARSE(&c, "{\"cluster\":{\"worker\":[\"w:1\"],\"ps\":[\"p:7\"]},"
			    "\"task\":{\"type\":\"evaluator\",\"index\":0}}", "--epochs", "1"), 0);
	TFJ_CHECK_INT(c.role, TFJ_ROLE_EVALUATOR);
	TFJ_CHECK_INT(c.replica, -1);
	tfj_rtconfig_free(&c);
}

static void test_rejects(void)
{
	struct tfj_rtconfig c;
	static const char *const bad_tfc[] = {
		"{",
		"{\"cluster\":{\"ps\":[\"p:1\"]},\"task\":{\"type\":\"worker\",\"index\":0}}",
		"{\"cluster\":{\"worker\":[\"w:1\"]},\"task\":{\"type\":\"worker\",\"index\":0}}",
		"{\"cluster\":{\"worker\":[\"w:1\"],\"ps\":[\"p:1\"]},\"task\":{\"type\":\"worker\",\"index\":5}}",
		"{\"cluster\":{\"worker\":[\"w:1\"],\"ps\":[\"p\"]},\"task\":{\"type\":\"ps\",\"index\":0}}",
		"{\"cluster\":{\"worker\":[\"w:1\"],\"ps\":[\"p:1\"]}}",
		"[1,2]",
	};
	size_t i;

	for (i = 0; i < sizeof(bad_tfc) / sizeof(bad_tfc[0]); i++) {
		int rc = PARSE(&c, bad_tfc[i], "--epochs", "1");

		TFJ_CHECK_LT(rc, 0);
		if (rc == 0)
			tfj_test_fail(__FILE__, __LINE__, "accepted TF_CONFIG %s", bad_tfc[i]);
	}
	TFJ_CHECK_LT(PARSE(&c, NULL, "--epochs", "1"), 0); /* no cluster at all */
	TFJ_CHECK_LT(PARSE(&c, tfc_chief, "--job_name", "ps"), 0); /* cluster twice */
	TFJ_CHECK_LT(PARSE(&c, tfc_chief, "--bogus", "1"), 0);
	TFJ_CHECK_LT(PARSE(&c, tfc_chief, "--batch_size", "12x"), 0);
	TFJ_CHECK_LT(PARSE(&c, tfc_chief, "--batch_size", "0"), 0);
	TFJ_CHECK_LT(PARSE(&c, tfc_chief, "--batch_size"), 0);
	TFJ_CHECK_LT(PARSE(&c, tfc_chief, "--epochs", "nan"), 0);
	TFJ_CHECK_LT(PARSE(&c, tfc_chief, "--model", "resnet"), 0);
	TFJ_CHECK_LT(PARSE(&c, tfc_chief, "--model", "softmax", "--hidden", "10"), 0);
	TFJ_CHECK_LT(PARSE(&c, tfc_chief, "--model", "mlp", "--hidden", "10,,3"), 0);
	TFJ_CHECK_LT(PARSE(&c, tfc_chief, "--optimizer", "rmsprop"), 0);
	TFJ_CHECK_LT(PARSE(&c, tfc_chief, "--replicas_to_aggregate", "2"), 0); /* needs --sync */
	TFJ_CHECK_LT(PARSE(&c, tfc_chief, "--sync", "--replicas_to_aggregate", "4"), 0);
	TFJ_CHECK_LT(PARSE(&c, tfc_chief, "--placement", "hash"), 0);
	TFJ_CHECK_LT(PARSE(&c, tfc_chief, "--epochs", "1", "--epochs", "2"), 0);
	TFJ_CHECK_LT(PARSE(&c, tfc_chief, "positional"), 0);
	TFJ_CHECK_LT(PARSE(&c, tfc_chief, "--dataset", "cifar"), 0);
	TFJ_CHECK_LT(PARSE(&c, tfc_chief, "--device", "tpu"), 0);
	TFJ_CHECK(PARSE(&c, NULL, "--job_name", "worker", "--ps_hosts", "a:1,,b:2",
			"--worker_hosts", "w:1") < 0);
	TFJ_CHECK(PARSE(&c, NULL, "--job_name", "worker", "--task_index", "-1", "--ps_hosts",
			"a:1", "--worker_hosts", "w:1") < 0);
	TFJ_CHECK(PARSE(&c, NULL, "--job_name", "gardener", "--ps_hosts", "a:1",
			"--worker_hosts", "w:1") < 0);
	TFJ_CHECK_GT(strlen(tfj_err_detail()), 0);
}

/* Flags are spelled with dashes; the underscore spelling stays an alias. */
static void test_flag_spellings(void)
{
	struct tfj_rtconfig c;

	TFJ_CHECK_INT(PARSE(&c, tfc_chief, "--peer-timeout", "5", "--batch-size=16"), 0);
	TFJ_CHECK(c.peer_timeout_s == 5.0);
	TFJ_CHECK_INT(c.batch_size, 16);
	tfj_rtconfig_free(&c);
	TFJ_CHECK_INT(PARSE(&c, tfc_chief, "--peer_timeout", "7", "--batch_size=8"), 0);
	TFJ_CHECK(c.peer_timeout_s == 7.0);
	TFJ_CHECK_INT(c.batch_size, 8);
	tfj_rtconfig_free(&c);
	/* Both spellings name one flag, so giving both is giving it twice. */
	TFJ_CHECK_INT(PARSE(&c, tfc_chief, "--peer-timeout", "5", "--peer_timeout", "6"),
		      TFJ_EINVAL);
	TFJ_CHECK(strstr(tfj_err_detail(), "twice") != NULL);
	TFJ_CHECK_INT(PARSE(&c, tfc_chief, "--peer.timeout", "5"), TFJ_EINVAL);
	TFJ_CHECK(strstr(tfj_rtconfig_usage(), "--peer-timeout") != NULL);
}

static void test_numbers_and_steps(void)
{
	struct tfj_rtconfig c;
	int64_t v;
	double d;

	TFJ_CHECK_INT(tfj_parse_i64(&v, "42", 0, 100, "x"), 0);
	TFJ_CHECK_INT(v, 42);
	TFJ_CHECK_LT(tfj_parse_i64(&v, "99999999999999999999", 0, INT64_MAX, "x"), 0);
	TFJ_CHECK(tfj_parse_i64(&v, " 4", 0, 100, "x") < 0 || v == 4);
	TFJ_CHECK_LT(tfj_parse_i64(&v, "", 0, 100, "x"), 0);
	TFJ_CHECK_INT(tfj_parse_double(&d, "0.5", 0, 1, "x"), 0);
	TFJ_CHECK_LT(tfj_parse_double(&d, "inf", 0, 1e300, "x"), 0);
	TFJ_CHECK_INT(PARSE(&c, tfc_chief, "--batch_size", "100", "--epochs", "2"), 0);
	TFJ_CHECK_INT(tfj_rtconfig_steps_for(&c, 60000), 1200);
	c.sync = 1;
	c.replicas_to_aggregate = 3;
	TFJ_CHECK_INT(tfj_rtconfig_steps_for(&c, 60000), 400);
	tfj_rtconfig_free(&c);
}

int main(void)
{
	TFJ_RUN(test_classic_flags);
	TFJ_RUN(test_mlp_large);
	TFJ_RUN(test_protocol);
	TFJ_RUN(test_towers);
	TFJ_RUN(test_overlap_modes);
	TFJ_RUN(test_tf_config);
	TFJ_RUN(test_rejects);
	TFJ_RUN(test_flag_spellings);
	TFJ_RUN(test_numbers_and_steps);
	return tfj_test_finish();
}
