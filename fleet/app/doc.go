// Package app wires the fleet: a multicluster-runtime manager on the
// management cluster, the kubeconfig-Secret provider that engages workload
// clusters, the memberctl reconcilers run for every engaged cluster, the
// shared replacement limiter, and the dashboard writer.
//
// # Setup
//
//	f, err := app.New(restConfig, cfg) // cfg from fleet/settings
//	err = f.Start(ctx)
//
// # Implementation details
//
//   - The provider is generic; this package fills its options: the
//     registration label, key and paused annotation from fleet/api/v1alpha1,
//     and the Scheme, watched kinds, access checks, cache narrowing and
//     RESTMapper from memberctl/operator (derived from workload.Kinds).
//     Clusters are identified by their kube-system Namespace UID
//     (kubeconfigsecret.KubeSystemUID), so a cluster registered by two
//     Secrets is engaged once, and the access checks (with the reconcilers'
//     writes) are asked again with every probe, so that revoked permissions
//     show within one probe interval.
//   - operator.Setup registers one controller per reconciler (EtcdMember,
//     EtcdCluster, EtcdSnapshot, spec.backup, EtcdDefrag, spec.defrag) for
//     all clusters (multicluster-runtime shares one queue each): the same
//     wiring the single-cluster operator of the e2e suites runs.
//   - Each part's options come from its own config struct in fleet/settings
//     (limiter.Config.Options, kubeconfigsecret.ClusterConfig.Apply, ...),
//     whose defaults are the parts' own Default* values (a test checks the
//     mapping keeps them).
//   - The registry turns each engaged cluster into a workload.Cluster whose
//     Gate is the shared limiter, whose Slots are the shared snapshot
//     slots (limiter.Slots, apart from the Gate's tokens), whose Paused reads the Secret annotation
//     and the Fleet object, and whose Context ends on disengagement so
//     in-flight reconciles for a removed cluster stop.
//   - The limiter's grants wake the waiting member at once through a channel
//     source, and the snapshot slots' grants the waiting EtcdSnapshot; the
//     requeue-after is only the fallback.
//   - The dashboard is told of every cluster state change, of limiter
//     grants and of every EtcdCluster reconcile; it coalesces its writes.
//   - The limiter's etcdfleet_limiter_* series and the snapshot slots'
//     etcdfleet_snapshot_start* series are registered on
//     controller-runtime's metrics registry while the manager runs.
//   - /metrics is served over HTTPS with controller-runtime's
//     filters.WithAuthenticationAndAuthorization unless --metrics-secure
//     is false (metricsserver.go): each scrape's token is reviewed by the
//     management apiserver, which costs a TokenReview and a
//     SubjectAccessReview per scrape (cached briefly by the filter).
//   - The dashboard records its Events (CredentialsExpiring) through the
//     local manager's recorder, on FleetClusters: in the registration
//     namespace only.
//   - Sharded mode (sharding.enabled, shard.go): multicluster-runtime's
//     sharded coordinator is the provider's Options.Ownership, so a replica
//     connects only to the clusters it owns (HRW over the live replicas,
//     one fence Lease mcr-shard-<cluster> each, in the registration
//     namespace). peers.go is its peer registry (Leases mcr-peer-<id>),
//     timed by sharding.leaseDuration rather than mcr's fixed 30 s. The
//     Secret controller, the provider, the reconcilers, the limiter and the
//     dashboard's FleetCluster writes run on every replica; leader
//     election still picks the one that writes the Fleet and deletes
//     orphaned FleetClusters. The peer Leases also carry each replica's
//     limiter demand and claim; shareKeeper applies the limiter's part
//     that follows demand (fleet/limiter, "Following demand") and sets
//     the snapshot slots' share by the clusters engaged here.
//
// # Ownership across replicas
//
// multicluster-runtime #172: its sharded coordinator (v0.24.1, the latest
// release; the fix, #173, is not released) can let a replica reach
// clusters it does not own: mcr's own wiring connects every cluster
// before the coordinator decides, and the coordinator releases a fence
// concurrently with cancelling the engagement it guards. etcdfleet does
// not rely on either: the provider hands each registration to the
// coordinator before connecting (kubeconfigsecret.Options.Ownership), so
// a replica connects only after taking the cluster's fence; a fence
// release waits until the provider has quiesced the cluster (release.go:
// later requests are refused, and those in flight answered, up to 5 s),
// so nothing the replica sent arrives under the next owner's fence; and every
// request a replica sends a workload cluster names the replica in its
// user agent (UserAgent: "etcdfleet-manager/<purpose> (replica <id>)").
// The sharding e2e (test/e2e/fleet, shard_fences_test.go) reads the
// workload apiservers' audit logs and checks every such request against
// the fence Leases' history, through kills, graceful stops and rejoins:
// each arrived while its sender held the fence. The token rotation
// (fleet/rotation), leader-elected without sharding, runs on every replica
// when sharded and rotates only the registrations whose cluster this
// replica owns (rotation.Options.Owns), so it is no exception.
//
// # Duplicate registrations across replicas
//
// The provider decides which of several Secrets for one cluster owns it
// by a rank every replica computes alike (vouched, then oldest) over the
// claims recorded on the FleetClusters (dashboard.RecordedClaims). That
// alone lets two Secrets for one cluster that two replicas connect at the
// same moment both engage, until the next rights re-check makes the
// second-ranked one give way: neither had seen the other's claim
// recorded. claims.go closes that window with one claim Lease per cluster
// identity, etcdfleet-claim-<hash>, whose holder is the Secret
// (kubeconfigsecret.Options.Claims):
//
//   - A Secret engages only once it holds the claim: created if absent
//     (Create is atomic, so of two racing replicas one wins and the other
//     reads the winner), adopted if it already names this Secret (the
//     replica that takes over a Secret's fence takes over its claim).
//   - Another holder is displaced only when it can no longer be running
//     the cluster: its Secret is gone or records another identity, and no
//     replica holds its fence (a replica tearing it down still does).
//   - A holder released its claim once its engagement ended (the Secret
//     removed, outranked, reconnecting), and never on losing ownership,
//     since the next owner runs the same Secret under the same claim.
//   - A refused Secret records its claim, so a holder that it outranks
//     gives way at its next rights re-check and releases; the refused one
//     then takes the claim at its next retry.
//
// Why a Lease on the management cluster rather than the alternatives:
// recording the claim and reading the others back cannot stop two
// replicas that each read before the other wrote; a claim object on the
// workload cluster would need write access there that the credentials do
// not otherwise need; and a peer-Lease field would be only as current as
// the peers' last renewal. The claim is as safe as the fences it leans on,
// and costs one Get per connection attempt, plus a write when it changes
// hands. Anyone who may write Leases in the registration namespace can
// hold a claim and so refuse a registration, as they can hold a fence.
//
// # Isolation of clusters
//
// Every cluster shares the two controllers' workers (settings.Workers).
// A cluster whose apiserver hangs mid-heal keeps the reconciles of its
// members that the limiter granted, or whose status changed, blocked in
// API calls, and the provider drops it only after FailureThreshold failed
// probes (50 s by default). Without a bound, such a cluster with more such
// members than there are workers would hold every worker that long, and
// the rest of the fleet would stop healing (the fleet e2e measured 32 s
// against the 21 s the limiter allows, hung in the worst moment). Three
// bounds, all set here from the settings, keep it to itself:
//
//   - WorkersPerCluster (operator.Options) caps one cluster's
//     reconciles in flight in each controller. A request over the cap
//     returns at once and is woken when its cluster's slot frees, so the
//     hung cluster holds at most WorkersPerCluster workers, whatever its
//     size, and the others keep the rest. This is what isolates; the two
//     timeouts below only bound how long each held worker stays held.
//   - Clusters.RequestTimeout ends each API call of the reconcilers' client
//     (operator.NewClientWithTimeout as the cluster's NewClient). The
//     provider's rest.Config.Timeout (30 s) bounds what ignores contexts;
//     the caches' watches do without it, since client-go would cut them
//     at it, and end with the engagement instead.
//   - ReconcileTimeout (controller-runtime's ReconciliationTimeout) ends a
//     reconcile's context, for reconciles that chain many slow calls.
//
// Disengagement after the probes fail remains what frees the hung
// cluster's limiter tokens (ForgetCluster) and stops its reconciles for
// good; isolation does not wait for it, so a slow probe setting costs the
// hung cluster only.
//
// # Trade-offs
//
// Without sharding, one replica is active (leader election) and the
// others stand by; with it, every replica is active on its own clusters.
// Sharding costs limiter fairness across replicas (each paces its share),
// makes a cluster whose replica dies wait up to one fence lease duration
// plus a sync interval, plus its connection time, and at cold start lets
// the first replica up take clusters that the next ones then take back
// (never two at once: the fences). Ownership assumes the replicas' clocks
// agree to well under the lease duration, as Lease-based election does.
//
// WorkersPerCluster also caps a healthy cluster: a big one heals with at
// most that many reconciles at once. The limiter paces replacements
// fleet-wide anyway (2/s by default), so 4 of 32 workers costs it nothing
// measurable; the bound that matters is for
// several clusters hung at once, which together hold up to their number
// times WorkersPerCluster workers, each for at most RequestTimeout per
// call, until they are disengaged. A legitimately slow API call (a loaded
// apiserver taking over RequestTimeout) fails and is retried with backoff
// instead of waiting.
package app
