// Package e2eutil holds what the e2e suites share: building EtcdClusters,
// waiting for them, reaching their etcd through port-forward, checking keys,
// and recording Pod events from the apiserver's side (a watch), so that
// tests count what really happened rather than what the operator believes.
package e2eutil
