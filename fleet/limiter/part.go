package limiter

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Part is a replica's part of the fleet-wide bucket: Burst tokens of the
// fleet's Burst and Rate tokens per second of its Rate. The two are
// accounted apart (see "Following demand" in the package doc): the
// replicas' Bursts add up to at most the fleet's Burst and their Rates to
// at most its Rate, so any window of T sees at most Burst + Rate·T grants
// across them, whatever T and however often the parts change.
type Part struct {
	Burst int
	Rate  float64
}

// none reports a part that grants nothing.
func (p Part) none() bool { return p.Burst < 1 || p.Rate <= 0 }

func (p Part) plus(q Part) Part  { return Part{p.Burst + q.Burst, p.Rate + q.Rate} }
func (p Part) minus(q Part) Part { return Part{p.Burst - q.Burst, p.Rate - q.Rate} }

// within reports p ≤ q in both components; rateSlack absorbs float
// rounding in sums of rates.
func (p Part) within(q Part) bool { return p.Burst <= q.Burst && p.Rate <= q.Rate+rateSlack }

// near reports p and q equal but for float rounding: a claim that differs
// by that is not worth a write.
func (p Part) near(q Part) bool { return p.Burst == q.Burst && math.Abs(p.Rate-q.Rate) <= rateSlack }

func minPart(p, q Part) Part { return Part{min(p.Burst, q.Burst), min(p.Rate, q.Rate)} }
func maxPart(p, q Part) Part { return Part{max(p.Burst, q.Burst), max(p.Rate, q.Rate)} }

// rateSlack is the float rounding a sum of rates may carry.
const rateSlack = 1e-9

// Demand is what a replica publishes about its queue: requests waiting
// whose etcd cluster lost quorum, the other waiting requests, and the
// workload clusters it owns.
type Demand struct {
	Lost, Other, Owned int
}

func (d Demand) waiting() bool { return d.Lost+d.Other > 0 }
func (d Demand) active() bool  { return d.waiting() || d.Owned > 0 }

func maxDemand(a, b Demand) Demand {
	return Demand{max(a.Lost, b.Lost), max(a.Other, b.Other), max(a.Owned, b.Owned)}
}

// Floors of the rate split, as fractions of the fleet's Rate. A replica
// with waiting requests gets at least waitRateFloor, so that it never
// halts however little it asks next to the others; one owning clusters
// with nothing waiting keeps idleRateFloor and a token of burst, so that
// its next request is granted at once while its part grows. The floors
// together take at most half of the Rate (splitParts scales them down).
const (
	waitRateFloor = 0.05
	idleRateFloor = 0.01
)

// PeerDemand is one replica's published demand, by replica ID.
type PeerDemand struct {
	ID     string
	Demand Demand
}

// splitParts is the target split of total among replicas: the same
// function of the same published demands on every replica, so that they
// agree on it without talking. Replicas owning nothing with nothing
// waiting get nothing. Every other replica gets a token of burst while
// burst lasts (waiting ones first, then by ID) and a rate floor; the rest
// of both follows demand: the quorum-lost requests waiting if any replica
// has some (those are served before any other, fleet-wide as within a
// replica), else all waiting requests, else the clusters owned, so that
// an idle fleet is split as the static share split it.
func splitParts(total Part, ds []PeerDemand) map[string]Part {
	ds = slices.Clone(ds)
	slices.SortFunc(ds, func(a, b PeerDemand) int { return cmp.Compare(a.ID, b.ID) })
	weights := weightsOf(ds)
	out := map[string]Part{}
	nWait, nIdle := 0, 0
	for _, d := range ds {
		switch {
		case d.Demand.waiting():
			nWait++
		case d.Demand.active():
			nIdle++
		}
	}
	if nWait+nIdle == 0 {
		return out
	}
	// Floors, scaled down so that together they take at most half the rate.
	wf, idf := waitRateFloor, idleRateFloor
	if f := wf*float64(nWait) + idf*float64(nIdle); f > 0.5 {
		wf, idf = wf*0.5/f, idf*0.5/f
	}
	floors := wf*float64(nWait) + idf*float64(nIdle)
	var sumW float64
	for _, w := range weights {
		sumW += w
	}
	bursts := splitBurst(total.Burst, ds, weights)
	for i, d := range ds {
		if !d.Demand.active() {
			continue
		}
		floor := idf
		if d.Demand.waiting() {
			floor = wf
		}
		frac := floor
		if sumW > 0 {
			frac += (1 - floors) * weights[i] / sumW
		}
		out[d.ID] = Part{Burst: bursts[i], Rate: total.Rate * frac}
	}
	return out
}

