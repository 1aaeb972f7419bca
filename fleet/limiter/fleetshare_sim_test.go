package limiter

import (
	"fmt"
	"math/rand"
	"strconv"
	"testing"
	"time"

	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// fsOp is one request of a replica to the simulated apiserver: it takes
// effect (a write lands, a list reads the store) at applyAt and its reply
// arrives at doneAt, if ok.
type fsOp struct {
	sent, applyAt, doneAt time.Duration
	ok, lands, applied    bool
	pub                   Published
	recs                  []PeerRecord
}

// askEvery is how often, in ticks, waiting requests ask again: the
// limiter's Start loop grants them in between and holds the tokens.
const askEvery = 10

// fsReplica is one manager replica: a Limiter and its FleetShare, the
// requests waiting on it (each asks every askEvery ticks), and its Lease
// traffic.
type fsReplica struct {
	id      string
	l       *Limiter
	fs      *FleetShare
	waiting []gate.Request
	asked   map[gate.Request]time.Duration
	waits   []time.Duration
	owned   int
	dead    bool
	cut     func(at time.Duration) bool // partitioned from the apiserver
	listCut func(at time.Duration) bool // its lists fail, its writes do not
	listAt  time.Duration
	wakeAt  time.Duration // list at once from then on: ConfirmDelay after a write returned
	list    *fsOp
	write   *fsOp
	counts  map[int]int // grants per tick
	granted int
}

// fsSim runs replicas on one fake clock in 10 ms ticks against a store of
// peer Leases with random latency and lost replies.
type fsSim struct {
	t      *testing.T
	rng    *rand.Rand
	clock  *fakeClock
	start  time.Time
	tick   time.Duration
	o      ShareOptions
	lopts  Options
	reps   []*fsReplica
	store  map[string]PeerRecord
	seq    int
	maxLat time.Duration
	lost   float64 // chance that a reply is lost after the write landed
	ticks  int
	events map[int][]func()
	// over is the first tick at which the parts in force added up to more
	// than the fleet's bucket, with the parts; the grant bound follows from
	// their never doing so, and this catches an overlap too short or too
	// small to show in whole grants.
	over string
}

func newFSSim(t *testing.T, seed int64, n int, o ShareOptions) *fsSim {
	s := &fsSim{t: t, rng: rand.New(rand.NewSource(seed)), clock: newFakeClock(), tick: 10 * time.Millisecond,
		o: o, store: map[string]PeerRecord{}, maxLat: 200 * time.Millisecond, events: map[int][]func(){}}
	s.start = s.clock.Now()
	s.lopts = Options{Rate: o.Rate, Burst: o.Burst, Now: s.clock.Now, StartEmpty: true}
	for i := range n {
		s.reps = append(s.reps, s.newReplica(fmt.Sprintf("r%d", i)))
	}
	return s
}

func (s *fsSim) newReplica(id string) *fsReplica {
	rp := &fsReplica{id: id, wakeAt: never, l: New(s.lopts), fs: NewFleetShare(id, s.o),
		asked: map[gate.Request]time.Duration{}, counts: map[int]int{},
		cut: func(time.Duration) bool { return false }, listCut: func(time.Duration) bool { return false }}
	rp.l.begin()
	return rp
}

func (s *fsSim) now() time.Duration           { return s.clock.Now().Sub(s.start) }
func (s *fsSim) at(d time.Duration) time.Time { return s.start.Add(d) }

// at schedules f at simulated time d.
func (s *fsSim) on(d time.Duration, f func()) {
	k := int(d / s.tick)
	s.events[k] = append(s.events[k], f)
}

func (s *fsSim) lat() time.Duration { return time.Duration(s.rng.Int63n(int64(s.maxLat) + 1)) }

// op starts a request: partitioned, it fails after a timeout without
// effect; otherwise it takes effect after a latency and replies after
// another, unless the reply is lost.
func (s *fsSim) op(rp *fsReplica) *fsOp {
	now := s.now()
	if rp.cut(now) {
		return &fsOp{sent: now, applyAt: now, doneAt: now + 2*time.Second}
	}
	a := now + s.lat()
	return &fsOp{sent: now, applyAt: a, doneAt: a + s.lat(), ok: s.rng.Float64() >= s.lost, lands: true}
}

func (s *fsSim) run(d time.Duration) {
	for end := s.now() + d; s.now() < end; {
		for _, f := range s.events[s.ticks] {
			f()
		}
		var sum Part
		for _, rp := range s.reps {
			if !rp.dead {
				s.step(rp)
				sum = sum.plus(rp.fs.Applied())
			}
		}
		if total := (Part{Burst: s.o.Burst, Rate: float64(s.o.Rate)}); !sum.within(total) && s.over == "" {
			s.over = fmt.Sprintf("at %v parts add up to %+v > %+v:", s.now(), sum, total)
			for _, rp := range s.reps {
				if !rp.dead {
					s.over += fmt.Sprintf(" %s %+v", rp.id, rp.fs.Applied())
				}
			}
		}
		s.clock.Advance(s.tick)
		s.ticks++
	}
}

// step is one tick of one replica: its Lease traffic, its part, its grants.
func (s *fsSim) step(rp *fsReplica) {
	now := s.now()
	if w := rp.write; w != nil {
		if w.lands && !w.applied && now >= w.applyAt {
			s.seq++
			s.store[rp.id] = PeerRecord{ID: rp.id, Published: w.pub, Renewal: strconv.Itoa(s.seq)}
			w.applied = true
		}
		if now >= w.doneAt {
			rp.fs.EndWrite(s.at(w.sent), s.at(w.doneAt), w.ok)
			rp.write = nil
			if w.ok { // the manager lists then, to apply a raise soon
				rp.wakeAt = min(rp.wakeAt, now+s.o.ConfirmDelay)
			}
		}
	}
	if l := rp.list; l != nil {
		if l.lands && !l.applied && now >= l.applyAt {
			for _, r := range s.store {
				l.recs = append(l.recs, r)
			}
			l.applied = true
		}
		if now >= l.doneAt {
			if l.ok {
				rp.fs.Listed(s.at(l.sent), s.at(l.doneAt), l.recs)
			}
			rp.list = nil
		}
	}
	if rp.list == nil && (now >= rp.listAt || now >= rp.wakeAt) {
		rp.list, rp.listAt, rp.wakeAt = s.op(rp), now+s.o.ListInterval, never
		if rp.listCut(now) {
			rp.list.ok, rp.list.lands = false, false
		}
	}
	if rp.write == nil && rp.fs.Due(s.at(now)) {
		w := s.op(rp)
		w.pub = rp.fs.BeginWrite(s.at(now))
		rp.write = w
	}
	d := rp.l.Demand()
	d.Owned = rp.owned
	rp.l.SetPart(rp.fs.Next(s.at(now), d))
	before := rp.l.grantedTotal
	rp.l.step()
	if n := int(rp.l.grantedTotal - before); n > 0 {
		rp.counts[s.ticks] += n
		rp.granted += n
	}
	if s.ticks%askEvery != 0 {
		return // the grant is held for the request until it asks
	}
	before = rp.l.grantedTotal
	kept := rp.waiting[:0]
	for _, r := range rp.waiting {
		if reserve(rp.l, r).Delay == 0 {
			rp.waits = append(rp.waits, now-rp.asked[r])
			delete(rp.asked, r)
			continue
		}
		kept = append(kept, r)
	}
	rp.waiting = kept
	if n := int(rp.l.grantedTotal - before); n > 0 {
		rp.counts[s.ticks] += n
		rp.granted += n
	}
}

// never is a wake that is not set.
const never = time.Duration(1<<63 - 1)

// fail adds n waiting requests on rp for cluster, lost quorum or not.
func (s *fsSim) fail(rp *fsReplica, cluster string, n int, lost bool) {
	for range n {
		s.seq++
		r := req(cluster, s.seq)
		r.QuorumLost = lost
		rp.waiting = append(rp.waiting, r)
		rp.asked[r] = s.now()
	}
}

// kill stops rp: it grants and writes nothing more, its Lease stays until
// the others forget it, and its waiting requests move to heir after a
// lease duration, as its clusters' fences expire.
func (s *fsSim) kill(rp, heir *fsReplica) {
	rp.dead = true
	moved := rp.waiting
	rp.waiting = nil
	s.on(s.now()+s.o.LeaseDuration, func() {
		for _, r := range moved {
			heir.waiting = append(heir.waiting, r)
			heir.asked[r] = s.now()
		}
	})
}

// worst is the most grants, summed over replicas, in any window of span
// (ticks whose times lie within span of each other).
func (s *fsSim) worst(span time.Duration) int {
	sums := make([]int, s.ticks+1)
	for _, rp := range s.reps {
		for t, n := range rp.counts {
			sums[t] += n
		}
	}
	per := int(span/s.tick) + 1
	worst, cur := 0, 0
	for t := range sums {
		cur += sums[t]
		if t >= per {
			cur -= sums[t-per]
		}
		worst = max(worst, cur)
	}
	return worst
}

// checkBound fails t if any window of 0.1 s to 20 s saw more than
// Burst + Rate·T grants across replicas.
func (s *fsSim) checkBound(t *testing.T) {
	t.Helper()
	if s.over != "" {
		t.Fatal(s.over)
	}
	for _, span := range []time.Duration{100 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second, 20 * time.Second} {
		bound := s.o.Burst + int(float64(s.o.Rate)*span.Seconds()+1e-9)
		if w := s.worst(span); w > bound {
			t.Fatalf("worst %v window: %d grants across replicas, bound Burst + Rate·T = %d", span, w, bound)
		}
	}
}
