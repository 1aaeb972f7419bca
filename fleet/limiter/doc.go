// Package limiter paces destructive actions on etcd members across a whole
// fleet of workload clusters. It implements gate.Gate with one token bucket
// shared by every cluster and hands scarce tokens out fairly. A second,
// separate class, Slots, paces snapshot starts (see "Snapshot starts").
//
// After a datacenter power cycle every etcd Pod in every cluster is left
// terminal at once. Deleting them all in the same second would stampede the
// API servers and the storage behind the PVCs; refusing would leave etcd
// down. The limiter paces instead: every request that keeps asking is
// granted, at Rate per second after an initial Burst, and no cluster waits
// behind another cluster's long queue.
//
// # Setup
//
//	wake := make(chan gate.Request, 1024) // feeds the controller's requeue
//	lim := limiter.New(limiter.Options{
//		Rate:  2,  // per second, fleet-wide
//		Burst: 10,
//		OnGrant: func(r gate.Request) {
//			select {
//			case wake <- r:
//			default: // full: the member re-asks after its Delay anyway
//			}
//		},
//	})
//	_ = lim.RegisterMetrics(metrics.Registry) // controller-runtime's registry
//	_ = mgr.Add(lim)                          // runs Start: grants as tokens accrue
//
// Zero Options fields take the Default* constants. Call ForgetCluster when a
// workload cluster is disengaged. A manager whose replicas share the
// clusters (sharding) applies the part a FleetShare computes from the
// replicas' published demands with SetPart (see "Following demand"
// below); SetShare(owned, total), the older split by ownership of
// "Across replicas", remains for callers without peer Leases.
//
// # Usage
//
// Callers follow the gate package's contract and never block:
//
//	d := lim.Reserve(ctx, req)
//	if d.Delay > 0 {
//		return ctrl.Result{RequeueAfter: d.Delay}, nil
//	}
//	if err := act(); err != nil {
//		d.Cancel() // the token goes to the next waiting request
//	}
//
// The first ask queues the request; asking again with the same Request
// (same Cluster, Namespace, EtcdCluster, Member and Action) keeps its place.
// When its token comes, OnGrant names it so the controller requeues the
// member at once; the next ask gets Delay 0. OnGranted sees every grant,
// with its wait since the first ask (the manager logs it). Snapshot feeds
// the dashboard.
//
// # Implementation details
//
// Tokens come from a golang.org/x/time/rate Limiter read at times from
// Options.Now, so tests run on a fake clock. Tokens given back (Cancel, a
// grant not claimed within GrantTTL, ForgetCluster) are kept beside the
// bucket, because a rate.Reservation can only be cancelled before its time,
// and every grant here is for "now". Bucket and returned tokens together
// never exceed Burst.
//
// Waiting requests sit in a per-cluster FIFO in arrival order, one per
// class: heals of etcd clusters that lost quorum, other heals, and planned
// actions (gate.Action.Planned: version rolls). Each class has a ring of
// clusters ordered by when each was last served; the front cluster gets
// the next token and moves to the back. All quorum-lost requests are
// served before any other, and every heal before any planned action: a
// fleet reboot in the middle of an upgrade wave heals first, within the
// bound it would have without the wave (plus the tokens the wave took
// before the reboot), and the wave resumes after. Planned actions are
// deferred, never dropped, as long as their callers keep asking. Whenever a token is
// available (on Reserve, on Cancel, and in Start's loop, which sleeps until
// the next token accrues) it is granted to the next request in that order
// and held for it until it asks again.
//
// A waiting caller's Delay estimates its turn: the requests ahead of it in
// the round-robin order plus its own, less the tokens available, divided by
// Rate, within [MinDelay, MaxDelay]. The cap makes callers re-ask while the
// estimate may be stale; queued requests not asked again within QueueTTL
// are dropped, since their reconcile has gone away.
//
// A request's class is what its caller saw when it last asked. A member
// that asked as an ordinary heal just before its etcd cluster lost quorum
// would keep that place until its Delay runs out (up to MaxDelay), while
// tokens go to members elsewhere that restore nothing (seen in the fleet
// e2e: three such deletes in the 4 s one quorum-restoring member waited).
// So when a request asks as quorum-lost, its etcd cluster's ordinary
// waiters are woken through OnReask to ask again at once, and move up if
// they restore the quorum.
//
// # Across replicas
//
// With sharding, each manager replica runs the clusters it owns and has a
// Limiter of its own; the fleet-wide bound must hold for all of them
// together. The design is a split by share: a replica owning o of the n
// registered clusters (s = o/n) gets burst ⌊s·Burst⌋ and rate s·Rate.
// Alternatives considered:
//
//   - A token service on the leader: every destructive action would wait
//     on a network round trip to one replica, and when the leader is gone
//     or unreachable nothing could act, or everyone would fall back to an
//     unbounded local rate.
//   - Tokens in a Lease or CR updated with optimistic concurrency: exact,
//     but a write on the management apiserver per grant, contended by every
//     replica at the worst moment (a fleet reboot), and the same question
//     of what to do when it cannot be reached.
//
// The split needs no coordination beyond what sharding already has: the
// fences (one Lease per cluster) make the owned sets disjoint, so the
// shares add up to at most 1 and the buckets' bursts and rates to at most
// Burst and Rate; any window of T ≥ 1 s then sees at most Burst + Rate·T
// grants across all replicas, because a bucket holds at most its burst
// when the window opens and gains at most its rate during it. Changes of
// share keep that:
//
//   - A smaller share applies at once and clamps the bucket; a replica
//     losing a cluster lowers its share as soon as the engagement ends,
//     within milliseconds of releasing the fence, while the new owner must
//     then see the fence free (at its next sync), acquire it, connect and
//     engage before its share even starts to grow.
//   - A larger share waits ShareRaiseDelay (2 s: more than the 1 s
//     window) and never adds tokens: the bucket refills at the new rate,
//     so a new owner that raises early can only gain rate·delay tokens,
//     less than one at the default rate. Replicas see a Secret removed a
//     moment apart (the total drops); the delay covers that too.
//   - A replica owning nothing has no token; on owning again it starts
//     empty, as a new leader does with StartEmpty. A replica that dies
//     grants nothing more, and its clusters' new owners start empty.
//
// It never halts: a replica owning a cluster always has burst ≥ 1 and a
// positive rate. Rounding the burst up to 1 for a small share would add
// to the window, so that replica's rate is lowered by the same amount
// (its part of a 1 s window stays s·(Burst + Rate)). Only a share below
// 1/(Burst + Rate) of the fleet, too small for one token per window,
// runs at the floor: burst 1 and rate s·Rate. Each such replica can
// exceed its part of a window by less than one token; with the defaults
// (2/s, burst 10) that is a replica owning under 1/12 of the clusters,
// which HRW makes rare once clusters outnumber replicas several times.
//
// The cost is fairness and speed across replicas: a replica whose
// clusters are healed leaves its share unused while another's clusters
// wait, and quorum-lost-first ordering holds within a replica, not
// across. A fleet heal with k replicas can therefore take longer than
// with one, up to the busiest replica's queue at its share. FleetShare
// (below) removes that cost.
//
// # Following demand
//
// FleetShare replaces the split by ownership with one that follows
// demand, so that a replica whose clusters healed hands its part to one
// whose clusters wait. It is a pure state machine: the manager feeds it
// its peer Lease traffic and applies the Part it returns with SetPart.
//
// A Part is a Burst and a Rate, accounted apart: if at every moment the
// replicas' Bursts add up to at most Burst and their Rates to at most
// Rate, then any window of any length T sees at most Burst + Rate·T grants
// across them, however the parts change, since a bucket holds at most its
// burst when the window opens, gains at most its rate during it, a smaller
// part clamps the bucket and a larger one never adds tokens. Accounting
// them apart, rather than as one fraction rounded by shareOf, is what lets
// a change of part inside a window keep the bound exactly, and lets an
// idle replica keep one token of burst at almost no rate.
//
// Each replica publishes on its peer Lease, at every renewal and on
// change (at most once per list interval, and per second), its Demand
// (requests waiting with quorum lost, others, clusters owned;
// DemandAnnotation) and its claim, the most it may be granting
// (ClaimAnnotation). A change of demand alone is written when it moves
// the split: a class of requests starts or stops waiting, a count more
// than doubles, or the clusters owned change. The split is proportional
// to the counts, so replicas that drain at their parts keep their
// proportions, and every new split lowers some parts while the raises
// wait a Lease round trip: writing every grant's change lost rate at
// each step. Smaller changes go out with the next claim or renewal.
// Every replica computes
// the same target split from the published demands (splitParts): a token
// of burst for each replica owning clusters or with requests waiting, a
// rate floor (5% of Rate if waiting, 1% if idle), and the rest by the
// quorum-lost requests waiting if any replica has some, else by all
// waiting, else by clusters owned. In its own target a replica counts
// the higher of the demand it last published and its demand now: the
// others split by the published one until the next write, and splitting
// by a fresher, lower one would leave the difference unused by anyone
// until then (the claims, not the demands, keep the bound). Its own
// target it applies as follows:
//
//   - Lower: when the lower claim's write is sent, which is due at once
//     (within the manager's 100 ms tick, and the write interval). The
//     others can use the difference only once that claim has landed;
//     until then this replica's waiting requests can. Lowering before
//     the write left it unused by anyone for a write interval.
//   - Higher: the claim is published first. The raise is applied on a
//     list of the peer Leases sent at least ConfirmDelay after that write
//     returned, and only as far as the claims in that list leave room;
//     the manager lists then.
//   - A write that failed may still have landed, so from the moment it is
//     sent the lower of its claim and the previous one is what counts.
//
// Invariant: a replica's applied part never exceeds the claim on its
// Lease (the lower of the last written and any being written). Why the
// parts never add up to more than the bucket: of the replicas holding a
// raised part, take the one, k, whose claim's write landed last. Its list
// was sent after that write returned, so after every other replica's
// claim landed, and shows each of them at least at the part that replica
// applies now (a replica lowers its part no later than it sends the lower
// claim, and raising again takes a new claim, which would have landed
// after k's). k applied at most what those claims left. Concurrent raisers
// thus need no tie-break: whichever claim landed second sees the first.
// This needs lists that read the store, as the uncached client's do; a
// list served from a cache that lags by λ keeps it while λ ≤ ConfirmDelay
// (default 250 ms), since each raiser's list then reads the store after its
// own claim landed.
//
// Partitions and deaths only lower the total. A replica whose last
// renewal (a Lease write returned within W = lease/4) was sent more than
// F = 2/3 of the lease duration ago applies nothing; when it renews again
// its old claim no longer counts for it, and it raises from nothing as
// above. Another replica ignores a peer's claim only when, in a list sent
// at most L = 1.5 list intervals ago, the peer's Lease has not changed
// for F + W + L plus a sixth of the lease since it first listed the
// current one: any renewal the peer sent within F of its last would have
// landed within W, before that list, so the peer has been applying
// nothing since its F ran out. Renewal times are compared for change
// only, never across clocks; durations are measured on each replica's own
// clock, and the sixth of the lease covers their drift and the manager's
// tick. A killed replica grants nothing; its claim blocks its part until
// it is ignored. A Lease deleted on shutdown is ignored after the same
// time, since the replica may still have been granting. A claim that is
// missing or malformed (a replica of an older version, during a rollout)
// reads as the whole bucket: the others cannot grow until it is gone.
//
// It never halts: a replica with requests waiting has a target of at
// least a token of burst and 5% of the rate, the others lower to their
// targets as soon as they list its demand, and its raise then finds room.
// Quorum-lost requests go first fleet-wide: while some replica has them, a
// replica with only other requests runs at its floor. With more replicas
// active than Burst tokens, those beyond get no burst until one drains.
//
// Simulated (fleetshare_test.go, a fake clock, random latency, lost
// replies, kills, partitions, lists failing alone): no window of 0.1 to
// 20 s exceeds Burst + Rate·T and the parts in force never exceed the
// bucket; with 4:1:1 ownership and requests on one replica only, 60
// requests heal in 1.14× and 120 in 1.07× one bucket's time (the split
// by ownership: 1.6×); the cost is the burst held by the idle replicas
// (a token each, and their parts as the fleet went idle) and one list
// interval or two before the busy replica's raise. The bench's heal
// (7:2:1 ownership, 30 requests, two of three with quorum lost) takes
// 1.11× on average over 20 runs. What remains is rate not in force
// while a raise waits for its round trip (about 1.9 tokens of the 20
// paced ones) and rate of replicas whose queue drained before their
// claim went down (about 0.3).
//
// # Snapshot starts: the Slots class
//
// Slots (NewSlots, SlotOptions) implements gate.Slots for snapshot Jobs,
// which run for minutes rather than being spent at once. It bounds the
// snapshots running at once fleet-wide (MaxConcurrent, default 4) and
// spaces their starts (StartsPerMinute, default 6: a rate.Limiter with a
// bucket of one, so starts never come in a burst), so that a thousand
// clusters whose schedules fire at midnight start one by one and at most
// four stream to object storage together. It also caps the snapshots
// running at once per workload cluster (MaxPerCluster, the manager's
// snapshots.maxPerCluster, default 1) and per namespace within one
// (MaxPerNamespace, snapshots.maxPerNamespace, default 1; it binds only once
// MaxPerCluster is raised). A slot is held until the Job ends, up to its
// 30-minute deadline, so without the caps one cluster with a slow or
// tarpit object store would take a slot at each of its turns and keep it,
// until it held every slot and the rest of the fleet fell behind; with
// them it holds one, and the others keep the remaining slots and their
// schedules.
//
//	slots := limiter.NewSlots(limiter.SlotOptions{MaxConcurrent: 4, StartsPerMinute: 6})
//	_ = slots.RegisterMetrics(metrics.Registry)
//	// every engaged cluster's workload.Cluster.Slots = slots
//
// It is a class of its own, not a second token kind of Limiter: it has its
// own lock, queue and counters and shares no token with replacements, so a
// backup can never delay a replacement, and a fleet heal (which may hold
// the Limiter's tokens for minutes) never stalls backups. It lives in this
// package to reuse the fair queue: waiting snapshots are served
// round-robin across workload clusters, so a cluster with many due
// snapshots does not hold the others back, and a granted slot is kept for
// its snapshot until it asks again (GrantTTL), as tokens are.
//
// A snapshot whose cluster or namespace is at its cap waits in the queue
// like any other, but the grant passes over it (fairQueue.popEligible) to
// the next cluster in the round-robin order, so it never blocks other
// clusters' grants. Its cluster keeps its place in the ring, not having
// been served, and is first in line once its running snapshot ends or its
// slot expires; nothing is ever halted, since every slot that keeps a cap
// full is released or expires. An unclaimed grant counts against the caps
// as a held slot does, or a cluster could be granted twice before it
// claimed once. The grant looks at each waiting snapshot in the worst
// case, and only when a slot and a start are free. Hold counts beyond the
// caps as it does beyond the limit.
//
// A slot is held from Acquire's grant until Release, which the snapshot
// reconciler calls at a terminal phase or when the EtcdSnapshot is gone.
// Hold re-takes the slot of a snapshot found Started (after a restart) and
// counts even beyond the limit, since its Job runs whatever the limit
// says. Every slot carries an expiry, its Job's active deadline plus a
// margin: a Release lost (the snapshot deleted while the manager was
// down) frees itself then, so backups are never halted. ForgetCluster
// drops a disengaged cluster's queued requests but keeps its held slots
// until they expire, since its Jobs keep running. The spacing bucket
// starts empty, so a restarted manager sees its running snapshots (Hold,
// on the first reconciles) for one spacing before it starts another;
// a cluster engaged later than that can push the running count over the
// limit until its Started snapshots end. OnGrant names each snapshot
// granted while queued, and the fleet wiring feeds it to the EtcdSnapshot
// controller, so a freed slot is taken within milliseconds; a waiting
// snapshot also re-asks after its Delay, at most MaxDelay (15 s), which
// keeps a thousand waiting snapshots' requeues light.
//
// Sharded, each replica's Slots takes its share like the Limiter:
// concurrency ⌊s·MaxConcurrent⌋ but at least 1, and start rate
// s·StartsPerMinute, applied at once in both directions (a concurrency is
// not a bucket that could be refilled twice). The floor of one slot per
// replica owning clusters lets the fleet run up to max(MaxConcurrent,
// replicas) snapshots at once; a cluster moving between replicas may be
// counted by both until the old owner's slot expires, which only lowers
// the concurrency. Alternatives were the same as for the Limiter (a slot
// service on the leader, slots in a Lease) and were rejected for the same
// reasons. The caps take no share: one replica owns a workload cluster at
// a time, and a new owner Holds the cluster's running snapshots as it
// reconciles them, so they count against its cap there (before that, as
// for the limit, one more may start).
//
// Metrics: etcdfleet_snapshot_starts_running and
// etcdfleet_snapshot_starts_waiting (gauges read at scrape time; waiting
// has a reason label, SlotWaitReason: FleetLimit, ClusterCap or
// NamespaceCap) and etcdfleet_snapshot_start_wait_seconds (a histogram of
// waits). A waiting snapshot's Decision carries the same reason as a
// sentence (gate.Decision.Reason: "cluster X already holds its 1 snapshot
// slot (snapshots.maxPerCluster)"), which the snapshot reconciler puts in
// its WaitingForSlot condition, so a user sees which cap holds it back.
//
// # Trade-offs
//
//   - Fairness is per workload cluster, not per etcd cluster or member: a
//     cluster with many members drains no faster than a cluster with one
//     while both wait. That is what keeps one broken cluster from holding
//     the fleet back; the cost is that a big cluster takes longest.
//   - A granted token is held for its request until claimed or until
//     GrantTTL, so a slow requeue idles a token for a while; without holding
//     it, a late re-asker could lose its turn to a newcomer.
//   - Tokens are not reserved ahead: a request asking while tokens are
//     available and nobody waits is granted at once, even if another
//     cluster's request will ask a moment later. Fairness applies only when
//     tokens are scarce, which is when it matters.
//   - OnGrant can race with the granted request asking on its own; the
//     controller then gets one extra requeue, which is harmless.
//   - State is in memory, so a restarted manager forgets its queues and its
//     bucket. With StartEmpty (the manager sets it) the bucket is empty when
//     Start runs, which is when the process becomes leader, and nothing is
//     granted before: the Burst + Rate·T bound holds across restarts and
//     leader changes, because the predecessor's unspent tokens are never
//     spent twice. The cost is 1/Rate of extra wait for a new leader's
//     first action, against a stampede of 2·Burst after every restart.
//   - Reserve is O(clusters waiting) when it has to estimate a Delay, which
//     stays in microseconds for fleets of hundreds (see BenchmarkReserve).
package limiter
