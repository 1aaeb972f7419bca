// Package dashboard keeps the management cluster's dashboard API up to
// date: one FleetCluster per registered workload cluster and the Fleet
// singleton, so `kubectl get fleetclusters -A` and `kubectl get fleet` show
// the health of every etcd cluster in the fleet and the state of the shared
// replacement limiter.
//
// # Setup
//
// The fleet wiring implements Source (the registered Secrets with their
// last probe, and each engaged cluster's EtcdClusters and EtcdMembers from
// its cache) and adds the Writer to the manager of the management cluster:
//
//	w := dashboard.New(mgr.GetClient(), src, lim, dashboard.Options{}) // lim: *limiter.Limiter, or nil
//	_ = mgr.Add(w) // leader-elected
//
// The client must read from the manager's cache and its scheme must know
// core/v1 and fleet/api/v1alpha1. The manager needs RBAC to get, list,
// watch, create, update and delete fleetclusters and fleets, and to update
// their status (see the kubebuilder markers in writer.go). Zero Options
// fields take the Default* constants.
//
// Clusters are named by Options.ClusterKey, "<namespace>/<name>" of the
// Secret unless set: that is the name Notify and Source.EtcdObjects take
// and the key of the limiter's WaitingByCluster and ThrottledByCluster, so
// it must match the cluster name the wiring gives gate.Request.Cluster.
//
// # Usage
//
// Call Notify(cluster) whenever an EtcdCluster or EtcdMember of a cluster
// changes (from an event handler, say); it never blocks and calls are
// merged. Changes of a ClusterInfo and of the limiter's numbers are
// noticed without Notify at the next pass, which is at the latest the next
// Options.Resync, when everything is re-read anyway. FleetPaused reads the Fleet's
// spec.paused from the manager's cache for the wiring to honour.
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
//     and members ready = desired; otherwise False with NotConnected,
//     EtcdStatusUnknown (connected, but the cluster's cache cannot be
//     read), QuorumLost or MembersUnhealthy. Degraded: True with QuorumLost
//     or MembersUnhealthy. message repeats the Ready message when not Ready.
//   - Paused: True with FleetPaused (Fleet spec.paused) or ClusterPaused
//     (ClusterInfo.Paused, from the Secret), else False/NotPaused.
//   - The counts of SummarizeEtcd, membersSummary "<ready>/<desired>", and
//     replacementsWaiting/replacementsThrottled from the limiter. While a
//     cluster is not connected or its etcd objects cannot be read, the last
//     known counts are kept.
//
// The Fleet (created unpaused if missing) counts clusters total,
// connected, quorate (connected with every EtcdCluster quorate) and
// degraded (Degraded=True); shows the limiter (rate such as "2/s" or
// "1/30s", burst, whole tokens available, requests waiting); sums
// replacementsTotal; and lists up to 10 clusters that are not Ready, worst
// first: lost quorum (most EtcdClusters lost first), not connected (the
// Connected reason), etcd status unknown, then unready members (most
// missing first), each rank by namespace and name. Its Ready, Degraded and
// Paused conditions summarise the same.
//
// # Implementation details
//
// SummarizeEtcd is pure. An EtcdCluster is quorate when its Available
// condition is True, or when the ready non-learner members in
// status.members reach a majority of max(spec.replicas, voters), as the
// cluster controller counts quorum; one scaled to 0 replicas is paused on
// purpose and ranks as healthy. States are ordered quorum lost,
// unavailable, degraded (fewer ready than desired), healthy, then by
// namespace and name, and cut to MaxEtcdClusterStates (the counts cover
// every cluster).
//
// The Writer runs one goroutine. A pass reads Source.Clusters, the
// limiter snapshot and the Fleet, and marks dirty every cluster that was
// notified, whose ClusterInfo (bar lastProbeTime) or limiter numbers
// changed, or all of them on a resync or when spec.paused flipped. A dirty
// cluster is recomputed from its cache only when its FleetCluster may be
// written (below); otherwise it stays dirty and the loop wakes when it
// may. A recomputed status is compared with the cached FleetCluster's
// using equality.Semantic, with times truncated to the second as the
// apiserver stores them, and a lastProbeTime that moved by less than
// ProbeRefresh ignored. Only a difference is written, with Update on the
// status subresource at the cached resourceVersion. The Fleet is
// recomputed from the latest cluster statuses whenever one changed.
//
// Every write (create, owner fix, status update, delete; failed attempts
// included) stamps its object, and the next write of that object waits
// Options.MinInterval. So a burst of changes costs at most one write per
// object per MinInterval and the last write carries the latest state:
// during a fleet reboot the management apiserver sees a steady trickle,
// not a storm. A pass woken by Notify starts at least 100 ms after the
// previous one, so a burst of Notify calls costs one pass.
//
// # Trade-offs
//
//   - The dashboard lags reality by up to MinInterval (2 s), plus up to
//     Resync (10 s) for what nobody Notifies about, including a change of
//     the Fleet's spec.paused (FleetPaused itself reads the cache at once).
//   - A new FleetCluster shows no status for one MinInterval: creating it
//     is a write, so its status is the next one.
//   - Comparing against the cache can see an object older than our last
//     write; the status write then fails on its resourceVersion (logged at
//     V(1)) and is retried after MinInterval, rather than being compared
//     against memory that would miss anyone else's edits.
//   - Unregistered FleetClusters linger for OrphanGrace (30 s), so that a
//     wiring which lists its Secrets only after the Writer starts does not
//     delete every FleetCluster, and their last known state, on a restart.
//   - A disconnected cluster's counts are as old as its last contact; the
//     Ready and Connected conditions say so. replacementsThrottled keeps
//     its last value when the limiter has forgotten a disconnected cluster.
//   - Ready requires the member sums to match, so a cluster with one
//     EtcdCluster above and one below its size can read Ready; the
//     per-cluster states list still shows the short one as degraded.
//   - The Fleet is aggregated from this replica's view of every cluster;
//     with thousands of clusters one pass costs a few thousand map lookups,
//     and each write is one small status update.
package dashboard
