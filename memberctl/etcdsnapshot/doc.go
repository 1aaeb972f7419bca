// Package etcdsnapshot reconciles EtcdSnapshots: one snapshot of an
// EtcdCluster, taken once by a Job in the cluster's namespace and stored in
// S3-compatible object storage or on a PVC.
//
// # Setup
//
// memberctl/operator.Setup registers the Reconciler with the watches of
// workload.Kinds: EtcdSnapshots and the Jobs they own. Options.Image must
// be etcdfleet's image (the manager's agentImage setting), which carries
// etcdfleet-agent.
//
// # Usage
//
// Create an EtcdSnapshot naming the cluster and a location; watch
// status.phase go Pending → Started → Complete (status.artifact has the
// uri, size, sha256 and revision) or Failed (the Ready condition says why).
// A final phase is never left: a new EtcdSnapshot is the retry.
//
// # Implementation details
//
//   - Pending, before its Job exists (duplicate.go): a snapshot whose
//     location (URI) is another live EtcdSnapshot's in the namespace (any
//     not Failed, those being deleted included) fails with
//     DuplicateLocation and a Warning Event, and no Job starts. Of two
//     that have not started, the older goes on.
//   - Pending: the cluster must exist and have a member with a Pod; until
//     then the snapshot waits (ClusterNotFound) and is looked at again
//     every Options.Requeue.
//   - Pending, with a member to dial: a slot is asked of the cluster's
//     gate.Slots (workload.Cluster.Slots; the fleet's limiter.Slots bounds
//     the snapshots running fleet-wide). Without one the snapshot stays
//     Pending with Ready=False WaitingForSlot, whose message carries the
//     gate's reason (gate.Decision.Reason: which limit or cap holds it),
//     and requeues after the gate's delay. The slot is held while Started (re-taken on every
//     reconcile, so a restarted manager counts the Jobs already running)
//     and released at a terminal phase or when the EtcdSnapshot is gone;
//     it expires at the Job's activeDeadlineSeconds plus a minute, so a
//     lost release never halts backups.
//   - The Job (<snapshot>-snapshot, controlled by the EtcdSnapshot) runs
//     `etcdfleet-agent snapshot-agent` (package memberctl/snapshot/agent)
//     against the members' client URLs, with the cluster's CA and operator
//     client certificate and the S3 credentials as Secret volumes, never as
//     environment variables. It has no ServiceAccount token: the agent never
//     talks to the apiserver.
//   - With spec.memberName the Job dials that member alone and the agent
//     reads its revision serializably (--single-member): a survivor of a
//     lost majority has no leader to serve a linearizable read, and the
//     snapshot comes from the same member. The snapshot waits
//     (ClusterNotFound) while that member has no Pod.
//   - The agent reports by its termination message: the Result as JSON, or
//     its error. Once the Job is Complete or Failed the reconciler reads the
//     newest Pod of that outcome straight from the apiserver (the cache may
//     not hold its final status yet) and records the artifact (with the S3
//     object's ETag) or the error. An agent that found its location
//     already taken (its message starts "ObjectExists: ") fails the
//     snapshot with the reason ObjectExists and a Warning Event naming
//     the key: nothing is ever overwritten.
//   - A Job that disappears while Started fails the snapshot
//     (SnapshotJobLost): its outcome is unknown and it is never re-run.
//   - Status writes use optimistic locking (Update), so a final phase is
//     written once.
//   - deletionPolicy Delete (cleanup.go): the snapshot carries the
//     finalizer FinalizerSnapshotCleanup. Once deleted, a snapshot Job still
//     running is waited for, then a cleanup Job (<snapshot>-cleanup, the
//     same agent with --delete and --etag, no etcd access) removes the S3
//     object, only if it still has the artifact's ETag, or the file, and
//     the finalizer is dropped. An object replaced by someone else is left
//     and the cleanup fails (CleanupFailed) naming it. A snapshot that never got a Job
//     stored nothing and is let go at once; one controlled by an EtcdCluster
//     that is being deleted keeps its stored snapshot (an Event says so).
//     A failed cleanup sets CleanedUp=False CleanupFailed and a Warning
//     Event; the Job is replaced after Options.CleanupRetry. Nothing waits
//     for it: the cluster's reconcilers never look at deleted snapshots.
//   - verify.go builds the Job (<snapshot>-verify, controlled by the
//     EtcdSnapshot) that the EtcdCluster reconciler runs before a restore
//     after total loss, and memberctl/etcdbackup's restore drill on
//     spec.backup.verify's schedule: the same agent with --check-sha256
//     (and --etag, --check-revision, --drill-dir) reads the stored copy
//     back against the artifact, restores it into a throwaway etcd on an
//     emptyDir and reads its revision, without access to the cluster's
//     members (restore.Drill). ReadVerifyJob reads its outcome (the
//     revision and duration from the termination message). Verification
//     is the one owner of these Jobs' lifecycle for both callers: it starts
//     one, returns an outcome that ended at or after the caller's "since",
//     and deletes an older one so that the next call starts afresh.
//     CompleteNewestFirst is the order both try snapshots in.
//
// # Trade-offs
//
// The Job's Pods carry managed-by=etcdfleet (so the label-narrowed Pod
// cache sees them) but not the cluster label, which the cluster's Services
// and PodDisruptionBudget select on. The artifact's revision is a lower
// bound read just before the stream (etcd's stream carries none).
package etcdsnapshot
