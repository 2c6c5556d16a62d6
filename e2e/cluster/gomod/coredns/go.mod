// Wrapper module: builds coredns from the Go module proxy (see e2e/cluster/build-components).
module tfjob.test/testbed/coredns

go 1.25.0

require (
	github.com/coredns/coredns v1.12.4
)
