/*
 * test_dashboard.c - the chart's Grafana dashboard
 * (charts/tfjob-operator/files/dashboard.json) names only metrics that
 * /metrics exports.
 *
 * The exported names come from the page itself: the operator's parts as
 * main.c wires them (controller, report server, progress store, token
 * reviewer; report_stack.h) against the fake API server, rendered by
 * app/scrape.h, the function /metrics serves. Every "# TYPE" line gives a
 * family (a histogram also its _bucket, _sum and _count series), every
 * sample line its name. The dashboard's names are the metric names in each
 * panel target's PromQL and in each templating query's label_values(...).
 * The checker itself is tested first on expressions it must refuse.
 */
#include <string.h>

#include <tfj/file.h>
#include <tfj/json.h>

#include "app/scrape.h"
#include "fakeapi.h"
#include "report_stack.h"
#include "tfj_test.h"

#ifndef TFJ_DASHBOARD_JSON
#error "TFJ_DASHBOARD_JSON: the dashboard's path (operator/CMakeLists.txt)"
#endif

#define NAME_MAX_ 128
#define MAX_NAMES 1024

struct names {
	char v[MAX_NAMES][NAME_MAX_];
	size_t n;
};

static struct names exported;

static void add_name(struct names *s, const char *p, size_t len)
{
	if (len == 0 || len >= NAME_MAX_ || s->n >= MAX_NAMES)
		return;
	for (size_t i = 0; i < s->n; i++)
		if (strlen(s->v[i]) == len && !memcmp(s->v[i], p, len))
			return;
	memcpy(s->v[s->n], p, len);
	s->v[s->n++][len] = '\0';
}

static int has_name(const struct names *s, const char *p, size_t len)
{
	for (size_t i = 0; i < s->n; i++)
		if (strlen(s->v[i]) == len && !memcmp(s->v[i], p, len))
			return 1;
	return 0;
}

