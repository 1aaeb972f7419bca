package etcdmember

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pod"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
	"github.com/etcdfleet/etcdfleet/memberctl/replacement"
	"github.com/etcdfleet/etcdfleet/memberctl/upgrade"
)

// Version rolls. The cluster reconciler changes one member's spec.version
// at a time (followers first, the leader last after moving leadership
// away); this reconciler then restarts that member at the new version.
// A running Pod is never re-templated in place (its spec is immutable), so
// the Pod is deleted, through the one replacement flow: paused → lease →
// quorum without the member → shared gate (VersionRoll, planned: served
// after every heal) → status → UID-guarded delete.

// rollCause: a planned restart, never capped (a wave of rolls is not a
// member failing), still counted and backed off like any replacement.
var rollCause = replacement.Cause{Reason: "VersionRoll", Shutdown: true}

// etcdImage returns the image of the Pod's etcd container, or "".
func etcdImage(p *corev1.Pod) string {
	for _, c := range p.Spec.Containers {
		if c.Name == pod.ContainerName {
			return c.Image
		}
	}
	return ""
}

// needsRoll reports a live Pod whose etcd image tag is not
// v<spec.version>. Only the tag counts: a change of the manager's image
// repository setting does not restart every member of the fleet.
func needsRoll(p *corev1.Pod, m *v1alpha1.EtcdMember) bool {
	if p.DeletionTimestamp != nil || pod.IsTerminal(p) {
		return false
	}
	img := etcdImage(p)
	return img != "" && !strings.HasSuffix(img, ":v"+m.Spec.Version)
}

// rollMember restarts the member at spec.version. A PVC member's Pod is
// deleted and recreated on its claim with its member ID (createPod); a
// memory member's data is in its Pod only, so it is removed and the
// cluster reconciler adds a new member at spec.version in its place.
func (s *run) rollMember(ctx context.Context, p *corev1.Pod) (ctrl.Result, error) {
	img := etcdImage(p)
	died := fmt.Sprintf("Pod %s runs %s, spec.version is %s", p.Name, img, s.m.Spec.Version)
	if why := s.rollRefused(); why != "" {
		// The cluster reconciler never asks for such a change; whoever
		// edited spec.version did. The member keeps running as it is.
		return s.refuseRoll(ctx, p, died+"; not rolled: "+why)
	}
	j := job{action: gate.VersionRoll, cause: rollCause, podUID: p.UID, died: died, check: s.rollSafety}
	if isMemory(s.m) {
		return s.removeMember(ctx, j, "RollingMemoryMember", func() string {
			return "a memory-backed member cannot keep its data across a restart"
		})
	}
	s.m.Status.PodName, s.m.Status.PodUID = p.Name, p.UID
	j.remove = func(ctx context.Context) error { return s.cl.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID}) }
	j.announce = func(total int32) {
		s.cl.Recorder.Eventf(s.m, corev1.EventTypeNormal, "RollingPod",
			"%s: deleted it to recreate it at etcd %s on the same storage, with the same member ID (replacement %d)",
			died, s.m.Spec.Version, total)
	}
	return s.replace(ctx, j, memberLedger{s})
}

// rollSafety: a roll takes a member down, so it goes ahead only while the
// other voters, asked live, keep quorum without it. A single-member PVC
// cluster has no other voter: it is unavailable while its member restarts,
// which is the only way to change its version. A single memory member is
// never rolled: it would lose every key.
func (s *run) rollSafety(ctx context.Context) (safety, error) {
	q, err := s.liveQuorum(ctx, false)
	switch {
	case err != nil:
		return safety{}, err
	case q.voters == 0 && !isMemory(s.m):
		return safe(false)
	}
	return quorumWithout(q)
}

// rollRefused says why the member must not be restarted at spec.version:
// a change etcd refuses from the version the member runs (as etcd
// reported it), or a minor downgrade, which needs etcd's downgrade API
// enabled first. "" when the change is allowed or the running version is
// not known yet (the Pod then runs the image's version, which the cluster
// reconciler judged when it changed spec.version).
func (s *run) rollRefused() string {
	running := s.m.Status.Version
	if running == "" || running == s.m.Spec.Version {
		return ""
	}
	kind, err := upgrade.Check(running, s.m.Spec.Version)
	switch {
	case err != nil:
		return err.Error()
	case kind == upgrade.MinorDowngrade:
		return fmt.Sprintf("etcd %s → %s is a minor downgrade, which etcd accepts only once its downgrade is enabled", running, s.m.Spec.Version)
	}
	return ""
}

// refuseRoll keeps the member as it runs and says why, with one Warning
// Event per refused change.
func (s *run) refuseRoll(ctx context.Context, p *corev1.Pod, msg string) (ctrl.Result, error) {
	prev := meta.FindStatusCondition(s.m.Status.Conditions, v1alpha1.ConditionVersionDrifted)
	if prev == nil || prev.Reason != v1alpha1.ReasonUpgradePathRefused || prev.Message != msg {
		s.warn(v1alpha1.ConditionUpgradeBlocked, "%s", msg)
	}
	res, err := s.observe(ctx, p)
	s.setCondition(v1alpha1.ConditionVersionDrifted, metav1.ConditionTrue, v1alpha1.ReasonUpgradePathRefused, msg)
	return res, firstErr(err, s.writeStatus(ctx))
}
