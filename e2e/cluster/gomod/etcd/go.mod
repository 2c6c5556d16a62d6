// Wrapper module: builds etcd from the Go module proxy (see e2e/cluster/build-components).
module tfjob.test/testbed/etcd

go 1.26.0

require (
	go.etcd.io/etcd/etcdctl/v3 v3.5.35
	go.etcd.io/etcd/server/v3 v3.5.35
)
