package limiter

import (
	"testing"
	"time"
)

// core drives one FleetShare by hand: t0 plus seconds.
type core struct {
	t  *testing.T
	fs *FleetShare
	t0 time.Time
}

func newCore(t *testing.T, id string) *core {
	return &core{t: t, fs: NewFleetShare(id, testShareOptions()), t0: newFakeClock().Now()}
}

func (c *core) at(sec float64) time.Time { return c.t0.Add(time.Duration(sec * float64(time.Second))) }

// write begins a write at sec and ends it 0.1 s later.
func (c *core) write(sec float64, ok bool) Published {
	p := c.fs.BeginWrite(c.at(sec))
	c.fs.EndWrite(c.at(sec), c.at(sec+0.1), ok)
	return p
}

// list records a list sent at sec holding recs.
func (c *core) list(sec float64, recs ...PeerRecord) {
	c.fs.Listed(c.at(sec), c.at(sec+0.05), recs)
}

func peer(id, renewal string, d Demand, claim Part) PeerRecord {
	return PeerRecord{ID: id, Renewal: renewal, Published: Published{Demand: d, Claim: claim}}
}

// TestFleetShareRaisesOnlyOnAListAfterItsClaim: a higher part is applied
// only on a list sent ConfirmDelay after the write of its claim returned,
// and only as far as the others' claims leave room; a lower one as the
// lower claim's write is sent.
func TestFleetShareRaisesOnlyOnAListAfterItsClaim(t *testing.T) {
	c := newCore(t, "a")
	busy := Demand{Lost: 5, Owned: 1}
	other := peer("b", "1", Demand{Owned: 1}, Part{Burst: 6, Rate: 1.2})
	c.list(0, other)
	c.fs.Next(c.at(0), busy)
	c.write(0.1, true) // claim written, returned at 0.2
	c.list(0.35, other)
	if p := c.fs.Next(c.at(0.45), busy); p != (Part{}) {
		t.Fatalf("applied %+v on a list sent 0.15 s after the claim's write returned, want nothing before ConfirmDelay", p)
	}
	c.list(1.3, other)
	p := c.fs.Next(c.at(1.4), busy)
	if want := (Part{Burst: 4, Rate: 0.8}); !p.within(want) || p.Burst != 4 {
		t.Fatalf("applied %+v with b claiming %+v, want what is left, %+v", p, other.Published.Claim, want)
	}
	other = peer("b", "2", Demand{Owned: 1}, Part{Burst: 1, Rate: 0.02})
	c.list(2.5, other)
	if p := c.fs.Next(c.at(2.6), busy); p.Burst != 9 || p.Rate < 1.9 {
		t.Fatalf("applied %+v once b's claim went down, want burst 9 and nearly all the rate", p)
	}
	c.list(3, other, peer("c", "1", Demand{Lost: 50}, Part{}))
	if p := c.fs.Next(c.at(3.1), busy); p.Rate < 1.9 || !c.fs.Due(c.at(3.1)) {
		t.Fatalf("applied %+v (write due: %v) after c showed more quorum-lost demand, want the part kept until the lower claim is sent, and that write due",
			p, c.fs.Due(c.at(3.1)))
	}
	if pub := c.write(3.1, true); c.fs.Applied().Rate > 0.5 || pub.Claim.Rate > 0.5 {
		t.Fatalf("applied %+v, claim %+v once the lower claim was sent, want both lowered", c.fs.Applied(), pub.Claim)
	}
}

