package etcdcluster

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// Health: etcd's own view of itself (alarms, the database against its
// quota, the leader, lagging members), read with one Status call per Ready
// member at most every Options.HealthEvery, and written only when what it shows
// changed (sizes in whole MiB).
const (
	// healthEvery (the default of Options.HealthEvery): alarms and
	// database sizes move over minutes, and a leader change is counted
	// whenever it is seen. One look per 30 s costs a 3-member cluster 0.1
	// Status calls per second, which etcd serves from memory without a
	// raft round.
	healthEvery = 30 * time.Second
	// leaderChangeWindow is how far back leader changes are counted.
	leaderChangeWindow = time.Hour
	// maxLeaderChanges bounds status.health.leaderChangeTimes: beyond 20
	// changes an hour the cluster is flapping, and a larger count says
	// nothing more.
	maxLeaderChanges = 20
	// laggingEntries: a follower that applied 5,000 raft entries fewer
	// than the most advanced member is more than a moment behind. Statuses
	// are read a few milliseconds apart, so under a steady load of a
	// thousand writes per second the normal skew stays far below it.
	laggingEntries = 5000
	mib            = 1 << 20
	// unreadyStatusTimeout bounds the Status call to a member that is not
	// Ready. A running etcd answers Status from memory within
	// milliseconds, alarms raised or not, so a second is plenty for the
	// alarmed member this look exists for; a member whose etcd is down
	// (its Pod terminal, or a replacement still starting) would hold the
	// whole look for the status timeout (3 s: the etcd client waits for a
	// connection until its deadline). After a power cycle the first look
	// comes as soon as etcd answers again, while the last members are
	// still being replaced, and it delayed the status write that reports
	// the cluster Available by those seconds.
	unreadyStatusTimeout = time.Second
)

// healthClock remembers when each cluster's health was last looked at. It
// lives in memory, not in the status: a timestamp there would make a write
// at every look.
type healthClock struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// due reports whether key's health, looked at once per every, is due at
// now, and if so marks it looked at.
func (c *healthClock) due(key string, now time.Time, every time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last = map[string]time.Time{}
	}
	if t, ok := c.last[key]; ok && now.Sub(t) < every && !now.Before(t) {
		return false
	}
	c.last[key] = now
	return true
}

// forget drops a deleted cluster.
func (c *healthClock) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.last, key)
}

// memberStatus is one member's answer.
type memberStatus struct {
	name string
	st   etcd.Status
}

// observeHealth looks at etcd's health when it is due and sets
// status.health, AlarmActive and NearQuota from it.
func (p *pass) observeHealth(ctx context.Context, clock *healthClock) {
	st := &p.ec.Status
	if st.Health == nil {
		p.setHealthUnknown()
	}
	if !p.etcd.ok || st.ClusterID == "" || clock == nil ||
		!clock.due(etcd.TargetKey(p.cl.Name, p.ec.Namespace, p.ec.Name), p.now, p.o.HealthEvery) {
		return
	}
	answers := p.askStatuses(ctx)
	if len(answers) == 0 {
		return
	}
	h := summarizeHealth(answers, p.etcd.members, st.Health, p.now)
	st.Health = &h
	p.setHealthConditions(h)
}

// askStatuses asks every running member with a Pod for its Status, all at
// once. Not only the Ready ones: etcd fails its own health check while an
// alarm is raised, so a member out of space is not Ready, and it is the one
// whose status matters most. Those not Ready get unreadyStatusTimeout.
func (p *pass) askStatuses(ctx context.Context) []memberStatus {
	t, err := p.target(ctx, "")
	if err != nil {
		return nil
	}
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		out []memberStatus
	)
	for _, m := range p.members.running {
		if m.Status.PodName == "" {
			continue
		}
		wg.Add(1)
		go func(m *v1alpha1.EtcdMember) {
			defer wg.Done()
			ctx := ctx
			if !isReady(m) {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, unreadyStatusTimeout)
				defer cancel()
			}
			s, err := p.cl.Etcd.Status(ctx, t, etcd.MemberClientURL(m))
			if err != nil {
				log.FromContext(ctx).V(1).Info("health not observed", "member", m.Name, "error", err.Error())
				return
			}
			mu.Lock()
			out = append(out, memberStatus{name: m.Name, st: s})
			mu.Unlock()
		}(m)
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// summarizeHealth turns the members' answers into status.health; prev is
// the status before, for the leader changes.
func summarizeHealth(answers []memberStatus, members []etcd.Member, prev *v1alpha1.EtcdHealth, now time.Time) v1alpha1.EtcdHealth {
	var h v1alpha1.EtcdHealth
	nameOf := func(id uint64) string {
		for _, e := range members {
			if e.ID == id && e.Name != "" {
				return e.Name
			}
		}
		return formatID(id)
	}
	var maxApplied uint64
	var largest int64 // the largest DB size, exact: the quota share is not rounded
	alarms := map[string]bool{}
	for _, a := range answers {
		largest = max(largest, a.st.DBSize)
		if a.st.Leader != 0 && h.Leader == "" {
			h.Leader = nameOf(a.st.Leader)
		}
		if a.st.DBSize/mib*mib >= h.DBSizeBytes {
			h.DBSizeBytes, h.DBSizeInUseBytes = a.st.DBSize/mib*mib, a.st.DBSizeInUse/mib*mib
		}
		h.QuotaBytes = max(h.QuotaBytes, a.st.QuotaBytes)
		maxApplied = max(maxApplied, a.st.RaftAppliedIndex)
		for _, al := range a.st.Alarms {
			alarms[al.Type+" on "+nameOf(al.MemberID)] = true
		}
	}
	if h.QuotaBytes == 0 {
		h.QuotaBytes = etcd.DefaultQuotaBytes
	}
	// From the exact size: the MiB-rounded one (which spares a status
	// write per byte written) would read a 3.9 MiB database of a 4 MiB
	// quota as 75 %, below NearQuota, while etcd raises NOSPACE.
	h.QuotaUsedPercent = int32(largest * 100 / h.QuotaBytes)
	for a := range alarms {
		h.Alarms = append(h.Alarms, a)
	}
	sort.Strings(h.Alarms)
	for _, a := range answers {
		if maxApplied-a.st.RaftAppliedIndex > laggingEntries {
			h.LaggingMembers = append(h.LaggingMembers, a.name)
		}
	}
	h.LeaderChangeTimes = leaderChanges(prev, h.Leader, now)
	h.LeaderChanges = int32(len(h.LeaderChangeTimes))
	return h
}