static int is_id0(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static int is_id(char c)
{
	return is_id0(c) || (c >= '0' && c <= '9');
}

/* The names a /metrics page declares or samples. */
static void page_names(struct names *s, const char *page)
{
	static const char *const hist[] = { "_bucket", "_sum", "_count", NULL };
	const char *line = page;

	while (line && *line) {
		const char *end = strchr(line, '\n'), *p = line;
		size_t n;

		if (!strncmp(line, "# TYPE ", 7)) {
			char buf[NAME_MAX_ + 16];

			p = line + 7;
			for (n = 0; is_id(p[n]); n++)
				;
			add_name(s, p, n);
			if (n < NAME_MAX_ && (!strncmp(p + n, " histogram", 10) ||
					       !strncmp(p + n, " summary", 8)))
				for (int i = 0; hist[i]; i++) {
					memcpy(buf, p, n);
					strcpy(buf + n, hist[i]);
					add_name(s, buf, strlen(buf));
				}
		} else if (*line != '#') {
			for (n = 0; is_id(p[n]); n++)
				;
			add_name(s, p, n);
		}
		line = end ? end + 1 : NULL;
	}
}

/* Skips from an opening bracket to after its match, strings inside included. */
static const char *skip_group(const char *p, char open, char close)
{
	int depth = 0;

	for (; *p; p++) {
		if (*p == '"' || *p == '\'') {
			char q = *p++;

			while (*p && *p != q)
				p += (*p == '\\' && p[1]) ? 2 : 1;
			if (!*p)
				return p;
		} else if (*p == open) {
			depth++;
		} else if (*p == close && --depth == 0) {
			return p + 1;
		}
	}
	return p;
}

static int word_is(const char *p, size_t n, const char *w)
{
	return strlen(w) == n && !memcmp(p, w, n);
}

/*
 * The metric names of a PromQL expression: identifiers outside strings,
 * label matchers ({...}), ranges ([...]) and grouping lists (by/without/
 * on/ignoring/group_left/group_right (...)) that are neither a function
 * call nor a keyword. Grafana's $variables are skipped. Each name missing
 * from `have` is counted (and printed); returns that count, and *found the
 * names seen.
 */
static int check_expr(const char *e, const struct names *have, int *found)
{
	static const char *const grouping[] = { "by", "without", "on", "ignoring", "group_left",
						"group_right", NULL };
	static const char *const keywords[] = { "bool", "and", "or", "unless", "offset", "inf",
						"nan", "Inf", "NaN", "atan2", NULL };
	const char *p = e;
	int missing = 0;

	*found = 0;
	while (*p) {
		if (*p == '"' || *p == '\'') {
			char q = *p++;

			while (*p && *p != q)
				p += (*p == '\\' && p[1]) ? 2 : 1;
			if (*p)
				p++;
		} else if (*p == '{') {
			p = skip_group(p, '{', '}');
		} else if (*p == '[') {
			p = skip_group(p, '[', ']');
		} else if (*p == '$') {
			for (p++; is_id(*p); p++)
				;
		} else if (*p >= '0' && *p <= '9') {
			while (is_id(*p) || *p == '.' || ((*p == '+' || *p == '-') && (p[-1] == 'e')))
				p++;
		} else if (is_id0(*p)) {
			const char *w = p, *q;
			size_t n;
			int kw = 0;

			while (is_id(*p))
				p++;
			n = (size_t)(p - w);
			for (q = p; *q == ' '; q++)
				;
			for (int i = 0; grouping[i]; i++)
				if (word_is(w, n, grouping[i])) {
					if (*q == '(')
						p = skip_group(q, '(', ')');
					kw = 1;
				}
			for (int i = 0; keywords[i]; i++)
				kw |= word_is(w, n, keywords[i]);
			/* An aggregation with its grouping first: sum by (le) (...). */
			if (!strncmp(q, "by", 2) || !strncmp(q, "without", 7)) {
				const char *r = q + (q[0] == 'b' ? 2 : 7);

				while (*r == ' ')
					r++;
				kw |= *r == '(';
			}
			if (kw || *q == '(')
				continue;
			(*found)++;
			if (!has_name(have, w, n)) {
				fprintf(stderr, "dashboard names %.*s, which /metrics does not export (in: %s)\n",
					(int)n, w, e);
				missing++;
			}
		} else {
			p++;
		}
	}
	return missing;
}

/* The checker refuses what it must, and accepts PromQL's other words. */
static void test_checker(void)
{
	struct names *have = calloc(1, sizeof(*have));
	int found;

	if (!have)
		return;
	add_name(have, "tfjob_operator_jobs_created_total", strlen("tfjob_operator_jobs_created_total"));
	add_name(have, "up", 2);
	TFJ_CHECK_INT(check_expr("sum by (job_namespace) (rate(tfjob_operator_jobs_created_total"
				 "{job_namespace=~\"$namespace\",x=\"a b\"}[$__rate_interval])) * 60",
				 have, &found), 0);
	TFJ_CHECK_INT(found, 1);
	TFJ_CHECK_INT(check_expr("tfjob_operator_jobs_creatd_total", have, &found), 1);
	TFJ_CHECK_INT(check_expr("histogram_quantile(0.99, sum by (le) (rate(nope_bucket[5m])))",
				 have, &found), 1);
	TFJ_CHECK_INT(check_expr("up and on (instance) missing_total offset 5m", have, &found), 1);
	TFJ_CHECK_INT(found, 2);
	TFJ_CHECK_INT(check_expr("1e3 * up > bool 0.5", have, &found), 0);
	free(have);
}

/* label_values(metric, label) or label_values(label): the metric, if any. */
static int check_template_query(const char *q, const struct names *have)
{
	const char *a = strstr(q, "label_values(");
	const char *comma;
	char expr[512];
	int found;

	if (!a)
		return 0;
	a += strlen("label_values(");
	if (!(comma = strchr(a, ',')) || (size_t)(comma - a) >= sizeof(expr))
		return 0;
	memcpy(expr, a, (size_t)(comma - a));
	expr[comma - a] = '\0';
	return check_expr(expr, have, &found);
}

static void test_dashboard_names_exported_metrics(void)
{
	const cJSON *panels, *panel, *targets, *t, *templ, *list, *v;
	cJSON *doc = NULL;
	char *text = NULL;
	size_t len = 0;
	int exprs = 0, found;

	TFJ_CHECK_OK(tfj_file_read(&text, &len, TFJ_DASHBOARD_JSON, 1 << 20, 0));
	TFJ_CHECK_OK(tfj_json_parse(&doc, text, len, 1 << 20));
	free(text);
	if (!doc)
		return;
	TFJ_CHECK_OK(tfj_json_get_array(&panels, doc, "panels"));
	cJSON_ArrayForEach(panel, panels) {
		if (tfj_json_get_array(&targets, panel, "targets"))
			continue;
		cJSON_ArrayForEach(t, targets) {
			const char *expr;

			TFJ_CHECK_OK(tfj_json_get_string(&expr, t, "expr"));
			if (!expr)
				continue;
			exprs++;
			TFJ_CHECK_INT(check_expr(expr, &exported, &found), 0);
			TFJ_CHECK_GE(found, 1); /* every query reads a metric */
		}
	}
	/* The six panels' queries, at least one each. */
	TFJ_CHECK_GE(cJSON_GetArraySize(panels), 6);
	TFJ_CHECK_GE(exprs, 6);
	if (!tfj_json_get_object(&templ, doc, "templating") && !tfj_json_get_array(&list, templ, "list"))
		cJSON_ArrayForEach(v, list) {
			const char *def;

			if (!tfj_json_opt_string(&def, v, "definition", "") && def)
				TFJ_CHECK_INT(check_template_query(def, &exported), 0);
		}
	cJSON_Delete(doc);
}

/* The page /metrics serves, from a live stack on the fake API server. */
static int render_page(struct tfj_kube *k)
{
	struct tfj_buf page = TFJ_BUF_INIT(1 << 20);
	struct rstack s;
	struct tfj_scrape sc = { 0 };

	if (rs_start(&s, k, NULL, "ml", NULL, "tfjob-report", NULL))
		return -1;
	sc.kube = k;
	sc.event_kube = k;
	sc.ctl = s.c;
	sc.report = s.srv;
	sc.prog = s.prog;
	sc.tr = s.hub.tr;
	sc.leading = 1;
	sc.identity = "test";
	TFJ_CHECK_OK(tfj_scrape_render(&sc, &page));
	page_names(&exported, tfj_buf_cstr(&page));
	/* The page is complete: names of each part are there. */
	TFJ_CHECK(has_name(&exported, "tfjob_operator_api_requests_total", 33));
	TFJ_CHECK(has_name(&exported, "tfjob_operator_workqueue_depth", 30));
	TFJ_CHECK(has_name(&exported, "tfjob_report_requests_total", 27));
	TFJ_CHECK(has_name(&exported, "training_operator_jobs_created_total", 36));
	tfj_buf_free(&page);
	rs_stop(&s);
	return 0;
}

int main(void)
{
	static struct fake F;
	struct tfj_kube *k;
	int rc;

	TFJ_RUN(test_checker);
	rc = fake_start(&F, "tok");
	if (fake_unavailable(&F, rc))
		return 77;
	TFJ_CHECK_INT(rc, 0);
	k = fake_client(&F, NULL);
	if (rc == 0 && k && render_page(k) == 0)
		TFJ_RUN(test_dashboard_names_exported_metrics);
	tfj_kube_free(k);
	fake_stop(&F);
	return tfj_test_finish();
}
