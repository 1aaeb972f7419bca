package kubeconfigsecret

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metric names, registered on controller-runtime's metrics.Registry (served
// by the manager's metrics endpoint).
const (
	MetricEngageDuration = "etcdfleet_kubeconfigsecret_engage_duration_seconds"
	MetricProbeDuration  = "etcdfleet_kubeconfigsecret_probe_duration_seconds"
	MetricClusters       = "etcdfleet_kubeconfigsecret_clusters"
	MetricRightsMissing  = "etcdfleet_kubeconfigsecret_cluster_rights_missing"
	MetricUnconstrained  = "etcdfleet_kubeconfigsecret_cluster_unconstrained"
	MetricOverPrivileged = "etcdfleet_kubeconfigsecret_cluster_over_privileged"
	MetricUnwatched      = "etcdfleet_kubeconfigsecret_cluster_namespaces_not_granted"
)

var (
	engageDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    MetricEngageDuration,
		Help:    "Time from the start of a connection attempt (pre-flight) to the cluster being engaged, by Secret namespace.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"namespace"})
	probeDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    MetricProbeDuration,
		Help:    "Latency of workload-cluster health probes, by Secret namespace and result (success or failure).",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
	}, []string{"namespace", "result"})
	clustersGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: MetricClusters,
		Help: "Registered workload clusters by Secret namespace and state (the ClusterState Reason).",
	}, []string{"namespace", "state"})
	rightsMissing = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: MetricRightsMissing,
		Help: "Permissions of the access checks that an engaged cluster's credentials lacked at the last check (0: all granted), by Secret namespace and cluster.",
	}, []string{"namespace", "cluster"})
	unconstrained = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: MetricUnconstrained,
		Help: "1 while admission in a workload cluster admits writes its credentials must not be able to make (Options.Constraint), else 0, by Secret namespace and cluster.",
	}, []string{"namespace", "cluster"})
	overPrivileged = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: MetricOverPrivileged,
		Help: "Permissions a workload cluster's credentials hold that they must not (Options.ForbiddenChecks), at the last check, by Secret namespace and cluster.",
	}, []string{"namespace", "cluster"})
	unwatched = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: MetricUnwatched,
		Help: "Namespaces of a workload cluster that hold objects to manage but that its namespaced registration does not grant (Options.Unwatched), at the last look, by Secret namespace and cluster.",
	}, []string{"namespace", "cluster"})
)

func init() {
	metrics.Registry.MustRegister(engageDuration, probeDuration, clustersGauge, rightsMissing, unconstrained, overPrivileged, unwatched)
}

func setUnwatched(namespace, cluster string, n int) {
	unwatched.WithLabelValues(namespace, cluster).Set(float64(n))
}

// setClusterCounts publishes the counts of one provider's clusters by
// reason; every known reason is set, so a state that empties reads 0.
func setClusterCounts(namespace string, states map[string]*ClusterState) {
	counts := map[string]int{}
	for _, s := range states {
		counts[s.Reason]++
	}
	for _, r := range allReasons {
		clustersGauge.WithLabelValues(namespace, r).Set(float64(counts[r]))
	}
}

func setRightsMissing(namespace, cluster string, n int) {
	rightsMissing.WithLabelValues(namespace, cluster).Set(float64(n))
}

func setConstraint(namespace, cluster string, cs constraintState) {
	u := 0.0
	if cs.unconstrained != "" {
		u = 1
	}
	unconstrained.WithLabelValues(namespace, cluster).Set(u)
	n := 0
	if cs.overPrivileged != "" {
		n = strings.Count(cs.overPrivileged, "; ") + 1
	}
	overPrivileged.WithLabelValues(namespace, cluster).Set(float64(n))
}

// forgetRights drops a removed cluster's series.
func forgetRights(namespace, cluster string) {
	rightsMissing.DeleteLabelValues(namespace, cluster)
	unconstrained.DeleteLabelValues(namespace, cluster)
	overPrivileged.DeleteLabelValues(namespace, cluster)
}
