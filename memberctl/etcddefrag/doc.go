// Package etcddefrag reconciles EtcdDefrags: one defragmentation of an
// EtcdCluster's members, one member at a time, followers before the
// leader, made by the manager through etcd's Maintenance API; and
// EtcdClusters' spec.defrag, which creates EtcdDefrags on a schedule.
//
// # Setup
//
// memberctl/operator registers the Reconciler (For EtcdDefrag, from
// workload.Kinds) and the ScheduleReconciler (For EtcdCluster, beside the
// cluster controller, from workload.Kinds' AlsoFor) for every engaged
// cluster, or a single local one. Both take Options; DefaultOptions holds the
// defaults. The workload cluster's etcd.Interface must also be an
// etcd.Maintainer (etcd.Ops is): a member whose defragmentation cannot be
// called fails with a message saying so.
//
// # Usage
//
// Create an EtcdDefrag naming the cluster, optionally with thresholds
// (minFragmentationPercent, minFreeBytes); watch status.phase go Pending →
// Running → Complete, or Failed. status.members records each member as it
// is done: role, dbSizeBefore, dbSizeInUseBefore, dbSizeAfter and outcome
// (Defragmented, Skipped under a threshold, or Failed). Or set
// spec.defrag on the EtcdCluster (cron or interval, thresholds,
// historyLimit, suspend) and EtcdDefrags named <cluster>-defrag-<unix
// time> appear when due.
//
// # Implementation details
//
//   - Each reconcile does at most one member and writes the status before
//     the next: a restarted manager resumes after the members already
//     recorded and never redoes one.
//   - Before each member the whole cluster is looked at afresh (health.go):
//     every EtcdMember must be a voter with a Pod, their number must be
//     spec.replicas, etcd's member list must match them, every member must
//     answer Status with no error but a NOSPACE alarm, and all must name
//     the same leader. Otherwise the EtcdDefrag waits with Ready=False,
//     WaitingForHealthyCluster and the reason, and is looked at again every
//     Options.Requeue. A defragmentation blocks its member; with another
//     member down, blocking a follower would stop the cluster's writes.
//     For the same reason a 2-member cluster is never defragmented.
//   - The member done next is a follower without a result, by name, while
//     one is left, then the member that is the leader at that moment, so
//     the leader is last even when leadership moved during the run.
//   - One EtcdDefrag per cluster runs at a time: the oldest unfinished one
//     goes first, the others wait.
//   - A member that will be defragmented first needs an unpaused cluster
//     and a token of the workload cluster's gate.Gate (the fleet's shared
//     limiter): gate.Defrag, planned and served after every heal, or
//     gate.NoSpaceDefrag, a heal, when a member reports NOSPACE. A member
//     skipped under the thresholds asks nothing.
//   - Once every member is done, a run that defragmented one disarms the
//     cluster's NOSPACE alarms (only those: CORRUPT waits for a human) when
//     a member reports one: etcd refuses writes until then, however much
//     space is free. A cluster still over its quota raises it again at
//     the next write, which is what etcd would do anyway.
//   - A failed Defragment call (etcd.DefragmentTimeout bounds it) fails
//     the EtcdDefrag for good; the members after it are left alone.
//   - The schedule keeps no state of its own: the newest EtcdDefrag
//     labelled LabelDefragSchedule is the last run, and package
//     memberctl/schedule gives the next due time (an interval sits at the
//     cluster's UID offset, as spec.backup's does). A due run waits while
//     any EtcdDefrag of the cluster is unfinished; finished scheduled ones
//     beyond historyLimit are deleted, oldest first. Scheduled EtcdDefrags
//     are controlled by their EtcdCluster and go with it.
//   - Events: MemberDefragmented, MemberSkipped, DefragFailed (Warning),
//     Defragmented, NoSpaceAlarmDisarmed on the EtcdDefrag;
//     InvalidDefragSchedule (Warning) on the EtcdCluster. Metrics:
//     etcdfleet_defrag_* per EtcdCluster (metrics.go); ForgetCluster drops
//     a disengaged cluster's series.
//
// # Trade-offs
//
// The defragmentation runs from the manager, not from a Job in the
// workload cluster: it is one RPC, no data crosses the link, and the
// manager already holds the health view that decides whether it is safe.
// The price is that a manager that loses the link mid-call cannot tell
// whether etcd finished: the member is recorded Failed, and etcd finishes
// the rewrite on its own.
//
// Clients of a member are blocked while it is defragmented (etcd does not
// fail them over). Defragmenting followers first keeps the leader, which
// every write goes through, serving until last; a large database blocks
// its member for seconds, which clients with short timeouts see.
//
// An invalid cron expression (which CEL cannot check) is reported by an
// Event only: the EtcdCluster's status belongs to the cluster controller.
package etcddefrag
