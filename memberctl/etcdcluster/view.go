package etcdcluster

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pod"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// memberSet classifies the EtcdMembers a cluster controls. Members that
// carry the cluster label but not its controller reference (another
// incarnation's, awaiting garbage collection), and the members of a lost
// cluster being removed by a restore after total loss, are never looked at.
type memberSet struct {
	all      []*v1alpha1.EtcdMember // oldest first
	active   []*v1alpha1.EtcdMember // not being deleted
	running  []*v1alpha1.EtcdMember // active and not dormant
	dormant  []*v1alpha1.EtcdMember
	deleting []*v1alpha1.EtcdMember
	seed     *v1alpha1.EtcdMember // active with spec.bootstrap
}

func classify(ec *v1alpha1.EtcdCluster, items []v1alpha1.EtcdMember) *memberSet {
	s := &memberSet{}
	for i := range items {
		m := &items[i]
		if !metav1.IsControlledBy(m, ec) || ec.Status.Recovery.Replaced(m.UID) {
			continue
		}
		s.all = append(s.all, m)
		switch {
		case m.DeletionTimestamp != nil:
			s.deleting = append(s.deleting, m)
			continue
		case m.Spec.Dormant:
			s.dormant = append(s.dormant, m)
		default:
			s.running = append(s.running, m)
		}
		s.active = append(s.active, m)
		if m.Spec.Bootstrap && s.seed == nil {
			s.seed = m
		}
	}
	return s
}

// pending returns an active member whose spec.initialCluster is not set
// yet: created, but not (yet known to be) added to etcd.
func (s *memberSet) pending() *v1alpha1.EtcdMember {
	for _, m := range s.active {
		if m.Spec.InitialCluster == "" {
			return m
		}
	}
	return nil
}

// allReady reports whether every running member is Ready.
func (s *memberSet) allReady() bool {
	for _, m := range s.running {
		if !isReady(m) {
			return false
		}
	}
	return true
}

func (s *memberSet) byPeer(e etcd.Member) *v1alpha1.EtcdMember {
	for _, m := range s.all {
		if _, ok := etcd.FindMember([]etcd.Member{e}, m.Name, etcd.MemberPeerURL(m)); ok {
			return m
		}
	}
	return nil
}

func isReady(m *v1alpha1.EtcdMember) bool {
	return apimeta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.ConditionReady)
}

// listMembers reads the cluster's members from the cache.
func (p *pass) listMembers(ctx context.Context) error {
	items, err := etcd.Members(ctx, p.cl.Client, p.ec.Namespace, p.ec.Name)
	if err != nil {
		return fmt.Errorf("list members: %w", err)
	}
	p.members = classify(p.ec, items)
	p.versions = observeVersions(p.members.running, p.ec.Spec.Version, p.ec.Spec.Storage.Medium == v1alpha1.StorageMediumMemory)
	return nil
}

// fresh re-lists the members from the apiserver itself. Every step that
// creates or deletes a member re-checks its premise against it: the cache
// of EtcdMembers and the one of EtcdClusters are filled by separate watches,
// so a reconcile woken by our own status write may not see the member this
// controller created a moment ago, and would create a second one.
func (p *pass) fresh(ctx context.Context) (*memberSet, error) {
	items, err := etcd.Members(ctx, p.cl.Reader, p.ec.Namespace, p.ec.Name)
	if err != nil {
		return nil, fmt.Errorf("list members (live): %w", err)
	}
	return classify(p.ec, items), nil
}

// etcdView is one MemberList answer, or why there is none.
type etcdView struct {
	tried     bool
	ok        bool
	err       error
	endpoints int
	clusterID uint64
	members   []etcd.Member
}

// find returns etcd's entry of an EtcdMember.
func (v *etcdView) find(m *v1alpha1.EtcdMember) (etcd.Member, bool) {
	if !v.ok {
		return etcd.Member{}, false
	}
	return etcd.FindMember(v.members, m.Name, etcd.MemberPeerURL(m))
}

// voters counts etcd's voting members.
func (v *etcdView) voters() int32 {
	n := int32(0)
	for _, e := range v.members {
		if !e.IsLearner {
			n++
		}
	}
	return n
}

// probe takes one MemberList. Before the cluster ID is latched only the
// seed is asked (it is the cluster being discovered); afterwards the voters
// with a Pod, falling back to every member with one. The call is a live
// health probe too: it needs a leader and a quorum to answer.
func (p *pass) probe(ctx context.Context) {
	ms := p.members
	var dial []v1alpha1.EtcdMember
	if p.ec.Status.ClusterID == "" {
		if ms.seed == nil || ms.seed.Status.PodName == "" || ms.seed.Spec.InitialCluster == "" {
			return
		}
		dial = []v1alpha1.EtcdMember{*ms.seed}
	} else {
		if len(ms.running) == 0 {
			return // paused, or every member is being replaced
		}
		dial = etcd.Select(deref(ms.running), "")
		if !p.podsBackQuorum(ctx) {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, leaderlessListTimeout)
			defer cancel()
		}
	}
	p.etcd = p.memberList(ctx, dial)
	if !p.etcd.ok {
		log.FromContext(ctx).Info("etcd did not answer MemberList", "endpoints", p.etcd.endpoints, "error", p.etcd.err)
	}
	if p.ec.Status.ClusterID == "" {
		p.tryLatch()
	}
}

