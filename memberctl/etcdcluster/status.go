package etcdcluster

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// health is what the Available and Degraded conditions are computed from.
type health struct {
	desired     int32 // status.observed.replicas
	running     int32 // members neither dormant nor being deleted
	ready       int32 // running members that are Ready
	voters      int32 // etcd's voters, or the members' isVoter count
	readyVoters int32 // running members that are Ready and vote
	latched     bool  // the cluster ID is known
	probed      bool  // MemberList was attempted
	reachable   bool  // ... and answered
	endpoints   int   // endpoints MemberList was sent to
	discovered  bool  // the cluster ID was latched just now
	terminal    string
	dormant     string // the dormant member, when paused
}

// verdict is one condition's status, reason and message.
type verdict struct {
	status  metav1.ConditionStatus
	reason  string
	message string
}

// availability computes Available and Degraded. Ready voters are counted
// against the quorum of max(desired replicas, current voters): during a
// scale-down the larger, current membership is what quorum needs.
func availability(h health) (available, degraded verdict) {
	t, f := metav1.ConditionTrue, metav1.ConditionFalse
	switch {
	case h.desired == 0 && h.running == 0:
		msg := "replicas is 0 and the cluster was never bootstrapped"
		if h.dormant != "" {
			msg = fmt.Sprintf("replicas is 0: member %s is dormant and keeps its data (PVC %s)", h.dormant, etcd.PVCName(h.dormant))
		}
		return verdict{f, v1alpha1.ReasonPaused, msg}, verdict{f, v1alpha1.ReasonPaused, msg}
	case !h.latched:
		d := verdict{f, v1alpha1.ReasonWaitingForSeed, "the cluster is bootstrapping"}
		if h.terminal != "" {
			return verdict{f, h.terminal, "the seed member did not form a cluster"}, d
		}
		if h.probed && !h.reachable {
			return verdict{f, v1alpha1.ReasonClusterUnreachable, unreachable(h)}, d
		}
		return verdict{f, v1alpha1.ReasonWaitingForSeed, "waiting for the seed member to form the cluster"}, d
	}
	base := max(h.desired, h.voters)
	counts := fmt.Sprintf("%d of %d voters ready, quorum is %d", h.readyVoters, base, etcd.Majority(int(base)))
	var a, d verdict
	switch {
	case !etcd.HasQuorum(int(h.readyVoters), int(base)):
		a = verdict{f, v1alpha1.ReasonQuorumLost, counts}
		d = verdict{t, v1alpha1.ReasonQuorumLost, counts}
	case h.probed && !h.reachable:
		a = verdict{f, v1alpha1.ReasonClusterUnreachable, unreachable(h)}
		d = verdict{t, v1alpha1.ReasonClusterUnreachable, unreachable(h)}
	case h.ready == h.running && h.readyVoters >= base:
		a = verdict{t, v1alpha1.ReasonQuorumHealthy, counts}
		d = verdict{f, v1alpha1.ReasonQuorumHealthy, counts}
	default:
		a = verdict{t, v1alpha1.ReasonQuorumAvailable, counts}
		d = verdict{t, v1alpha1.ReasonMembersUnhealthy, fmt.Sprintf("%d of %d running members ready; %s", h.ready, h.running, counts)}
	}
	if h.discovered && h.reachable {
		a = verdict{t, v1alpha1.ReasonClusterDiscovered, "the seed member formed the cluster"}
	}
	if h.terminal != "" {
		a = verdict{f, h.terminal, "the progress deadline passed; " + counts}
	}
	return a, d
}

func unreachable(h health) string {
	return fmt.Sprintf("etcd did not answer MemberList through %d endpoint(s); %d of %d members ready",
		h.endpoints, h.ready, h.running)
}

// buildStatus rebuilds the status from this pass's observations. It runs
// whatever etcd did, so a cluster that went down is reported down.
func (p *pass) buildStatus() {
	st, ms := &p.ec.Status, p.members
	h := health{
		running: int32(len(ms.running)), voters: p.voterCount(), readyVoters: p.readyVoters(),
		latched: st.ClusterID != "", probed: p.etcd.tried, reachable: p.etcd.ok, endpoints: p.etcd.endpoints,
		discovered: p.discovered, terminal: p.terminal,
	}
	if st.Observed != nil {
		h.desired = st.Observed.Replicas
	}
	for _, m := range ms.running {
		if isReady(m) {
			h.ready++
		}
	}
	if len(ms.dormant) > 0 {
		h.dormant = ms.dormant[0].Name
	}
	if !h.latched && (ms.seed == nil || !isReady(ms.seed)) {
		// A seed that is still starting does not answer; that is expected.
		h.probed = false
	}

	st.ReadyMembers = h.ready
	st.Replicas = int32(len(ms.all))
	st.Selector = v1alpha1.ClusterSelector(p.ec.Name)
	st.ObservedGeneration = p.ec.Generation
	st.Members = p.memberStatuses()
	p.setVersionStatus()
	p.setTemplateStatus()

	prev := apimeta.FindStatusCondition(st.Conditions, v1alpha1.ConditionAvailable)
	a, d := availability(h)
	// A majority lost for good says more than "quorum lost" or "etcd does
	// not answer" (members' Ready conditions can lag the loss).
	if p.majorityLost != "" && (a.reason == v1alpha1.ReasonQuorumLost || a.reason == v1alpha1.ReasonClusterUnreachable) {
		a = verdict{metav1.ConditionFalse, v1alpha1.ReasonMajorityLost, p.majorityLost}
		d = verdict{metav1.ConditionTrue, v1alpha1.ReasonMajorityLost, p.majorityLost}
		if prev == nil || prev.Reason != a.reason {
			p.event(corev1.EventTypeWarning, v1alpha1.ReasonMajorityLost, "%s", a.message)
		}
	}
	if a.reason == v1alpha1.ReasonClusterUnreachable && (prev == nil || prev.Reason != a.reason) {
		p.event(corev1.EventTypeWarning, v1alpha1.ReasonClusterUnreachable, "etcd did not answer: %v", p.etcd.err)
	}
	p.setCondition(v1alpha1.ConditionAvailable, a.status, a.reason, a.message)
	p.setCondition(v1alpha1.ConditionDegraded, d.status, d.reason, d.message)
	if a.reason == v1alpha1.ReasonPaused {
		p.setCondition(v1alpha1.ConditionProgressing, metav1.ConditionFalse, a.reason, a.message)
		return
	}
	p.setRollStatus()
}

// memberStatuses summarises every member, sorted by name. Roles come from
// etcd when it answered, else from status.isVoter.
func (p *pass) memberStatuses() []v1alpha1.EtcdClusterMemberStatus {
	var out []v1alpha1.EtcdClusterMemberStatus
	for _, m := range p.members.all {
		s := v1alpha1.EtcdClusterMemberStatus{Name: m.Name, ID: m.Status.MemberID, Ready: isReady(m)}
		if e, ok := p.etcd.find(m); ok {
			if s.ID == "" {
				s.ID = formatID(e.ID)
			}
			s.Role = v1alpha1.MemberRoleVoter
			if e.IsLearner {
				s.Role = v1alpha1.MemberRoleLearner
			}
		} else if !p.etcd.ok {
			switch {
			case m.Status.IsVoter:
				s.Role = v1alpha1.MemberRoleVoter
			case m.Status.MemberID != "":
				s.Role = v1alpha1.MemberRoleLearner
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
