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
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
	"github.com/etcdfleet/etcdfleet/memberctl/replacement"
	"github.com/etcdfleet/etcdfleet/memberctl/upgrade"
)

// Rolls. The cluster reconciler changes one member's spec at a time
// (followers first, the leader last after moving leadership away): its
// version, or its template (resources, affinity, topologySpreadConstraints,
// options); this reconciler then restarts that member on the new spec. A
// running Pod is never re-templated in place (its spec is immutable), so
// the Pod is deleted, through the one replacement flow: paused → lease →
// quorum without the member → shared gate (VersionRoll or TemplateRoll,
// planned: served after every heal) → status → UID-guarded delete.

// Roll causes: planned restarts, never capped (a wave of rolls is not a
// member failing), still counted and backed off like any replacement.
var (
	rollCause         = replacement.Cause{Reason: string(gate.VersionRoll), Shutdown: true}
	templateRollCause = replacement.Cause{Reason: string(gate.TemplateRoll), Shutdown: true}
)

// etcdImage returns the image of the Pod's etcd container, or "".
func etcdImage(p *corev1.Pod) string {
	for _, c := range p.Spec.Containers {
		if c.Name == pod.ContainerName {
			return c.Image
		}
	}
	return ""
}

// versionDrifted reports a Pod whose etcd image tag is not
// v<spec.version>. Only the tag counts: a change of the manager's image
// repository setting does not restart every member of the fleet.
func versionDrifted(p *corev1.Pod, m *v1alpha1.EtcdMember) bool {
	img := etcdImage(p)
	return img != "" && !strings.HasSuffix(img, ":v"+m.Spec.Version)
}

// runningTemplate is the template hash p was built from: its annotation,
// or for a Pod from before template hashes the hash recorded when it was
// first seen (status.templateHash of that Pod UID); "" when not known yet.
func runningTemplate(p *corev1.Pod, m *v1alpha1.EtcdMember) string {
	if h := pod.RunningTemplateHash(p); h != "" {
		return h
	}
	if m.Status.PodUID == p.UID {
		return m.Status.TemplateHash
	}
	return ""
}

// templateDrifted reports a Pod built from another template than its
// member's spec now (the cluster reconciler re-templated the member).
func templateDrifted(p *corev1.Pod, m *v1alpha1.EtcdMember) bool {
	h := runningTemplate(p, m)
	return h != "" && h != pod.TemplateHash(&m.Spec)
}

// needsRoll reports a live Pod that does not run its member's spec: another
// etcd version or another template.
func needsRoll(p *corev1.Pod, m *v1alpha1.EtcdMember) bool {
	if p.DeletionTimestamp != nil || pod.IsTerminal(p) {
		return false
	}
	return versionDrifted(p, m) || templateDrifted(p, m)
}

// recordTemplate sets status.templateHash to the template p runs. A Pod
// without the annotation was created before template hashes, when a member
// was never re-templated: it runs its member's spec as first seen, which
// is then kept for that Pod.
func (s *run) recordTemplate(p *corev1.Pod) {
	if h := runningTemplate(p, s.m); h != "" {
		s.m.Status.TemplateHash = h
		return
	}
	s.m.Status.TemplateHash = pod.TemplateHash(&s.m.Spec)
}

// rollMember restarts the member on its spec. A PVC member's Pod is
// deleted and recreated on its claim with its member ID (createPod); a
// memory member's data is in its Pod only, so it is removed and the
// cluster reconciler adds a new member on the spec in its place. A version
// change goes first, judged by etcd's upgrade rules; a template change
// alone is a TemplateRoll.
func (s *run) rollMember(ctx context.Context, p *corev1.Pod) (ctrl.Result, error) {
	img := etcdImage(p)
	action, cause, to := gate.VersionRoll, rollCause, "etcd "+s.m.Spec.Version
	died := fmt.Sprintf("Pod %s runs %s, spec.version is %s", p.Name, img, s.m.Spec.Version)
	if !versionDrifted(p, s.m) {
		action, cause, to = gate.TemplateRoll, templateRollCause, "the member's new Pod template"
		died = fmt.Sprintf("Pod %s runs Pod template %s, the member's is %s (resources, affinity, topology spread, etcd options or the TLS Secrets' contents changed)",
			p.Name, runningTemplate(p, s.m), pod.TemplateHash(&s.m.Spec))
	} else if why := s.rollRefused(ctx); why != "" {
		// The cluster reconciler never asks for such a change; whoever
		// edited spec.version did. The member keeps running as it is.
		return s.refuseRoll(ctx, p, died+"; not rolled: "+why)
	}
	j := job{action: action, cause: cause, podUID: p.UID, died: died, check: s.rollSafety}
	if isMemory(s.m) {
		return s.removeMember(ctx, j, "RollingMemoryMember", func() string {
			return "a memory-backed member cannot keep its data across a restart"
		})
	}
	s.m.Status.PodName, s.m.Status.PodUID = p.Name, p.UID
	j.remove = func(ctx context.Context) error { return s.cl.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID}) }
	j.announce = func(total int32) {
		s.cl.Recorder.Eventf(s.m, corev1.EventTypeNormal, "RollingPod",
			"%s: deleted it to recreate it on %s on the same storage, with the same member ID (replacement %d)",
			died, to, total)
	}
	return s.replace(ctx, j, memberLedger{s})
}

// rollSafety: a roll takes a member down, so it goes ahead only while the
// other voters, asked live, keep quorum without it. A single-member PVC
// cluster has no other voter: it is unavailable while its member restarts,
// which is the only way to change its version. A single memory member is
// never rolled: it would lose every key.
func (s *run) rollSafety(ctx context.Context) (safety, error) {
	q, err := s.liveQuorum(ctx, quorumAsk{steadyOnly: true})
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
// reported it), or a minor downgrade before etcd's downgrade towards it is
// enabled and the member's own storage moved to it (the member itself is
// asked). "" when the change is allowed or the running version is not
// known yet (the Pod then runs the image's version, which the cluster
// reconciler judged when it changed spec.version).
func (s *run) rollRefused(ctx context.Context) string {
	running := s.m.Status.Version
	if running == "" || running == s.m.Spec.Version {
		return ""
	}
	kind, err := upgrade.Check(running, s.m.Spec.Version)
	switch {
	case err != nil:
		return err.Error()
	case kind == upgrade.MinorDowngrade:
		return s.downgradeRefused(ctx, running)
	}
	return ""
}

// downgradeRefused says why the member may not run the lower minor of
// spec.version yet: etcd would refuse it unless its downgrade is enabled
// towards that minor and the member's storage is on it.
func (s *run) downgradeRefused(ctx context.Context, running string) string {
	minor := upgrade.MinorOf(s.m.Spec.Version)
	refused := fmt.Sprintf("etcd %s → %s is a minor downgrade, which etcd accepts only once its downgrade to %s is enabled and the member's storage moved to it",
		running, s.m.Spec.Version, minor)
	t, err := etcd.TargetFor(ctx, s.cl.Reader, s.cl.Name, []v1alpha1.EtcdMember{*s.m})
	if err != nil {
		return refused + ": " + err.Error()
	}
	st, err := s.cl.Etcd.Status(ctx, t, etcd.MemberClientURL(s.m))
	switch {
	case err != nil:
		return refused + ": " + err.Error()
	case upgrade.MinorOf(st.DowngradeTarget) != minor || upgrade.MinorOf(st.StorageVersion) != minor:
		return fmt.Sprintf("%s (the member reports downgrade target %q, storage %q)", refused, st.DowngradeTarget, st.StorageVersion)
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
