// Package app wires the fleet: a multicluster-runtime manager on the
// management cluster, the kubeconfig-Secret provider that engages workload
// clusters, the memberctl reconcilers run for every engaged cluster, the
// shared replacement limiter, and the dashboard writer.
//
// # Setup
//
//	f, err := app.New(restConfig, cfg) // cfg from config/settings
//	err = f.Start(ctx)
//
// # Implementation details
//
//   - The provider is generic; this package fills its options: the
//     registration label, key and paused annotation from fleet/api/v1alpha1,
//     and the Scheme, watched kinds, access checks, cache narrowing and
//     RESTMapper from memberctl/operator (derived from workload.Kinds).
//   - operator.SetupMulticluster registers one EtcdMember and one
//     EtcdCluster controller for all clusters (multicluster-runtime shares
//     one queue).
//   - Each part's options come from config/settings, whose defaults are the
//     parts' own Default* values (a test checks the mapping keeps them).
//   - The registry turns each engaged cluster into a workload.Cluster whose
//     Gate is the shared limiter, whose Paused reads the Secret annotation
//     and the Fleet object, and whose Context ends on disengagement so
//     in-flight reconciles for a removed cluster stop.
//   - The limiter's grants wake the waiting member at once through a channel
//     source; the requeue-after is only the fallback.
//   - The dashboard is told of every cluster state change, of limiter
//     grants and of every EtcdCluster reconcile; it coalesces its writes.
//   - The limiter's etcdfleet_limiter_* series are registered on
//     controller-runtime's metrics registry while the manager runs.
//   - /metrics is served over HTTPS with controller-runtime's
//     filters.WithAuthenticationAndAuthorization unless --metrics-secure
//     is false (metricsserver.go): each scrape's token is reviewed by the
//     management apiserver, which costs a TokenReview and a
//     SubjectAccessReview per scrape (cached briefly by the filter).
//   - The dashboard records its Events (CredentialsExpiring) through the
//     local manager's recorder, on FleetClusters: in the registration
//     namespace only.
//
// # Trade-offs
//
// One active replica (leader election): the limiter is in-process, so
// several active replicas would each pace on their own.
package app
