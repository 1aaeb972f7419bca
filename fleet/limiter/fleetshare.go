package limiter

import (
	"time"

	"golang.org/x/time/rate"
)

// ShareOptions configure a FleetShare. Zero fields take defaults derived
// from LeaseDuration and ListInterval; the derived bounds are what the
// argument in the package doc ("Following demand") rests on, so they are
// not settable one by one.
type ShareOptions struct {
	// Rate and Burst are the fleet-wide bucket (Options.Rate, Burst).
	Rate  rate.Limit
	Burst int
	// LeaseDuration is the peer Lease's duration: a replica renews it
	// every third of that.
	LeaseDuration time.Duration
	// ListInterval is how often the peer Leases are listed.
	ListInterval time.Duration
	// ConfirmDelay is how long after a higher claim's write returned the
	// list it is applied on must have been sent. With consistent lists
	// (an uncached client) any positive delay keeps the bound; a list
	// served from a cache that lags the store by up to ConfirmDelay does
	// too.
	ConfirmDelay time.Duration
}

// Defaults for ShareOptions.
const (
	DefaultShareLeaseDuration = 15 * time.Second
	DefaultShareListInterval  = time.Second
	// DefaultShareConfirmDelay tolerates a list a quarter second behind
	// the store; the manager's lists read the store (an uncached client),
	// for which any positive delay keeps the bound. Every raise waits for
	// it: at 1 s the simulated 21/6/3 heal of 30 requests over three
	// replicas took 14.9 s on average, at 250 ms 12.5 s (one bucket: 10 s).
	DefaultShareConfirmDelay = 250 * time.Millisecond
)

func (o ShareOptions) withDefaults() ShareOptions {
	if o.Rate <= 0 {
		o.Rate = DefaultRate
	}
	if o.Burst <= 0 {
		o.Burst = DefaultBurst
	}
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = DefaultShareLeaseDuration
	}
	if o.ListInterval <= 0 {
		o.ListInterval = DefaultShareListInterval
	}
	if o.ConfirmDelay <= 0 {
		o.ConfirmDelay = DefaultShareConfirmDelay
	}
	return o
}

// maxViewAge L: a peer is ignored only in a list sent at most this long
// ago.
func (o ShareOptions) maxViewAge() time.Duration { return o.ListInterval * 3 / 2 }

// fenceAfter F: a replica whose last renewal (a Lease write that returned
// within writeTimeout) was sent longer ago than this grants nothing.
func (o ShareOptions) fenceAfter() time.Duration { return o.LeaseDuration * 2 / 3 }

// writeTimeout W: a write that took longer does not count as a renewal.
// A quarter of the lease leaves room for an apiserver slow under load.
func (o ShareOptions) writeTimeout() time.Duration { return o.LeaseDuration / 4 }

// renewEvery is how often the Lease is written at the latest.
func (o ShareOptions) renewEvery() time.Duration { return o.LeaseDuration / 3 }

// minWriteInterval bounds writes made for a changed demand or claim.
func (o ShareOptions) minWriteInterval() time.Duration { return min(time.Second, o.ListInterval) }

// forgetAfter: a peer whose Lease has not changed for this long, in a
// view at most maxViewAge old, is ignored. It exceeds F + W + L, which
// the argument needs, by a sixth of the Lease for clock rate drift and
// the wiring's tick.
func (o ShareOptions) forgetAfter() time.Duration {
	return o.fenceAfter() + o.writeTimeout() + o.maxViewAge() + o.LeaseDuration/6
}

// PeerRecord is one peer Lease as listed: its holder, what it publishes,
// and its renewal time as written (compared for change only, never with
// this replica's clock).
type PeerRecord struct {
	ID        string
	Published Published
	Renewal   string
}

// peerSeen is a peer as this replica last saw it.
type peerSeen struct {
	rec PeerRecord
	// changedAt is when a list first returned rec.Renewal (this
	// replica's clock): no earlier than the write that set it was sent.
	changedAt time.Time
	gone      bool // missing from the last list (deleted on leaving)
}

