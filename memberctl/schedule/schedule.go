package schedule

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Schedule gives the due times of a schedule: Next is the first one
// strictly after t.
type Schedule interface {
	Next(t time.Time) time.Time
}

// Parse is the schedule of the object with uid: its cron expression
// (UTC), or its interval at the object's offset. field names the spec
// field ("spec.backup") in errors.
func Parse(field, cronExpr string, interval *metav1.Duration, uid types.UID) (Schedule, error) {
	if interval != nil {
		return newIntervalSchedule(interval.Duration, uid), nil
	}
	expr := strings.TrimSpace(cronExpr)
	if strings.HasPrefix(expr, "@every") {
		// @every would bypass the minimum of interval, and interval also
		// spreads objects; one way to say it is enough.
		return nil, fmt.Errorf("%s.cron: use %s.interval instead of @every", field, field)
	}
	if strings.Contains(expr, "TZ=") {
		// The cron library panics on a TZ prefix without fields, and a
		// time zone would contradict the API: schedules are in UTC.
		return nil, fmt.Errorf("%s.cron %q: schedules are in UTC; remove CRON_TZ= or TZ=", field, cronExpr)
	}
	s, err := parseStandard(expr)
	if err != nil {
		return nil, fmt.Errorf("%s.cron %q: %w", field, cronExpr, err)
	}
	return utcSchedule{s}, nil
}

// parseStandard is cron.ParseStandard with its panics (a library bug on
// some malformed input) turned into errors: a bad schedule must show as
// the object's condition, not as a crashed reconcile.
func parseStandard(expr string) (s cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("not a cron schedule (%v)", r)
		}
	}()
	return cron.ParseStandard(expr)
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

// minPeriod guards against a division by zero from an object its CRD's
// CEL rule missed; each API's rule sets its own, larger, minimum.
const minPeriod = 1

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

// LatestDue is the newest due time in [first, now], first being due and
// not after now: missed runs collapse into that one, so a manager that was
// down starts one snapshot, not one per missed time.
func LatestDue(s Schedule, first, now time.Time) time.Time {
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
