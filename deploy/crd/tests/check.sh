#!/bin/sh
# Checks the TFJob CRD's admission rules against a live API server:
# every manifest in valid/ must pass `kubectl apply --dry-run=server`, every
# one in invalid/ must be rejected, every one in strict/ (unknown fields in
# the pod template) must be refused under --validate=strict and accepted,
# pruned, under --validate=ignore; and `kubectl explain` must reach the
# template's container fields. Needs KUBECONFIG pointing at a cluster
# where deploy/crd/kubeflow.org_tfjobs.yaml is installed (e.g. the test bed:
# `. e2e/cluster/env`). Exits 77 (skipped) when no cluster answers.
set -u
here=$(cd "$(dirname "$0")" && pwd)
ns=${TFJOB_CRD_TEST_NS:-default}
kubectl get crd tfjobs.kubeflow.org >/dev/null 2>&1 || { echo "no cluster with the TFJob CRD"; exit 77; }
fail=0
for f in "$here"/valid/*.yaml; do
	if out=$(kubectl apply -n "$ns" --dry-run=server -f "$f" 2>&1); then
		echo "ok   valid   $(basename "$f")"
	else
		echo "FAIL valid   $(basename "$f"): $out"; fail=1
	fi
done
for f in "$here"/invalid/*.yaml; do
	if out=$(kubectl apply -n "$ns" --dry-run=server -f "$f" 2>&1); then
		echo "FAIL invalid $(basename "$f") was accepted"; fail=1
	elif ! echo "$out" | grep -q "is invalid"; then
		echo "FAIL invalid $(basename "$f"): not a validation error: $out"; fail=1
	else
		echo "ok   invalid $(basename "$f"): $(echo "$out" | tr '\n' ' ' | cut -c1-200)"
	fi
done
for f in "$here"/strict/*.yaml; do
	if out=$(kubectl apply -n "$ns" --dry-run=server --validate=strict -f "$f" 2>&1); then
		echo "FAIL strict  $(basename "$f") was accepted under --validate=strict"; fail=1
	elif ! echo "$out" | grep -q "unknown field"; then
		echo "FAIL strict  $(basename "$f"): not an unknown-field error: $out"; fail=1
	else
		echo "ok   strict  $(basename "$f"): $(echo "$out" | tr '\n' ' ' | cut -c1-200)"
	fi
	# Without strict validation the unknown field is pruned, template labels
	# kept (only .spec: the last-applied annotation holds the manifest as sent).
	if ! out=$(kubectl apply -n "$ns" --dry-run=server --validate=ignore -o jsonpath='{.spec}' -f "$f" 2>&1); then
		echo "FAIL strict  $(basename "$f") refused under --validate=ignore: $out"; fail=1
	elif echo "$out" | grep -q 'imagePullPolcy\|nodeSelectr'; then
		echo "FAIL strict  $(basename "$f"): the unknown field was kept"; fail=1
	elif grep -q 'labels:' "$f" && ! echo "$out" | grep -q '"labels":{"app":"mnist"}'; then
		echo "FAIL strict  $(basename "$f"): template labels pruned"; fail=1
	else
		echo "ok   strict  $(basename "$f"): pruned under --validate=ignore"
	fi
done
# The API server publishes a new CRD's schema a few seconds after it changes.
explained() {
	out=$(kubectl explain tfjob.spec.tfReplicaSpecs.template.spec.containers.imagePullPolicy 2>&1) &&
		echo "$out" | grep -qi "image pull policy"
}
tries=0
until explained || [ $tries -ge 30 ]; do
	tries=$((tries + 1)); sleep 1
done
if explained; then
	echo "ok   explain tfjob.spec.tfReplicaSpecs.template.spec.containers.imagePullPolicy"
else
	echo "FAIL explain tfjob.spec.tfReplicaSpecs.template.spec.containers.imagePullPolicy: $out"; fail=1
fi
exit $fail
