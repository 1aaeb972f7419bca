// Package limiter paces destructive actions on etcd members across a whole
// fleet of workload clusters. It implements gate.Gate with one token bucket
// shared by every cluster and hands scarce tokens out fairly.
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
// workload cluster is disengaged.
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
// member at once; the next ask gets Delay 0. Snapshot feeds the dashboard.
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
// Waiting requests sit in a per-cluster FIFO in arrival order, one for
// requests whose etcd cluster lost quorum and one for the rest. Each of the
// two classes has a ring of clusters ordered by when each was last served;
// the front cluster gets the next token and moves to the back. All
// quorum-lost requests are served before any other. Whenever a token is
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