// weightsOf is each replica's claim on what the floors leave.
func weightsOf(ds []PeerDemand) []float64 {
	var lost, waiting bool
	for _, d := range ds {
		lost = lost || d.Demand.Lost > 0
		waiting = waiting || d.Demand.waiting()
	}
	w := make([]float64, len(ds))
	for i, d := range ds {
		switch {
		case lost:
			w[i] = float64(d.Demand.Lost)
		case waiting:
			w[i] = float64(d.Demand.Other)
		default:
			w[i] = float64(d.Demand.Owned)
		}
	}
	return w
}

// splitBurst gives each active replica one token while they last, waiting
// replicas first, and the rest by weight, largest remainder first (ties
// by ID, ds being sorted).
func splitBurst(b int, ds []PeerDemand, weights []float64) []int {
	out := make([]int, len(ds))
	order := make([]int, 0, len(ds))
	for i, d := range ds {
		if d.Demand.active() {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(i, j int) int {
		if wi, wj := ds[i].Demand.waiting(), ds[j].Demand.waiting(); wi != wj {
			if wi {
				return -1
			}
			return 1
		}
		return cmp.Compare(weights[j], weights[i])
	})
	left := b
	for _, i := range order {
		if left == 0 {
			break
		}
		out[i]++
		left--
	}
	var sumW float64
	for _, i := range order {
		sumW += weights[i]
	}
	if left == 0 || sumW == 0 {
		return out
	}
	rem := make([]float64, len(ds))
	given := 0
	for _, i := range order {
		exact := float64(left) * weights[i] / sumW
		n := int(math.Floor(exact))
		out[i] += n
		given += n
		rem[i] = exact - float64(n)
	}
	slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(rem[j], rem[i]) })
	for _, i := range order[:left-given] {
		out[i]++
	}
	return out
}

// Annotations on a replica's peer Lease that carry what it publishes.
const (
	// DemandAnnotation is "lost,other,owned" (see Demand).
	DemandAnnotation = "etcdfleet.io/limiter-demand"
	// ClaimAnnotation is "burst,rate": the most this replica may be
	// granting (see FleetShare).
	ClaimAnnotation = "etcdfleet.io/limiter-claim"
)

// Published is what one replica writes on its peer Lease.
type Published struct {
	Demand Demand
	Claim  Part
}

// Annotations encodes p for the peer Lease.
func (p Published) Annotations() map[string]string {
	return map[string]string{
		DemandAnnotation: fmt.Sprintf("%d,%d,%d", p.Demand.Lost, p.Demand.Other, p.Demand.Owned),
		ClaimAnnotation:  fmt.Sprintf("%d,%s", p.Claim.Burst, strconv.FormatFloat(p.Claim.Rate, 'g', -1, 64)),
	}
}

// ParsePublished decodes a peer Lease's annotations. A claim that is
// missing or malformed (a replica of an older version, or a bad write)
// reads as the whole of total: a claim can only keep the others from
// growing, so the safe reading of an unknown one is the largest. A
// malformed demand reads as none.
func ParsePublished(ann map[string]string, total Part) Published {
	var p Published
	if f, ok := ints(ann[DemandAnnotation], 3); ok {
		p.Demand = Demand{f[0], f[1], f[2]}
	}
	p.Claim = total
	parts := strings.Split(ann[ClaimAnnotation], ",")
	if len(parts) != 2 {
		return p
	}
	b, err1 := strconv.Atoi(parts[0])
	r, err2 := strconv.ParseFloat(parts[1], 64)
	if err1 != nil || err2 != nil || b < 0 || r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		return p
	}
	p.Claim = Part{Burst: b, Rate: r}
	return p
}

func ints(s string, n int) ([]int, bool) {
	parts := strings.Split(s, ",")
	if len(parts) != n {
		return nil, false
	}
	out := make([]int, n)
	for i, f := range parts {
		v, err := strconv.Atoi(f)
		if err != nil || v < 0 {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}
