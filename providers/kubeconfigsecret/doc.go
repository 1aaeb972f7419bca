// Package kubeconfigsecret is a multicluster-runtime Provider that engages
// one workload cluster per kubeconfig Secret in the management cluster.
//
// # Setup
//
// A workload cluster is registered by a Secret in the provider's namespace
// labelled Options.Label: "true", with its kubeconfig under the data key
// Options.Key. The cluster's name is the Secret's name. The provider is
// generic: it imports nothing of etcdfleet, and the label, key, paused
// annotation, Scheme, watched kinds and access checks are its caller's
// (etcdfleet's manager fills them from fleet/api/v1alpha1 and memberctl).
// The kubeconfig must be self-contained (inline token or client
// certificate, certificate-authority-data); exec and auth-provider plugins
// and file references are refused, because whoever writes the Secret would
// otherwise run programs in, or read files of, the operator (such as its
// own token). insecure-skip-tls-verify and proxy-url are refused too
// (ReasonInsecureKubeconfig): either hands the credential to whoever sits
// on the path. Messages are redacted of every credential the kubeconfig
// holds, proxy user info included.
//
// ClusterState.Token is the bearer token's lifetime, read from its JWT
// claims (nbf or iat, and exp) without verifying the signature and without
// calling the cluster: it dates a warning, it decides nothing.
//
// Pre-flight checks every Options.AccessChecks permission cluster-wide and
// asks discovery whether every WatchedKinds kind is served, so missing
// permissions and CRDs are reported before anything is cached. The
// operator needs get/list/watch on Secrets in the namespace of the
// management cluster.
//
// Annotating the Secret Options.PausedAnnotation: "true" marks the cluster
// paused in its ClusterState; the cluster stays engaged and watched.
//
// With Options.Identify (KubeSystemUID: the kube-system Namespace's UID),
// pre-flight also reads the cluster's identity, and one cluster has one
// registration: a Secret whose kubeconfig reaches a cluster that another
// Secret of the namespace owns is refused with ReasonDuplicateCluster, its
// message naming that Secret, and a Warning Event on it. The owner is the
// Secret whose Options.IdentityAnnotation names the identity, else the
// oldest (rankClaimants), among this process's claims and those
// Options.RecordedClaims returns, so replicas and restarts agree; a Secret
// whose annotation names another identity is refused with
// ReasonIdentityMismatch. The owner keeps the cluster for as long as it is
// registered and its pre-flights read the same identity (also while it is
// disconnected or retrying), and an engaged Secret that a recorded owner
// outranks gives way at its next rights re-check; when the owner is removed, or its
// kubeconfig reaches another cluster, the refused Secrets are retried at
// once and the first of them to pass pre-flight engages. With
// Options.Claims (a ClaimStore shared by the replicas) the owner also
// engages only while it holds the identity's exclusive claim, refused
// with ReasonDuplicateCluster while another Secret holds it; it releases
// the claim once its engagement has ended, except when another replica
// took the Secret over, which keeps it. Requests to workload clusters
// carry Options.UserAgent's name for their purpose. The credentials
// then need get on the kube-system Namespace, granted cluster-wide even for
// a namespaced registration (a RoleBinding cannot grant it): a ClusterRole
// with resourceNames ["kube-system"] is enough, and an AccessCheck with
// that Name and ClusterScoped checks it.
//
// An engaged cluster's rights are looked at every AccessRecheckInterval:
// one SelfSubjectRulesReview per namespace of its scope, and, only when the
// rules differ from the last full check's (or the review is incomplete),
// every AccessCheck again. They are all asked again at once when a request
// of its clients (cache, reconcilers) is answered 403 Forbidden, and at
// least every AccessSweepInterval. Missing permissions keep the
// cluster engaged: they show in ClusterState.MissingRights, the gauge
// MetricRightsMissing and a Warning Event MissingRights on the Secret; their
// return in a Normal Event RightsRestored.
//
// Annotating it Options.NamespacesAnnotation: "a,b" registers credentials
// granted in those namespaces only: the cluster's caches watch just them,
// and pre-flight checks the permissions in each instead of cluster-wide,
// but for the ClusterScoped AccessChecks, which are asked cluster-wide.
//
// # Usage
//
//	opts := kubeconfigsecret.Options{
//		Namespace: "etcdfleet-system", Label: "example.com/kubeconfig", Key: "kubeconfig",
//		Scheme:       scheme,           // knows every watched kind
//		WatchedKinds: watched,          // every kind the controllers watch
//		AccessChecks: checks,           // list/watch of those, the writes, and more
//		Identify:     kubeconfigsecret.KubeSystemUID, // one registration per cluster
//		ClusterOptions: []cluster.Option{func(o *cluster.Options) { o.Cache.ByObject = narrowed }},
//		OnChange:       dashboard.Refresh,
//	}
//	p, err := kubeconfigsecret.New(opts)
//	mgr, err := mcmanager.New(cfg, p, mcmanager.Options{
//		Scheme: scheme,
//		// Cache only the labelled Secrets of the namespace, not every Secret.
//		Cache:          cache.Options{ByObject: opts.CacheByObject()},
//		LeaderElection: true, // only the leader connects to workload clusters
//	})
//	err = p.SetupWithManager(ctx, mgr)
//	// multicluster controllers: mcbuilder.ControllerManagedBy(mgr).For(...)...
//	err = mgr.Start(ctx)
//
// Reconcilers should bind their work on a cluster to p.Context(name): it is
// cancelled when that cluster is disengaged, so in-flight reconciles stop
// instead of acting through a cluster whose cache has stopped. States and
// State feed the dashboard; Get returns multicluster.ErrClusterNotFound for
// a cluster that is not engaged, which mcr's reconcile wrapper drops.
//
// # Implementation details
//
// A controller on the local manager reconciles Secrets by name. A Secret
// that is gone from the cache, no longer labelled, or being deleted
// disengages its cluster; deleting and un-labelling are the same, and no
// cluster outlives its Secret. (The upstream kubeconfig provider filters the
// label in a predicate on the new object, so un-labelling is ignored and a
// later delete of the unlabelled Secret leaks the cluster.) Any other
// Secret is handed to the cluster's connection owner, one goroutine per
// cluster, and reconcile returns at once: no cluster waits for another.
//
// The owner parses the kubeconfig with clientcmd and sets the clients'
// QPS, Burst and Timeout (30s: a timeout bounds calls that ignore contexts
// against a server that accepts connections but never answers). The
// cluster's cache gets an HTTP client without the Timeout, since client-go
// would cut every watch at it; its lists and watches end with the
// engagement context instead. Then, under
// PreflightTimeout, it asks for the server version and one
// SelfSubjectAccessReview per permission. Only then does it build the
// cluster.Cluster, start it, and sync the informers of WatchedKinds under
// SyncTimeout; and only then does it call mgr.Engage. mcr's Engage holds one
// controller-wide lock while each watch waits for its informer to sync, so a
// hung, refusing or forbidden cluster reaching it would stall every other
// cluster's engagement; here such a cluster fails its pre-flight instead, and
// Engage itself is bounded by SyncTimeout. A failed attempt sets the state's
// Reason and Message (credentials are removed from every message) and is
// retried after Backoff (1s doubling to 5m); a new kubeconfig in the Secret
// interrupts the wait, or the attempt, at once. At most
// MaxConcurrentConnects attempts run at once across the provider's
// clusters (16 by default): each takes a slot after its backoff and gives
// it back when the attempt has engaged or failed, so a manager that starts
// with hundreds of clusters registered connects them in waves rather than
// sending every pre-flight and initial list at once. Every step of an
// attempt has its timeout, so a cluster that never answers gives its slot
// back within PreflightTimeout and SyncTimeout.
//
// An engaged cluster is probed (GET /version) every ProbeInterval under
// ProbeTimeout. FailureThreshold failures in a row disengage it (its
// engagement context is cancelled, which stops its cache and the
// controllers' watches on it) and it reconnects after Backoff. A 401
// disengages at once, without waiting for the threshold, and reconnects
// with the Secret's current contents. Writing a rotated token into the
// Secret changes the kubeconfig's sha256, which re-engages the cluster at
// once, also in the middle of a backoff. Every cluster's context derives from a
// leader-elected runnable's context, never from a reconcile's, so a
// controller ReconciliationTimeout cannot disengage clusters.
//
// The identity is claimed after the rest of pre-flight, under the
// provider's lock, in a map from identity to Secret name; removing the
// Secret (or a pre-flight that reads another identity) releases it and
// interrupts the backoff of every Secret refused as a duplicate. The
// cluster's clients are built from a copy of its rest.Config whose
// transport signals every 403 response into a channel of one slot (never
// blocking the request); the owner goroutine then checks the AccessChecks,
// at most once a second (a cluster without rights answers every request
// 403), with one SelfSubjectAccessReview per permission and verb, all at
// once under ProbeTimeout.
//
// Options.Ownership shards the clusters among replicas. Each registered
// cluster is handed to the coordinator's Engage with a nil cluster and the
// connection owner's context; the coordinator engages the provider's own
// Aware for the clusters it decides this replica owns, and that context is
// the ownership: the owner connects only while it lives, disengages when
// it ends, and waits (Reason NotOwned) until it owns the cluster again.
// With multicluster-runtime's sharded coordinator that means HRW over the
// live replicas and a fence Lease per cluster, decided before anything is
// connected. The Secret controller and the runnable then run on every
// replica. mcr v0.24.1 derives the contexts of clusters started while
// handling one cluster's Engage from that cluster's context; a conn's
// context is cancelled with the cluster's name as cause, so an ownership
// that ends because another cluster was removed is claimed again. Every
// client of a connection sends through a gate that closes when the
// ownership ends, or earlier at Provider.Quiesce, which also waits for the
// requests in flight: a coordinator calls it before giving up a fence.
// Those include a removed Secret's connection, whose gate is kept until
// nothing is in flight through it, and a request that its context
// abandoned, which counts for a second more since its bytes may already
// be on the wire (the fence e2e saw such pre-flight requests reach the
// workload apiserver after the release).
// Quiesce holds for the rest of that ownership: an attempt retried after
// it (a pre-flight that failed, a new kubeconfig) begins with a closed
// gate, or waits for the next ownership, because the coordinator ends the
// ownership only after the fence is released.
//
// Metrics on controller-runtime's registry: engage and probe latency
// histograms, a gauge of clusters by state and one of each engaged
// cluster's missing permissions (see the Metric constants).
//
// # Trade-offs
//
// WatchedKinds must list every kind the multicluster controllers watch: a
// kind missing from it is synced inside mgr.Engage, under the shared lock,
// bounded only by SyncTimeout. A cluster is disengaged while it reconnects,
// so queued requests for it are dropped by mcr (the new informers' initial
// lists enqueue everything again). A cluster whose permissions were revoked
// after pre-flight stays engaged and is shown, not stopped: its refused
// calls fail and are retried, while disengaging would drop its caches (and
// the dashboard's view) and re-list everything after a brief RBAC gap.
// Rechecking costs one SelfSubjectRulesReview per namespace per
// AccessRecheckInterval per cluster while the rules stay the same, and one
// SelfSubjectAccessReview per permission and verb when they change, at a
// 403, or every AccessSweepInterval; all are answered by the workload
// apiserver's authorizer from memory. No recheck runs while the last
// probe went unanswered: against a hung apiserver each would wait out
// ProbeTimeout before the next probe, and FailureThreshold probes would
// take minutes instead of FailureThreshold intervals. The rules review stands in for the
// sweep because RBAC only grants: the rights the sweep found change only
// with the rules. An authorizer that cannot list its rules (a webhook)
// makes the review incomplete, and the sweep then runs every
// AccessRecheckInterval, as before the rules review was used. Duplicates are found within one
// provider (one namespace) only, and only with Identify: without it, two
// Secrets for one cluster both engage. Without RecordedClaims, other
// replicas' claims are unknown; without Options.Claims, two Secrets for
// one cluster that two replicas connect before either recorded its claim
// both engage until the next rights re-check. Secrets in one namespace only, and
// cluster names are Secret names, so they are unique.
// State lives in memory: after a restart or a change of leader, the new
// leader connects to every cluster afresh.
package kubeconfigsecret