// leaderChanges carries the change times of the last hour over from prev,
// adding now when the leader differs from the one prev saw.
func leaderChanges(prev *v1alpha1.EtcdHealth, leader string, now time.Time) []metav1.Time {
	var out []metav1.Time
	if prev == nil {
		return nil
	}
	for _, t := range prev.LeaderChangeTimes {
		if now.Sub(t.Time) < leaderChangeWindow {
			out = append(out, t)
		}
	}
	if prev.Leader != "" && leader != "" && leader != prev.Leader {
		out = append(out, metav1.NewTime(now.Truncate(time.Second)))
	}
	if len(out) > maxLeaderChanges {
		out = out[len(out)-maxLeaderChanges:]
	}
	return out
}

// setHealthConditions computes AlarmActive and NearQuota from h.
func (p *pass) setHealthConditions(h v1alpha1.EtcdHealth) {
	t, f := metav1.ConditionTrue, metav1.ConditionFalse
	switch {
	case hasAlarm(h, "CORRUPT"):
		p.setCondition(v1alpha1.ConditionAlarmActive, t, v1alpha1.ReasonAlarmCorrupt, alarmMessage(h))
	case len(h.Alarms) > 0:
		p.setCondition(v1alpha1.ConditionAlarmActive, t, v1alpha1.ReasonAlarmNoSpace, alarmMessage(h))
	default:
		p.setCondition(v1alpha1.ConditionAlarmActive, f, v1alpha1.ReasonAlarmsNone, "no member reports an etcd alarm")
	}
	usage := fmt.Sprintf("the database is %d MiB (%d MiB in use), %d%% of its %d MiB quota",
		h.DBSizeBytes/mib, h.DBSizeInUseBytes/mib, h.QuotaUsedPercent, h.QuotaBytes/mib)
	if h.QuotaUsedPercent >= v1alpha1.NearQuotaPercent {
		p.setCondition(v1alpha1.ConditionNearQuota, t, v1alpha1.ReasonDatabaseNearQuota,
			usage+": compact and defragment (EtcdDefrag), or raise quotaBackendBytes, before etcd raises NOSPACE and refuses writes")
		return
	}
	p.setCondition(v1alpha1.ConditionNearQuota, f, v1alpha1.ReasonBelowQuota, usage)
}

func (p *pass) setHealthUnknown() {
	msg := "no member has answered a Status call yet"
	for _, c := range []string{v1alpha1.ConditionAlarmActive, v1alpha1.ConditionNearQuota} {
		p.setCondition(c, metav1.ConditionUnknown, v1alpha1.ReasonHealthUnknown, msg)
	}
}

func hasAlarm(h v1alpha1.EtcdHealth, typ string) bool {
	for _, a := range h.Alarms {
		if len(a) >= len(typ) && a[:len(typ)] == typ {
			return true
		}
	}
	return false
}

func alarmMessage(h v1alpha1.EtcdHealth) string {
	msg := fmt.Sprintf("active: %v", h.Alarms)
	if hasAlarm(h, "NOSPACE") {
		msg += "; etcd refuses writes until the database is compacted, defragmented and the alarm disarmed (an EtcdDefrag does the last two)"
	}
	if hasAlarm(h, "CORRUPT") {
		msg += "; a member's data differs from the others': look before replacing anything"
	}
	return msg
}
