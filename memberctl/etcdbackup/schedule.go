package etcdbackup

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// schedule gives the due times of a backup schedule: Next is the first
// one strictly after t.
type schedule interface {
	Next(t time.Time) time.Time
}

// parseSchedule is spec's schedule for the cluster with uid: its cron
// expression (UTC), or its interval at the cluster's offset.
func parseSchedule(spec *v1alpha1.BackupSpec, uid types.UID) (schedule, error) {
	if spec.Interval != nil {
		return newIntervalSchedule(spec.Interval.Duration, uid), nil
	}
	expr := strings.TrimSpace(spec.Cron)
	if strings.HasPrefix(expr, "@every") {
		// @every would bypass the 10 s minimum of interval, and interval
		// also spreads clusters; one way to say it is enough.
		return nil, errors.New("spec.backup.cron: use spec.backup.interval instead of @every")
	}
	s, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, fmt.Errorf("spec.backup.cron %q: %w", spec.Cron, err)
	}
	return utcSchedule{s}, nil
}

// utcSchedule evaluates a cron schedule in UTC, whatever the manager's
// local time zone.
type utcSchedule struct{ s cron.Schedule }

func (u utcSchedule) Next(t time.Time) time.Time { return u.s.Next(t.UTC()) }

// intervalSchedule is due at offset + k*period seconds since the Unix
// epoch, for every integer k.
type intervalSchedule struct {
	period, offset int64 // seconds
}

// minPeriod is the shortest interval (the CRD's CEL rule says the same),
// also a guard against a division by zero from an object the rule missed.
const minPeriod = 10

func newIntervalSchedule(every time.Duration, uid types.UID) intervalSchedule {
	period := max(int64(every/time.Second), minPeriod)
	h := fnv.New64a()
	_, _ = h.Write([]byte(uid))
	return intervalSchedule{period: period, offset: int64(h.Sum64() % uint64(period))}
}

func (s intervalSchedule) Next(t time.Time) time.Time {
	u := t.Unix() // whole seconds, rounded down: due times are whole seconds
	k := floorDiv(u-s.offset, s.period) + 1
	return time.Unix(k*s.period+s.offset, 0).UTC()
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// maxCatchUp bounds the walk over missed cron times in latestDue: a
// minutely schedule missed for a week is 10,080 of them.
const maxCatchUp = 20000

// latestDue is the newest due time in [first, now], first being due and
// not after now: missed runs collapse into that one, so a manager that was
// down starts one snapshot, not one per missed time.
func latestDue(s schedule, first, now time.Time) time.Time {
	if is, ok := s.(intervalSchedule); ok {
		// Exactly one due time lies in (now-period, now].
		return is.Next(now.Add(-time.Duration(is.period) * time.Second))
	}
	d := first
	for range maxCatchUp {
		n := s.Next(d)
		if n.After(now) {
			return d
		}
		d = n
	}
	return now.UTC().Truncate(time.Second)
}

// nameTimeFormat is the due time in a scheduled snapshot's name.
const nameTimeFormat = "20060102150405"

// maxSnapshotName is the EtcdSnapshot CRD's limit on names (its Job is
// <name>-snapshot).
const maxSnapshotName = 52

// snapshotName is <cluster>-<yyyymmddhhmmss of due> (UTC). A cluster name
// too long for that is cut and given a hash of the whole, so that two long
// names sharing a prefix do not collide. The name depends on the due time
// only, so two reconciles racing for one due time create one snapshot.
func snapshotName(cluster string, due time.Time) string {
	suffix := "-" + due.UTC().Format(nameTimeFormat)
	if len(cluster)+len(suffix) <= maxSnapshotName {
		return cluster + suffix
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(cluster))
	tag := fmt.Sprintf("-%06x", h.Sum32()&0xffffff)
	return strings.TrimRight(cluster[:maxSnapshotName-len(suffix)-len(tag)], "-") + tag + suffix
}