// FleetShare decides this replica's Part of the fleet-wide bucket from
// what the replicas publish on their peer Leases. It is pure: no client,
// no goroutine, no clock of its own; the caller feeds it lists and write
// outcomes and asks it, at least every few hundred milliseconds, which
// Part to apply (Next) and what to write (Due, BeginWrite). It is not
// safe for concurrent use. See "Following demand" in the package doc for
// the protocol and why it keeps the fleet-wide bound.
type FleetShare struct {
	o     ShareOptions
	self  string
	total Part

	peers  map[string]*peerSeen
	viewAt time.Time // when the last list was sent

	// lastRenew is when the last write that counts as a renewal was sent.
	lastRenew time.Time
	// claim is the lowest claim the Lease may hold: the last written,
	// lowered at once by any write attempted since. claimSince is when the
	// write that last raised it returned; zero while fenced.
	claim      Part
	claimSince time.Time
	// demand is the demand last written, what the others split by.
	demand Published

	inflight  *Published
	lastWrite time.Time // when the last write was sent
	failed    bool      // the last write failed: retry soon
	local     Demand    // the local demand Next last saw
	want      Part      // the target: the claim to publish
	applied   Part
}

// NewFleetShare returns the share keeper of replica self. It starts
// fenced: nothing is granted before its first Lease write.
func NewFleetShare(self string, o ShareOptions) *FleetShare {
	o = o.withDefaults()
	return &FleetShare{o: o, self: self, total: Part{Burst: o.Burst, Rate: float64(o.Rate)},
		peers: map[string]*peerSeen{}}
}

// Listed records a list of the peer Leases sent at sent that returned at
// done. This replica's own Lease, if listed, is skipped: it knows better
// what it wrote.
func (f *FleetShare) Listed(sent, done time.Time, recs []PeerRecord) {
	seen := map[string]bool{}
	for _, r := range recs {
		if r.ID == f.self {
			continue
		}
		seen[r.ID] = true
		p := f.peers[r.ID]
		if p == nil || p.rec.Renewal != r.Renewal || p.gone {
			f.peers[r.ID] = &peerSeen{rec: r, changedAt: done}
			continue
		}
		p.rec = r
	}
	for id, p := range f.peers {
		if !seen[id] {
			p.gone = true
			if done.Sub(p.changedAt) > 2*f.o.forgetAfter() {
				delete(f.peers, id)
			}
		}
	}
	f.viewAt = sent
}

// fresh reports a view recent enough to ignore a silent peer on.
func (f *FleetShare) fresh(now time.Time) bool {
	return !f.viewAt.IsZero() && now.Sub(f.viewAt) <= f.o.maxViewAge()
}

// ignored reports a peer whose claim no longer counts: its Lease has not
// changed for forgetAfter in a fresh view, so it is fenced (or dead).
func (f *FleetShare) ignored(p *peerSeen, now time.Time) bool {
	return f.fresh(now) && now.Sub(p.changedAt) >= f.o.forgetAfter()
}

// fenced reports that this replica may be cut off: its claim may be
// ignored by the others soon, so it must grant nothing.
func (f *FleetShare) fenced(now time.Time) bool {
	return f.lastRenew.IsZero() || now.Sub(f.lastRenew) > f.o.fenceAfter()
}

// Next returns the Part to apply now, given the requests waiting here.
// A lower target applies when the write that lowers the claim is sent
// (BeginWrite; Due is true until then): the others can use the
// difference only once that claim lands, and until then this replica's
// waiting requests can. A higher one is applied only up to the
// claim this replica has written, on a list sent at least ConfirmDelay
// after that write returned, and up to what the others' claims in that
// list leave of the fleet's bucket.
func (f *FleetShare) Next(now time.Time, local Demand) Part {
	f.local = local
	if f.fenced(now) {
		f.applied, f.claim, f.claimSince = Part{}, Part{}, time.Time{}
		f.want = f.target(now)
		return f.applied
	}
	f.want = f.target(now)
	f.applied = minPart(f.applied, f.claim)
	if !f.claimSince.IsZero() && !f.viewAt.Before(f.claimSince.Add(f.o.ConfirmDelay)) {
		room := f.total.minus(f.othersClaim(now))
		f.applied = maxPart(f.applied, minPart(minPart(f.claim, f.want), room))
	}
	return f.applied
}