// TestFleetShareCountsAFailedWriteAsLanded: a lower claim whose write
// failed may be on the Lease all the same, so nothing above it is applied
// until a higher claim is written again and listed after.
func TestFleetShareCountsAFailedWriteAsLanded(t *testing.T) {
	c := newCore(t, "a")
	busy := Demand{Lost: 5, Owned: 1}
	c.fs.Next(c.at(0), busy)
	c.write(0, true)
	c.list(1.5)
	if p := c.fs.Next(c.at(1.6), busy); p.Burst != 10 {
		t.Fatalf("applied %+v alone, want the whole bucket", p)
	}
	c.list(2, peer("b", "1", Demand{Lost: 45}, Part{}))
	c.fs.Next(c.at(2.1), busy)
	c.write(2.2, false) // the lower claim: its reply lost, it may have landed
	low := c.fs.Applied()
	if low.Burst > 2 {
		t.Fatalf("applied %+v next to a much busier b, want it lowered", low)
	}
	c.list(2.5) // b is gone again
	c.fs.Next(c.at(2.6), busy)
	c.write(2.7, false) // the higher claim: failed
	c.list(3.5)         // within fenceAfter of the last renewal, at 0
	if p := c.fs.Next(c.at(3.6), busy); !p.within(low) {
		t.Fatalf("applied %+v after the higher claim's write failed, want at most the lower claim %+v", p, low)
	}
	c.write(3.7, true)
	c.list(4.9)
	if p := c.fs.Next(c.at(5), busy); p.Burst != 10 {
		t.Fatalf("applied %+v after the higher claim was written and listed, want the whole bucket", p)
	}
}

// TestFleetShareFencesAndStartsOver: without a renewal for fenceAfter the
// replica applies nothing, and after renewing again its old claim does
// not count: the raise waits for a list after the new write.
func TestFleetShareFencesAndStartsOver(t *testing.T) {
	c := newCore(t, "a")
	busy := Demand{Other: 5, Owned: 1}
	c.fs.Next(c.at(0), busy)
	c.write(0, true)
	c.list(1.5)
	if p := c.fs.Next(c.at(1.6), busy); p.Burst != 10 {
		t.Fatalf("applied %+v, want the whole bucket", p)
	}
	f := c.fs.o.fenceAfter().Seconds()
	if p := c.fs.Next(c.at(f-0.1), busy); p.Burst != 10 {
		t.Fatalf("applied %+v just before fenceAfter, want the whole bucket", p)
	}
	if p := c.fs.Next(c.at(f+0.1), busy); p != (Part{}) {
		t.Fatalf("applied %+v after %v without a renewal, want nothing", p, f)
	}
	c.list(f + 1)
	c.write(f+2, true)
	if p := c.fs.Next(c.at(f+2.2), busy); p != (Part{}) {
		t.Fatalf("applied %+v right after renewing, on an old list; want nothing yet", p)
	}
	c.list(f + 3.5)
	if p := c.fs.Next(c.at(f+3.6), busy); p.Burst != 10 {
		t.Fatalf("applied %+v on a list after the new claim, want the whole bucket", p)
	}
}

// TestFleetShareConcurrentRaisersSeeOneAnother: two replicas raise at
// once, each listing just after its own write. The one whose write landed
// second sees the first's claim, so together they never exceed the bucket.
func TestFleetShareConcurrentRaisersSeeOneAnother(t *testing.T) {
	a, b := newCore(t, "a"), newCore(t, "b")
	busy := Demand{Lost: 5, Owned: 1}
	store := map[string]PeerRecord{}
	put := func(id, rev string, p Published) { store[id] = PeerRecord{ID: id, Renewal: rev, Published: p} }
	all := func() []PeerRecord {
		var out []PeerRecord
		for _, r := range store {
			out = append(out, r)
		}
		return out
	}
	// Each sees the other idle, so each wants nearly all.
	a.list(0, peer("b", "0", Demand{Owned: 1}, Part{Burst: 1, Rate: 0.02}))
	b.list(0, peer("a", "0", Demand{Owned: 1}, Part{Burst: 1, Rate: 0.02}))
	put("a", "0", Published{Demand{Owned: 1}, Part{Burst: 1, Rate: 0.02}})
	put("b", "0", Published{Demand{Owned: 1}, Part{Burst: 1, Rate: 0.02}})
	a.fs.Next(a.at(0.1), busy)
	b.fs.Next(b.at(0.1), busy)
	put("a", "1", a.write(0.2, true)) // a's claim lands first
	a.list(1.3, all()...)             // a lists before b's claim lands
	put("b", "1", b.write(1.4, true))
	b.list(2.6, all()...)
	pa, pb := a.fs.Next(a.at(2.7), busy), b.fs.Next(b.at(2.7), busy)
	if sum := pa.plus(pb); !sum.within(Part{Burst: 10, Rate: 2}) {
		t.Fatalf("a applied %+v and b %+v: %+v is more than the bucket", pa, pb, sum)
	}
	if pa.Burst < 8 {
		t.Fatalf("a applied %+v; its claim landed first and left room, want most of the bucket", pa)
	}
}

