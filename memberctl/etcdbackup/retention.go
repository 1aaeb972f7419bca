package etcdbackup

import (
	"time"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// toPrune picks the scheduled snapshots retention deletes. scheduled is
// newest first. Never pruned: snapshots in flight, ones already being
// deleted, and the newest Complete one. Complete ones beyond keep go, and
// any older than maxAge. A Failed one is kept for its error only while it
// is the newest that ended: a newer Complete or Failed one prunes it.
func toPrune(scheduled []*v1alpha1.EtcdSnapshot, r *v1alpha1.BackupRetention, now time.Time) []*v1alpha1.EtcdSnapshot {
	if r == nil {
		return nil
	}
	var out []*v1alpha1.EtcdSnapshot
	complete, ended := 0, false
	for _, s := range scheduled {
		if !s.Status.Phase.Terminal() {
			continue
		}
		newerEnded := ended
		ended = true
		if s.DeletionTimestamp != nil {
			continue
		}
		tooOld := r.MaxAge != nil && now.Sub(scheduledAt(s)) > r.MaxAge.Duration
		if s.Status.Phase == v1alpha1.SnapshotFailed {
			if newerEnded || tooOld {
				out = append(out, s)
			}
			continue
		}
		complete++
		if complete == 1 {
			continue // the newest Complete one: the last good backup
		}
		if tooOld || (r.Keep != nil && complete > int(*r.Keep)) {
			out = append(out, s)
		}
	}
	return out
}
