// Wrapper module: builds kwok (fake nodes and pods for the scale test bed,
// e2e/cluster/kwok) from the Go module proxy (see
// e2e/cluster/build-components and docs/testbed.md). kwok is built with its
// own k8s.io dependencies (v0.36): it is a client of the API server only, and
// the client libraries speak to a 1.34 server.
module tfjob.test/testbed/kwok

go 1.26.0

require sigs.k8s.io/kwok v0.8.0
