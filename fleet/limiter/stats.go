package limiter

import "maps"

// Stats is a point-in-time view of the limiter for the dashboard.
type Stats struct {
	// Rate is tokens per second; Burst the bucket size: this replica's
	// share of them with SetShare.
	Rate  float64
	Burst int
	// TokensAvailable is the tokens in the bucket now, refunds included.
	TokensAvailable float64
	// Waiting is the number of queued requests, WaitingByCluster the same
	// per workload cluster (clusters with none are left out).
	Waiting          int
	WaitingByCluster map[string]int
	// Unclaimed is the number of grants whose caller has not come back yet.
	Unclaimed int
	// GrantedTotal counts grants made; ReturnedTotal the tokens given back
	// by Cancel, expiry and ForgetCluster.
	GrantedTotal  uint64
	ReturnedTotal uint64
	// ThrottledTotal counts requests told to wait at least once;
	// ThrottledByCluster the same per cluster still engaged.
	ThrottledTotal     uint64
	ThrottledByCluster map[string]uint64
}

// Snapshot returns the limiter's current Stats. The maps are copies.
func (l *Limiter) Snapshot() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.nowLocked()
	byCluster := make(map[string]int, len(l.queue.clusters))
	for name := range l.queue.clusters {
		if n := l.queue.lenCluster(name); n > 0 {
			byCluster[name] = n
		}
	}
	return Stats{
		Rate:               float64(l.bucket.Limit()),
		Burst:              l.bucket.Burst(),
		TokensAvailable:    l.tokensLocked(now),
		Waiting:            l.queue.len(),
		WaitingByCluster:   byCluster,
		Unclaimed:          l.unclaimed,
		GrantedTotal:       l.grantedTotal,
		ReturnedTotal:      l.returnedTotal,
		ThrottledTotal:     l.throttledTotal,
		ThrottledByCluster: maps.Clone(l.throttledBy),
	}
}

// gauges returns the two values exported as gauges, cheaper than Snapshot
// since a scrape needs no maps.
func (l *Limiter) gauges() (tokens float64, waiting int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tokensLocked(l.nowLocked()), l.queue.len()
}
