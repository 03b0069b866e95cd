// The Go modules whose zips hold the upstream files the tests read (CRDs, charts' values.yaml) at
// the releases gpuplat/catalog/charts.py pins: e2e/upstream.py downloads them through the module
// proxy, checked against go.sum, when the upstream data directory is not beside the clone.
// Nothing here is built. Versions move with the catalog (tests/test_upstream.py checks both).
module gpuplat.e2e/tools/upstream-data

go 1.26.11

require (
	github.com/aws/karpenter-provider-aws v1.15.2
	github.com/k8snetworkplumbingwg/sriov-network-operator v1.6.0
	github.com/kedacore/keda/v2 v2.20.2
	github.com/prometheus-operator/prometheus-operator v0.93.1
	sigs.k8s.io/kueue v0.19.2
)
