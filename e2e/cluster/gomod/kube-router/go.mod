// Wrapper module: builds kube-router (its NetworkPolicy firewall is the test
// bed's NetworkPolicy engine) from the Go module proxy (see
// e2e/cluster/build-components and docs/testbed.md).
module tfjob.test/testbed/kube-router

go 1.21

require github.com/cloudnativelabs/kube-router/v2 v2.1.0
