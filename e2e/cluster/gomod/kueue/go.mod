// Wrapper module: builds Kueue's manager (sigs.k8s.io/kueue/cmd/kueue, the
// Kueue test bed, e2e/cluster/kueue) from the Go module proxy (see
// e2e/cluster/build-components and docs/testbed.md). Kueue is built with its
// own k8s.io dependencies (v0.35): it is a client of the API server only, and
// the client libraries speak to a 1.34 server.
module tfjob.test/testbed/kueue

go 1.26.0

require sigs.k8s.io/kueue v0.17.0 // indirect
