package schedule_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcdfleet/etcdfleet/memberctl/schedule"
)

// field is what the callers pass for spec.backup; it only names the field
// in errors.
const field = "spec.backup"

func every(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func TestIntervalRunsAtTheClusterOffsetEveryPeriod(t *testing.T) {
	s, err := schedule.Parse(field, "", every(time.Hour), "uid-a")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	first := s.Next(t0)
	if !first.After(t0) || first.Sub(t0) > time.Hour {
		t.Fatalf("first run %s not within the hour after %s", first, t0)
	}
	if got := s.Next(first); got.Sub(first) != time.Hour {
		t.Errorf("Next(a due time) = %s, want one interval later", got)
	}
	if got := s.Next(first.Add(-time.Nanosecond)); !got.Equal(first) {
		t.Errorf("Next just before a due time = %s, want %s", got, first)
	}
	if got := s.Next(first.Add(1500 * time.Millisecond)); !got.Equal(first.Add(time.Hour)) {
		t.Errorf("Next within a second after a due time = %s, want the next one", got)
	}
	again, _ := schedule.Parse(field, "", every(time.Hour), "uid-a")
	if !again.Next(t0).Equal(first) {
		t.Error("the same UID must give the same times (a restarted manager keeps them)")
	}
}

func TestIntervalOffsetsSpreadClusters(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	distinct := map[time.Time]bool{}
	for i := range 20 {
		s, _ := schedule.Parse(field, "", every(time.Hour), types.UID(strings.Repeat("x", i)+"-uid"))
		distinct[s.Next(t0)] = true
	}
	if len(distinct) < 15 {
		t.Errorf("20 clusters share %d start times in an hour; their offsets do not spread them", len(distinct))
	}
}

func TestCronIsUTCAndRejectsEvery(t *testing.T) {
	s, err := schedule.Parse(field, "30 2 * * *", nil, "u")
	if err != nil {
		t.Fatal(err)
	}
	berlin := time.FixedZone("CET", 3600)
	got := s.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, berlin))
	if want := time.Date(2026, 1, 1, 2, 30, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("Next = %s, want %s (UTC)", got, want)
	}
	for _, bad := range []string{"@every 1s", "61 * * * *", "* * *"} {
		if _, err := schedule.Parse(field, bad, nil, "u"); err == nil {
			t.Errorf("cron %q parsed", bad)
		}
	}
}

func TestMissedRunsCollapseIntoTheLatest(t *testing.T) {
	now := time.Date(2026, 1, 8, 12, 0, 30, 0, time.UTC)
	cron, _ := schedule.Parse(field, "0 * * * *", nil, "u")
	first := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // a week of hourly runs missed
	if got, want := schedule.LatestDue(cron, first, now), time.Date(2026, 1, 8, 12, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("cron: latestDue = %s, want %s", got, want)
	}
	iv, _ := schedule.Parse(field, "", every(10*time.Second), "u")
	d := schedule.LatestDue(iv, iv.Next(now.Add(-72*time.Hour)), now)
	if d.After(now) || now.Sub(d) >= 10*time.Second || !iv.Next(d.Add(-time.Second)).Equal(d) {
		t.Errorf("interval: latestDue = %s, want the due time in the last 10 s before %s", d, now)
	}
}

// A time zone prefix panicked the cron library (and with it every
// reconcile of the cluster); it is a plain error now, and no other input
// panics either.
func TestCronTimeZonePrefixIsAnError(t *testing.T) {
	for _, expr := range []string{"CRON_TZ=UTC", "TZ=UTC", "CRON_TZ=Europe/Berlin 0 * * * *", "TZ=UTC 0 3 * * *"} {
		_, err := schedule.Parse(field, expr, nil, "uid")
		if err == nil || !strings.Contains(err.Error(), "remove CRON_TZ=") {
			t.Errorf("Parse(%q) = %v, want an error saying schedules are in UTC (remove CRON_TZ=)", expr, err)
		}
	}
}

func FuzzParseCron(f *testing.F) {
	for _, seed := range []string{"0 * * * *", "CRON_TZ=UTC", "@daily", "*/5 * * * *", "TZ=", "0 0 31 2 *"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		_, _ = schedule.Parse(field, expr, nil, "uid") // must not panic
	})
}
