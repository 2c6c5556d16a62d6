// Wrapper module: builds helm from the Go module proxy (see e2e/cluster/build-components).
module tfjob.test/testbed/helm

go 1.26.0

require helm.sh/helm/v3 v3.22.0
