// Package etcdbackup runs spec.backup of EtcdClusters: it creates an
// EtcdSnapshot at each due time of the schedule, deletes the scheduled
// snapshots its retention drops, and reports status.backup and the
// BackedUp condition.
//
// # Setup
//
// memberctl/operator.Setup registers the Reconciler with the watches of
// workload.Kinds: EtcdClusters, and the EtcdSnapshots they control (the
// scheduled ones), so that a snapshot's progress wakes its cluster.
// Options.Grace is DefaultOptions' unless set.
//
// # Usage
//
// Set spec.backup on an EtcdCluster: cron ("0 */6 * * *", UTC) or
// interval ("6h", at least 10s), a location (an S3 key or PVC path is a
// prefix: each snapshot is <prefix>/<snapshot>.db), and optionally a
// retention (keep, maxAge) and suspend. Read status.backup (the last
// scheduled, next and last good backup) and the BackedUp condition:
// True BackupOnSchedule; False BackupBehindSchedule, BackupFailed,
// BackupInvalidSchedule or BackupSuspended.
//
// Set spec.backup.verify (cron or interval, the same rules) for a restore
// drill on its own schedule; read status.backup.verify and the
// RestoreVerified condition: True RestoreDrillPassed (the revision and
// duration in the message and status); False RestoreDrillFailed,
// RestoreDrillSnapshotGone, RestoreDrillNoSnapshot, RestoreDrillBlocked or
// BackupInvalidSchedule; Unknown RestoreDrillRunning for the first.
//
// # Implementation details
//
//   - makePlan decides a reconcile without I/O: the schedule, the
//     snapshot to create, the snapshots to prune, the status and the
//     requeue. Reconcile lists the cluster's EtcdSnapshots and carries the
//     plan out.
//   - Due times: cron via github.com/robfig/cron/v3 in UTC; an interval is
//     due at k*interval + offset since the Unix epoch, the offset being
//     FNV-1a of the cluster's UID modulo the interval, so clusters created
//     together spread out and a restarted manager keeps the same times.
//   - The next due time follows the due time of the newest scheduled
//     snapshot (its scheduled-at annotation), or the cluster's creation.
//     When it has passed, the newest due time not after now is taken, so
//     a manager that was down starts one snapshot, not one per missed run.
//   - A scheduled snapshot is named <cluster>-<yyyymmddhhmmss> of its due
//     time (a long cluster name is cut and hashed to stay within the
//     EtcdSnapshot's 52 characters). Two reconciles for the same due time
//     (a cache that does not show the first one yet) create one.
//   - At most one scheduled snapshot is in flight: while the newest one has
//     not ended, no other is created; its end wakes the cluster.
//   - Scheduled snapshots have deletionPolicy Delete and carry the cleanup
//     finalizer from creation, so that pruning one removes its object or
//     file (memberctl/etcdsnapshot runs the cleanup Job). Their owner
//     reference does not block the cluster's foreground deletion, and a
//     cluster's deletion keeps the stored snapshots.
//   - No polling for backups: their only timed requeues are the next due
//     time and the end of the grace of a run in flight.
//   - Restore drill (drill.go): planDrill decides without I/O. At a due
//     time (the newest, missed ones collapsing) it takes the cluster's
//     newest Complete snapshot (etcdsnapshot.CompleteNewestFirst) and
//     records its name and UID in status.backup.verify; until the drill
//     ends, that snapshot's verify Job is read every drillPoll through
//     etcdsnapshot.Verification (the Jobs are not watched), accepting only
//     an outcome that ended after the due time. One drill at a time. The
//     snapshot deleted or replaced (another UID) ends the drill
//     (RestoreDrillSnapshotGone). Each drill that ends gives one Event of
//     its reason and the etcdfleet_restore_drill_* metrics. The Job
//     restores into a throwaway etcd inside its own Pod: nothing of the
//     running cluster is dialled or written, and the workload credential
//     needs no right the snapshot Jobs do not already use.
//
// # Trade-offs
//
// Grace is the snapshot Job's own deadline (30 min by default), so a
// cluster is reported behind schedule only once its run cannot complete
// any more; schedules shorter than that are flagged late rather than
// early. lastSuccessfulTime counts hand-made snapshots too, but their
// completion does not wake the cluster (they are not controlled by it):
// it shows at the next event of the cluster or of a scheduled snapshot.
// Failed scheduled snapshots are kept only while one is the newest ended
// run, for its error; the retry is the next due time, not a new run at
// once, so a failing store is not hammered.
package etcdbackup