// othersClaim sums the claims of the peers that still count.
func (f *FleetShare) othersClaim(now time.Time) Part {
	var sum Part
	for _, p := range f.peers {
		if !f.ignored(p, now) {
			sum = sum.plus(p.rec.Published.Claim)
		}
	}
	return sum
}

// target is this replica's part of the split of the published demands
// among the replicas alive in the view: its own demand as it is now, but
// no lower than the demand last written, by which the peers split until
// the next write, and the peers' as listed, leaving out peers gone or not
// renewed for a lease duration (their claims still count until ignored).
func (f *FleetShare) target(now time.Time) Part {
	ds := []PeerDemand{{ID: f.self, Demand: maxDemand(f.local, f.demand.Demand)}}
	for id, p := range f.peers {
		if !p.gone && now.Sub(p.changedAt) < f.o.LeaseDuration+f.o.maxViewAge() {
			ds = append(ds, PeerDemand{ID: id, Demand: p.rec.Published.Demand})
		}
	}
	return splitParts(f.total, ds)[f.self]
}

// Due reports whether a Lease write is due: the renewal, or a retry of
// a failed write, or a changed claim, or a demand that moved (see
// demandMoved), the last two at most every minWriteInterval. Never while
// one is in flight.
func (f *FleetShare) Due(now time.Time) bool {
	if f.inflight != nil {
		return false
	}
	if f.lastWrite.IsZero() || now.Sub(f.lastWrite) >= f.o.renewEvery() {
		return true
	}
	if now.Sub(f.lastWrite) < f.o.minWriteInterval() {
		return false
	}
	return f.failed || !f.want.near(f.demand.Claim) || demandMoved(f.local, f.demand.Demand)
}

// BeginWrite returns what to write on the peer Lease, with a fresh
// renewal time, and records the attempt: until it is known to have
// failed, the Lease may hold either claim, so the lower one counts. The
// claim is the target, and the part in force is lowered to it now, as
// the lower claim goes out: a part never exceeds the lowest claim the
// Lease may hold.
func (f *FleetShare) BeginWrite(now time.Time) Published {
	f.applied = minPart(f.applied, f.want)
	p := Published{Demand: f.local, Claim: f.want}
	f.claim = minPart(f.claim, p.Claim)
	f.inflight, f.lastWrite = &p, now
	return p
}

// EndWrite records the outcome of the write begun at sent, returned at
// done. A write that failed may still have landed, which BeginWrite
// allowed for. One that succeeded but took longer than writeTimeout is
// no renewal and raises nothing. After a gap of more than fenceAfter
// between renewals the others may have ignored this replica's claim, so
// what it applied and how long its claim has stood start over.
func (f *FleetShare) EndWrite(sent, done time.Time, ok bool) {
	p := f.inflight
	f.inflight, f.failed = nil, !ok
	if !ok || p == nil {
		return
	}
	f.demand = *p
	if done.Sub(sent) > f.o.writeTimeout() {
		return
	}
	if f.fenced(sent) {
		f.applied, f.claimSince = Part{}, time.Time{}
	}
	f.lastRenew = sent
	if !p.Claim.within(f.claim) || f.claimSince.IsZero() {
		f.claimSince = done
	}
	f.claim = p.Claim
}

// demandMoved reports a demand worth a write of its own: a class of
// requests (quorum lost, other) that starts or stops waiting, a count
// that more than doubles, or a change of clusters owned. The split is
// proportional to the published counts, so replicas that drain at their
// parts keep the proportions and need no new split; every new split
// lowers some parts at once while the raises wait for a Lease round trip,
// so writing each grant's change lost rate at every step (the simulated
// 21/6/3 heal: 11.5 s on average against 11.1 s with this; one bucket:
// 10 s). Smaller changes go out with the next claim change or renewal.
func demandMoved(now, was Demand) bool {
	far := func(a, b int) bool { return (a == 0) != (b == 0) || a > 2*b }
	return far(now.Lost, was.Lost) || far(now.Other, was.Other) || now.Owned != was.Owned
}

// Options are the options in force, defaults filled in.
func (f *FleetShare) Options() ShareOptions { return f.o }

// Applied is the Part last returned by Next.
func (f *FleetShare) Applied() Part { return f.applied }
