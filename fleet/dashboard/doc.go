// Package dashboard keeps the management cluster's dashboard API up to
// date: one FleetCluster per registered workload cluster and the Fleet
// singleton, so `kubectl get fleetclusters -A` and `kubectl get fleet` show
// the health of every etcd cluster in the fleet and the state of the shared
// replacement limiter.
//
// # Setup
//
// The fleet wiring implements Source (the registered Secrets with their
// last probe, one of them by key, and each engaged cluster's EtcdClusters
// and EtcdMembers from its cache) and sets the Writer up on the manager
// of the management cluster:
//
//	w := dashboard.New(mgr.GetClient(), src, lim, dashboard.Options{}) // lim: *limiter.Limiter, or nil
//	err := w.SetupWithManager(mgr) // a leader-elected controller named "dashboard"
//
// The client must read from the manager's cache and its scheme must know
// core/v1 and fleet/api/v1alpha1. The manager needs RBAC to get, list,
// watch, create, update and delete fleetclusters and fleets, and to update
// their status (see the kubebuilder markers in writer.go). Zero Options
// fields take the Default* constants (DefaultOptions has them all).
//
// Clusters are named by Options.ClusterKey, "<namespace>/<name>" of the
// Secret unless set: that is the name Notify, Source.Cluster and
// Source.EtcdObjects take and the key of the limiter's WaitingByCluster
// and ThrottledByCluster, so it must match the cluster name the wiring
// gives gate.Request.Cluster.
//
// # Usage
//
// Call Notify(cluster) whenever a cluster's registration or connection
// changes, an EtcdCluster or EtcdMember of it changes, or the limiter
// granted it a replacement. It never blocks and is never dropped; calls
// are merged. What nobody notifies about (limiter counts, probe times) is
// picked up by the next Options.Resync, when every cluster is recomputed
// anyway. FleetPaused reads the Fleet's spec.paused from the manager's
// cache for the wiring to honour.
//
// A FleetCluster has the Secret's namespace and name and an owner
// reference to it (not a controller, not blocking deletion), so it is
// garbage-collected with the Secret. One whose Secret is no longer
// registered (the label was removed) is deleted after Options.OrphanGrace.
// Its status:
//
//   - Connected: from ClusterInfo (reason and message as the wiring gave
//     them; ProbeSucceeded/ProbeFailed when it gave none or an invalid one).
//   - Ready: True (Healthy) when connected and every EtcdCluster is quorate
//     and members ready = desired; otherwise False with DuplicateCluster
//     (ClusterInfo.Duplicate: another Secret registered the cluster, the
//     message names it), Unconstrained (refused: admission admits what the
//     credentials must not write), MissingRights (connected, but the
//     credentials lack permissions), NotConnected, EtcdStatusUnknown (connected, but the
//     cluster's cache cannot be read), QuorumLost or MembersUnhealthy.
//     Degraded: True with QuorumLost or MembersUnhealthy. message repeats
//     the Ready message when not Ready.
//   - Authorized: False/MissingRights listing ClusterInfo.MissingRights,
//     True/RightsGranted when connected with none missing, else unchanged.
//   - Constrained: False/Unconstrained (ClusterInfo.Unconstrained) or
//     False/OverPrivileged (ClusterInfo.OverPrivileged), True/Constrained
//     once a check found neither, else unchanged.
//   - clusterID from ClusterInfo.ClusterID (the last known one is kept).
//   - Paused: True with FleetPaused (Fleet spec.paused) or ClusterPaused
//     (ClusterInfo.Paused, from the Secret), else False/NotPaused.
//   - The counts of SummarizeEtcd, membersSummary "<ready>/<desired>", and
//     replacementsWaiting/replacementsThrottled from the limiter. While a
//     cluster is not connected or its etcd objects cannot be read, the last
//     known counts are kept.
//   - Backups (SummarizeBackups), over the EtcdClusters with spec.backup
//     only: etcdClustersWithBackup; etcdClustersBehindBackup (BackedUp
//     False, behind schedule or failed); etcdClustersNeverBackedUp (no
//     status.backup.lastSuccessfulTime); oldestLastBackupTime, the oldest
//     of those times (a time, so the status changes only when a backup
//     completes; the printer column is a date, so kubectl shows its age);
//     and backupSummary for kubectl: never, behind or ok.
//
// The Fleet (created unpaused if missing) counts clusters total,
// connected, quorate (connected with every EtcdCluster quorate) and
// degraded (Degraded=True); shows the limiter (rate such as "2/s" or
// "1/30s", burst, whole tokens available, requests waiting); sums
// replacementsTotal; counts clustersBehindBackupSchedule (clusters with
// an EtcdCluster behind its backup schedule); and lists up to 10 clusters
// that are not Ready, worst first: lost quorum (most EtcdClusters lost
// first), not connected (the Connected reason), etcd status unknown, then
// unready members (most missing first), each rank by namespace and name. Its Ready, Degraded and
// Paused conditions summarise the same.
//
// # Implementation details
//
// SummarizeEtcd is pure. An EtcdCluster is quorate when its Available
// condition is True, or when the ready non-learner members in
// status.members reach a majority (memberctl/etcd.HasQuorum) of
// max(spec.replicas, voters), as the cluster controller counts quorum; one
// scaled to 0 replicas is paused on
// purpose and ranks as healthy. States are ordered quorum lost,
// unavailable, degraded (fewer ready than desired), healthy, then by
// namespace and name, and cut to MaxEtcdClusterStates (the counts cover
// every cluster).
//
// The Writer is a controller-runtime controller with one worker on the
// manager of the management cluster, leader-elected, so only the leader
// writes. Its workqueue holds typed requests, at most one of each: one per
// cluster key (its FleetCluster), one for the Fleet, one for the orphan
// collection and one resync.
//
//   - Sources: a source.TypedFunc hands Notify the queue (a channel
//     source's buffer is bounded: a full one would block the limiter's
//     grant hook or drop the call) and queues the first resync, which
//     covers Notify calls made before the controller started; a
//     source.TypedKind on the Fleet queues a resync when its generation
//     changes (spec.paused).
//   - Pacing: the queue's rate limiter is a pacer that holds every request
//     but the resync until MinInterval after its last reconcile began,
//     from time alone, so a burst of Notify calls neither adds writes nor
//     pushes a request back. Notify and the other requests add through it
//     (AddRateLimited); the reconcile checks it again, so a request added
//     otherwise waits too (RequeueAfter). Each reconcile makes at most one
//     write, so each object is written at most once per MinInterval and
//     the last write carries the latest state.
//   - The resync lists Source.Clusters, takes a limiter snapshot, queues
//     every cluster, the Fleet and the orphan collection, forgets
//     unregistered clusters, and comes back after Resync (RequeueAfter).
//   - A cluster request looks its ClusterInfo up (Source.Cluster), reads
//     its etcd objects (connected clusters only) and makes at most one
//     write: create the FleetCluster, fix its owner, or update its status.
//     The recomputed status is compared with the cached FleetCluster's
//     using equality.Semantic, with times truncated to the second as the
//     apiserver stores them, and a lastProbeTime that moved by less than
//     ProbeRefresh ignored; only a difference is written, with Update on
//     the status subresource at the cached resourceVersion. A status that
//     differs from the one computed before queues the Fleet. A failed or
//     unfinished write comes back after MinInterval. An unregistered key
//     drops the cluster from the Fleet and queues the orphan collection.
//   - The Fleet request creates a missing Fleet (unpaused), or aggregates
//     the latest status of every registered cluster and writes it if it
//     changed.
//   - The orphan collection deletes FleetClusters unregistered for
//     OrphanGrace (with a UID precondition) and comes back when the next
//     is due.
//   - tokenExpiresAt and CredentialsExpiring come from ClusterInfo's token
//     lifetime (credentials.go): True with less than
//     CredentialsExpiringFraction of it left, absent without one. Their
//     messages hold fixed dates only, so time alone causes no writes. The
//     condition turning True records a Warning Event on the FleetCluster
//     (Options.Recorder), once per transition, after the status write.
//   - Limiter snapshots copy a map entry per cluster, so cluster requests
//     share the last one unless a Notify came since; the resync and the
//     Fleet take a fresh one.
//
// # Trade-offs
//
//   - The dashboard lags reality by up to MinInterval (2 s), plus up to
//     Resync (10 s) for what nobody Notifies about. A Notify right after a
//     recomputation that wrote nothing still waits out MinInterval: the
//     pacer counts recomputations, not only writes, which bounds the CPU
//     spent per cluster as well as the writes.
//   - A new FleetCluster shows no status for one MinInterval: creating it
//     is a write, so its status is the next one.
//   - Comparing against the cache can see an object older than our last
//     write; the status write then fails on its resourceVersion (logged at
//     V(1)) and is retried after MinInterval, rather than being compared
//     against memory that would miss anyone else's edits.
//   - Unregistered FleetClusters linger for OrphanGrace (30 s), so that a
//     wiring which lists its Secrets only after the Writer starts does not
//     delete every FleetCluster, and their last known state, on a restart.
//     The orphan collection is paced as one request, not per object: a
//     Secret registered again just as its orphan is deleted can see its
//     FleetCluster created within MinInterval of the delete.
//   - A disconnected cluster's counts are as old as its last contact; the
//     Ready and Connected conditions say so. replacementsThrottled keeps
//     its last value when the limiter has forgotten a disconnected cluster.
//   - Ready requires the member sums to match, so a cluster with one
//     EtcdCluster above and one below its size can read Ready; the
//     per-cluster states list still shows the short one as degraded.
//   - One worker writes serially. A resync of thousands of clusters is
//     thousands of cache reads and comparisons but writes only what
//     changed; during a fleet reboot the writes queue behind each other
//     and each carries the latest state when its turn comes.
//   - The Fleet is aggregated from this replica's view of every cluster,
//     at most once per MinInterval, from Source.Clusters.
//   - With Options.Sharded the writer runs on every replica: each writes
//     the FleetClusters of the clusters it owns (ClusterInfo not
//     OwnedElsewhere; status.replica from ClusterInfo.Replica), and the
//     leader (the manager's Elected channel) writes the Fleet, reading the
//     other replicas' rows from its cache, with status.replicas counted
//     from the rows' status.replica, and collects orphans. A row keeps the
//     last owner's name until the new owner writes it, so right after a
//     takeover the Fleet's counts lag by up to MinInterval. The Fleet's
//     limiter shows the leader's own share.
package dashboard
