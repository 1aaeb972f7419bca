package etcdmember

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pod"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// observe reports a live (pending, running or terminating) Pod in status.
func (s *run) observe(ctx context.Context, p *corev1.Pod) (ctrl.Result, error) {
	m := s.m
	s.recordTemplate(p) // before podUID moves: a legacy Pod's hash is kept per UID
	if m.Status.PodUID != p.UID {
		// Another Pod may run another etcd version (a roll, or a spec
		// change applied on recreation): read it again once it is ready.
		m.Status.Version = ""
	}
	m.Status.PodName, m.Status.PodUID = p.Name, p.UID
	if !isMemory(m) {
		m.Status.PVCName = etcd.PVCName(m.Name)
	}
	// Keeps the role label in step with isVoter; a Pod gone since it was
	// read is left gone: the next reconcile sees it and takes the right
	// branch (a memory member must not come back under its old ID).
	if cur, err := pod.New(s.cl.Client, s.r.Options.Pod).RepairRoleLabel(ctx, m); err != nil || cur == nil {
		return ctrl.Result{}, err
	}
	result := ctrl.Result{RequeueAfter: s.r.Options.Resync}
	ready := p.DeletionTimestamp == nil && pod.IsReady(p)
	switch {
	case p.DeletionTimestamp != nil:
		s.setReady(false, v1alpha1.ReasonPodNotReady, "Pod is terminating")
		if left, on, err := s.nodeLossLeft(ctx, p); err == nil && on && (result.RequeueAfter == 0 || left < result.RequeueAfter) {
			result.RequeueAfter = left // the node counts as lost then
		}
	case !ready && pod.EtcdContainerStuck(p, s.r.Options.CrashLoopRestarts):
		return s.replaceCrashLooping(ctx, p)
	case !ready:
		s.setReady(false, v1alpha1.ReasonPodNotReady, "pod phase: "+string(p.Status.Phase))
		if p.Status.Phase == corev1.PodRunning && m.Status.Version == "" {
			s.warm(ctx) // a new Pod, whose version is read once it is Ready
		}
	case m.Status.MemberID == "":
		if err := s.discoverMemberID(ctx); err != nil {
			s.setReady(false, v1alpha1.ReasonDiscoveringMemberID, "Pod is ready; looking up its etcd member ID: "+err.Error())
			result.RequeueAfter = 2 * time.Second
			ready = false
			break
		}
		s.setReady(true, v1alpha1.ReasonPodReady, "Pod is ready and member "+m.Status.MemberID+" is known")
	default:
		s.setReady(true, v1alpha1.ReasonPodReady, "Pod is ready and member "+m.Status.MemberID+" is known")
	}
	if ready && m.Status.Version == "" {
		s.observeVersion(ctx)
	}
	if left := s.observeHealth(ready); left > 0 && left < result.RequeueAfter {
		result.RequeueAfter = left
	}
	return s.writeAndRequeue(ctx, result.RequeueAfter)
}

// discoverMemberID asks the voters (or the member itself, since learners
// refuse membership calls) for this member's ID.
func (s *run) discoverMemberID(ctx context.Context) error {
	members, err := etcd.Members(ctx, s.cl.Client, s.m.Namespace, s.m.Spec.ClusterName)
	if err != nil {
		return err
	}
	dial := etcd.Select(members, s.m.Name)
	if len(dial) == 0 {
		dial = []v1alpha1.EtcdMember{*s.m}
	}
	t, err := etcd.TargetFor(ctx, s.cl.Reader, s.cl.Name, dial)
	if err != nil {
		return err
	}
	_, list, err := s.cl.Etcd.MemberList(ctx, t)
	if err != nil {
		return err
	}
	found, ok := etcd.FindMember(list, s.m.Name, etcd.MemberPeerURL(s.m))
	if !ok {
		return fmt.Errorf("member %s is not in the etcd member list yet", s.m.Name)
	}
	s.m.Status.MemberID = fmt.Sprintf("%016x", found.ID)
	return nil
}

// warm starts the connection that the version read will take once the
// Pod is Ready, while etcd starts. Through the apiserver the dial is an
// upgrade or a stream pair, then etcd's TLS and HTTP/2 handshakes: in a
// fleet heal at load 12-17 on 2 cores the first read of a new Pod took
// 0.3-2.3 s, and the Ready write waited on it. Warmed, that read is one
// call on an open connection. Until etcd listens, the connection retries
// with gRPC's backoff (1 s, then 1.6 times longer), and the read wakes it.
func (s *run) warm(ctx context.Context) {
	if t, err := etcd.TargetFor(ctx, s.cl.Reader, s.cl.Name, []v1alpha1.EtcdMember{*s.m}); err == nil {
		s.cl.Etcd.Warm(ctx, t, etcd.MemberClientURL(s.m))
	}
}

// observeVersion records the running etcd version; best effort.
func (s *run) observeVersion(ctx context.Context) {
	t, err := etcd.TargetFor(ctx, s.cl.Reader, s.cl.Name, []v1alpha1.EtcdMember{*s.m})
	if err != nil {
		return
	}
	st, err := s.cl.Etcd.Status(ctx, t, etcd.MemberClientURL(s.m))
	if err != nil {
		return
	}
	s.m.Status.Version = st.Version
	if st.Version == s.m.Spec.Version {
		s.setCondition(v1alpha1.ConditionVersionDrifted, metav1.ConditionFalse, v1alpha1.ReasonVersionMatched, "running "+st.Version)
	} else {
		s.setCondition(v1alpha1.ConditionVersionDrifted, metav1.ConditionTrue, v1alpha1.ReasonVersionMismatch,
			fmt.Sprintf("running %s, spec says %s", st.Version, s.m.Spec.Version))
	}
}

// observeHealth tracks how long the member has been Ready and lifts the
// backoff and cap after the healthy period. It returns the time left until
// a pending reset, if any.
func (s *run) observeHealth(ready bool) time.Duration {
	st, left := s.r.Options.Policy.ObserveReady(s.now, s.m.Status.Replacement, ready)
	s.m.Status.Replacement = st
	if st != nil && st.CappedCount == 0 && meta.IsStatusConditionTrue(s.m.Status.Conditions, v1alpha1.ConditionReplacementsExhausted) {
		s.setCondition(v1alpha1.ConditionReplacementsExhausted, metav1.ConditionFalse, v1alpha1.ReasonCapReset,
			"the member was Ready for "+s.r.Options.Policy.HealthyReset.String())
	}
	return left
}

// memberID parses status.memberID; 0 when unknown.
func memberID(m *v1alpha1.EtcdMember) uint64 {
	id, err := strconv.ParseUint(m.Status.MemberID, 16, 64)
	if err != nil {
		return 0
	}
	return id
}
