#!/bin/sh
# Checks the TFJob CRD's admission rules against a live API server:
# every manifest in valid/ must pass `kubectl apply --dry-run=server`, every
# one in invalid/ must be rejected. Needs KUBECONFIG pointing at a cluster
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
exit $fail