// TestFleetShareRetriesAFailedWriteSoon: a failed write is retried after
// minWriteInterval, not a renewal period later, so that one failure does
// not fence the replica.
func TestFleetShareRetriesAFailedWriteSoon(t *testing.T) {
	c := newCore(t, "a")
	idle := Demand{Owned: 1}
	c.fs.Next(c.at(0), idle)
	c.write(0, true)
	c.fs.Next(c.at(1.4), idle)
	if c.fs.Due(c.at(1.5)) {
		t.Fatal("write due 1.5 s after a good one with nothing changed")
	}
	c.write(2, false)
	c.fs.Next(c.at(2.4), idle)
	if c.fs.Due(c.at(2.5)) {
		t.Fatal("retry due 0.5 s after a failure, want minWriteInterval")
	}
	if !c.fs.Due(c.at(3.1)) {
		t.Fatal("retry not due 1.1 s after a failure")
	}
}

// TestFleetShareKeepsItsPartUntilItPublishesLessDemand: the others split
// by the demand this replica last wrote, so its own part follows the
// same figure until it writes a lower one, and is lowered only as the
// lower claim that follows goes out: until then the others cannot use
// the difference, and this replica's waiting requests can (splitting by
// the fresh, lower demand at once left it unused by anyone: the 21/6/3
// heal of 30 requests over three replicas, 15.8 s on average over 20
// simulated runs then, 14.9 s after; one bucket takes 10 s).
func TestFleetShareKeepsItsPartUntilItPublishesLessDemand(t *testing.T) {
	c := newCore(t, "a")
	other := peer("b", "1", Demand{Lost: 1, Owned: 1}, Part{Burst: 1, Rate: 0.2})
	c.list(0, other)
	busy, low := Demand{Lost: 9, Owned: 1}, Demand{Lost: 1, Owned: 1}
	c.fs.Next(c.at(0), busy)
	c.write(0.1, true)
	c.list(1.3, other)
	before := c.fs.Next(c.at(1.4), busy)
	if before.Rate < 1.5 {
		t.Fatalf("applied %+v with 9 of the 10 quorum-lost requests, want most of the rate", before)
	}
	// Eight granted after this write of 9: b splits by 9 until the next.
	c.write(1.5, true)
	if p := c.fs.Next(c.at(1.7), low); p != before {
		t.Fatalf("applied %+v with 9 still on the Lease, want %+v: the others leave room for it", p, before)
	}
	if pub := c.write(2.6, true); pub.Demand != low {
		t.Fatalf("wrote demand %+v, want the local demand %+v", pub.Demand, low)
	}
	if p := c.fs.Next(c.at(2.8), low); p != before || !c.fs.Due(c.at(3.7)) {
		t.Fatalf("applied %+v (write due: %v) once the lower demand was written, want %+v until the lower claim is sent, and that write due",
			p, c.fs.Due(c.at(3.7)), before)
	}
	if pub := c.write(3.7, true); pub.Claim.Rate > 1.1 || c.fs.Applied().Rate > 1.1 {
		t.Fatalf("claim %+v, applied %+v once the lower claim was sent, want about half", pub.Claim, c.fs.Applied())
	}
}
