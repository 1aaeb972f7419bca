package bench

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/etcdfleet/etcdfleet/test/timeline"
)

// GrantOf finds the limiter's grant that let a member's replacement go:
// the last one logged for member at or before its old Pod's delete. ok is
// false when none was logged.
type GrantOf func(member string, deleted time.Time) (at time.Time, waited time.Duration, ok bool)

// TimelineMembers turns the watch events of the Pods named in old into the
// milestones timeline draws, one Member per Pod, sorted by name; grant
// (nil: none known) adds the limiter's ask and grant. Unlike Replacements
// it never fails: a step not seen stays zero, and the picture shows the
// member in the step before it.
func TimelineMembers(events []PodEvent, old map[string]types.UID, grant GrantOf) []timeline.Member {
	out := make([]timeline.Member, 0, len(old))
	for n, uid := range old {
		m := timeline.Member{Name: n}
		var newUID types.UID
		for _, e := range events {
			switch {
			case e.Name != n:
			case e.UID == uid && e.Type == watch.Deleted:
				m.Deleted = e.At
			case e.UID == uid && e.Terminal() && m.Terminal.IsZero():
				m.Terminal = e.At
			case e.UID != uid && e.Type == watch.Added && newUID == "":
				newUID = e.UID
			case e.UID == newUID && newUID != "" && e.Ready && m.Ready.IsZero():
				m.Ready = e.At
			}
		}
		if grant != nil && !m.Deleted.IsZero() {
			if at, waited, ok := grant(n, m.Deleted); ok {
				m.Granted, m.Asked = at, at.Add(-waited)
			}
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
