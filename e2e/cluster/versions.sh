# shellcheck shell=bash disable=SC2034
# Versions of every component the test bed builds. Sourced by the scripts in
# this directory. Changing a version changes the cache key, so the next
# `up` builds the new one beside the old one.
# Kubernetes: newest 1.34 patch served by the module proxy. 1.34 is the last
# minor that supports containerd 1.6 (Debian bookworm) and cgroup v1 by default.
K8S_VERSION=v1.34.12
# Staging modules (k8s.io/api, ...) carry the same patch with major 0.
K8S_STAGING_VERSION=v0.34.12
ETCD_VERSION=v3.5.35
COREDNS_VERSION=v1.12.4
HELM_VERSION=v3.22.0
# Tag of the locally built sandbox ("pause") image.
PAUSE_TAG=3.10-tfjob
# kubernetes-sigs/scheduler-plugins (the coscheduling plugin for gang
# scheduling tests): the release for Kubernetes 1.34. The module proxy serves
# it by exact version only.
SCHED_PLUGINS_VERSION=v0.34.7
# NetworkPolicy engine: kube-router's firewall (iptables + ipset) alone, as
# a host daemon. sig-network's kube-network-policies needs the nftables
# `queue` expression, which this kernel lacks (CONFIG_NFT_QUEUE unset;
# docs/testbed.md, "NetworkPolicy engine"). v2.1.0 is what the module proxy
# serves as latest here.
KUBE_ROUTER_VERSION=v2.1.0
# kwok (kubernetes-sigs/kwok): fake nodes and pods for the scale test bed
# (e2e/cluster/kwok, on demand). Exact version; the module proxy serves it.
KWOK_VERSION=v0.8.0
# Kueue (kubernetes-sigs/kueue): job queueing, quota and preemption for the
# Kueue tests (e2e/cluster/kueue, on demand). v0.17.0 is the version the
# module proxy serves (exact version); it still enables the kubeflow.org/tfjob
# integration by default.
KUEUE_VERSION=v0.17.0