// leaderlessListTimeout bounds the MemberList of a cluster whose members'
// readiness shows no quorum. Their readiness probe is etcd's /health,
// which fails without a leader, and without one a linearizable MemberList
// never answers: the call would hold a worker for the whole list timeout
// (5 s), and after a power cycle every cluster of the fleet is in this
// state, so the workers spent waiting on dead clusters delayed the
// reconcile that sees a revived one Available (a fleet e2e spec with 3
// workers: 14 s from the last grant to Available). A cluster that does
// have a leader answers within milliseconds even through port-forward,
// and readiness lags a leader by at most a probe period, after which the
// member's Ready change wakes this reconciler again with the full timeout.
// The verdict does not change: without ready quorum it is QuorumLost
// whether etcd answered or not.
const leaderlessListTimeout = time.Second

func (p *pass) quorumBase() int32 {
	base := p.voterCount()
	if o := p.ec.Status.Observed; o != nil {
		base = max(base, o.Replicas)
	}
	return base
}

// podsBackQuorum reports whether the Ready voters whose Pods the cache
// does not show down make a quorum: a subset of the voters the Available
// condition counts (readyVoters), against the same base, so it is false
// whenever their readiness shows no quorum. A member's Ready status lags
// its Pod by the member reconciler's status write: after a node reboot
// the first member to go not Ready wakes this reconciler while the others
// still say Ready over Pods that are Succeeded or Failed, and the probe
// waited the whole list timeout (5 s) on them instead of
// leaderlessListTimeout. A Pod the cache does not hold is not counted as
// down: the status alone decides, as before.
func (p *pass) podsBackQuorum(ctx context.Context) bool {
	n := p.countReadyVoters(func(m *v1alpha1.EtcdMember) bool { return !podDown(ctx, p.cl.Client, m) })
	return etcd.HasQuorum(int(n), int(p.quorumBase()))
}

// podDown reports whether r holds m's Pod and shows it not serving.
func podDown(ctx context.Context, r client.Reader, m *v1alpha1.EtcdMember) bool {
	po := &corev1.Pod{}
	if m.Status.PodName == "" || r.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: m.Status.PodName}, po) != nil {
		return false
	}
	return !pod.IsServing(po)
}

func (p *pass) memberList(ctx context.Context, dial []v1alpha1.EtcdMember) etcdView {
	v := etcdView{tried: true, endpoints: len(dial)}
	if len(dial) == 0 {
		v.err = fmt.Errorf("no member has a Pod to dial")
		return v
	}
	t, err := etcd.TargetFor(ctx, p.cl.Reader, p.cl.Name, dial)
	if err != nil {
		v.err = err
		return v
	}
	v.clusterID, v.members, v.err = p.cl.Etcd.MemberList(ctx, t)
	v.ok = v.err == nil
	return v
}

// target builds the etcd target of the voters, leaving out one member.
func (p *pass) target(ctx context.Context, except string) (etcd.Target, error) {
	return etcd.TargetFor(ctx, p.cl.Reader, p.cl.Name, etcd.Select(deref(p.members.running), except))
}

// syncVoters merge-patches status.isVoter of every member etcd lists to
// !IsLearner. A patch of that one field survives the member controller's
// concurrent status writes.
func (p *pass) syncVoters(ctx context.Context) error {
	if !p.etcd.ok {
		return nil
	}
	for _, m := range p.members.active {
		e, ok := p.etcd.find(m)
		if !ok || m.Status.IsVoter == !e.IsLearner {
			continue
		}
		if err := setVoter(ctx, p.cl.Client, m, !e.IsLearner); err != nil {
			return err
		}
	}
	return nil
}

// voterCount is etcd's voter count, or the members' isVoter count when
// etcd did not answer.
func (p *pass) voterCount() int32 {
	if p.etcd.ok {
		return p.etcd.voters()
	}
	n := int32(0)
	for _, m := range p.members.running {
		if m.Status.IsVoter {
			n++
		}
	}
	return n
}

// isVoter reports whether a member votes: per etcd when it answered, else
// per the member's status.
func (p *pass) isVoter(m *v1alpha1.EtcdMember) bool {
	if p.etcd.ok {
		e, ok := p.etcd.find(m)
		return ok && !e.IsLearner
	}
	return m.Status.IsVoter
}

func setVoter(ctx context.Context, c client.Client, m *v1alpha1.EtcdMember, voter bool) error {
	patch := []byte(fmt.Sprintf(`{"status":{"isVoter":%t}}`, voter))
	if err := c.Status().Patch(ctx, m, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("set isVoter=%t on member %s: %w", voter, m.Name, err)
	}
	return nil
}

func deref(ms []*v1alpha1.EtcdMember) []v1alpha1.EtcdMember {
	out := make([]v1alpha1.EtcdMember, len(ms))
	for i, m := range ms {
		out[i] = *m
	}
	return out
}

// newest returns the most recently created member (by creation time, then
// name), the scale-down victim.
func newest(ms []*v1alpha1.EtcdMember) *v1alpha1.EtcdMember {
	if len(ms) == 0 {
		return nil
	}
	s := append([]*v1alpha1.EtcdMember(nil), ms...)
	sort.SliceStable(s, func(i, j int) bool {
		a, b := s[i], s[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	return s[len(s)-1]
}
