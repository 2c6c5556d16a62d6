/*
 * layout.c - variables, placement and layout fingerprint (layout.h).
 */
#include "task/layout.h"

#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>


static uint64_t mix(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ULL;
	}
	return h;
}

int tfj_layout_build(struct tfj_layout *out, const struct tfj_rtconfig *cfg)
{
	size_t i;
	uint64_t h;
	int32_t v32;
	int rc;

	memset(out, 0, sizeof(*out));
	/* The shapes follow from the spec: no model (nor compute handle) is built for them. */
	out->vars = calloc(TFJ_MODEL_MAX_TENSORS, sizeof(*out->vars));
	out->counts = calloc(TFJ_MODEL_MAX_TENSORS, sizeof(*out->counts));
	if (!out->vars || !out->counts) {
		rc = tfj_err_set(TFJ_ENOMEM, "layout: out of memory");
		goto out;
	}
	rc = tfj_model_shapes(out->vars, &out->nvars, TFJ_MODEL_MAX_TENSORS, &cfg->spec);
	if (rc)
		goto out;
	for (i = 0; i < out->nvars; i++) {
		out->counts[i] = out->vars[i].count;
		out->total += out->counts[i];
	}
	rc = tfj_placement_build(&out->place, out->counts, out->nvars, cfg->nps, cfg->placement,
				 cfg->min_slice);
	if (rc)
		goto out;
	/* Everything a ps and its clients must agree on, and nothing else. */
	h = tfj_placement_hash(&out->place, 0x7466a6f62ULL);
	for (i = 0; i < out->nvars; i++)
		h = mix(h, out->vars[i].name, strlen(out->vars[i].name));
	v32 = (int32_t)cfg->optim;
	h = mix(h, &v32, sizeof(v32));
	h = mix(h, &cfg->hp, sizeof(cfg->hp));
	v32 = cfg->sync | (cfg->lr_cosine << 1);
	h = mix(h, &v32, sizeof(v32));
	v32 = cfg->sync ? cfg->replicas_to_aggregate : 0;
	h = mix(h, &v32, sizeof(v32));
	v32 = cfg->nreplicas;
	h = mix(h, &v32, sizeof(v32));
	out->layout_hash = h;
out:
	if (rc)
		tfj_layout_free(out);
	return rc;
}

void tfj_layout_free(struct tfj_layout *p)
{
	if (!p)
		return;
	free(p->vars);
	free(p->counts);
	tfj_placement_free(&p->place);
	memset(p, 0, sizeof(*p));
}
