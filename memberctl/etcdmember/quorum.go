package etcdmember

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pod"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// quorumLostCached reports, from the cache, whether this member is one of
// those that give the etcd cluster back its quorum: fewer than a majority
// of the voters are up (Ready, with a cached Pod that is running and
// ready), even counting the other voters already on their way back (their
// replacement granted, or their new Pod starting). It only orders the
// shared gate's queue for terminal Pods, so a cached view is good enough:
// the gate serves these first, so that after a fleet reboot every cluster
// gets the members that restore its quorum before any cluster gets the
// rest (a third member of a cluster whose other two are coming back waits
// behind another cluster's second). The Pods are read too because the
// members' Ready conditions lag: each is written by its own member's
// reconcile, which under load comes seconds after the Pod went terminal,
// and until then a cluster that lost quorum would queue behind the
// clusters that said so first.
//
// It also returns what it counted, for the gate (gate.Request.Quorum).
func (s *run) quorumLostCached(ctx context.Context) (bool, *gate.QuorumView, error) {
	members, err := etcd.Members(ctx, s.cl.Client, s.m.Namespace, s.m.Spec.ClusterName)
	if err != nil {
		return false, nil, err
	}
	voters, up, coming := 0, 0, 0
	var counted []string
	for i := range members {
		m := &members[i]
		if !m.Status.IsVoter {
			continue
		}
		voters++
		st, err := s.voterState(ctx, m)
		if err != nil {
			return false, nil, err
		}
		switch {
		case st == voterUp:
			up++
		case st == voterComing && m.Name != s.m.Name:
			coming++
		default:
			continue
		}
		if m.Name != s.m.Name {
			counted = append(counted, m.Name)
		}
	}
	view := &gate.QuorumView{Majority: etcd.Majority(voters), Counted: counted}
	return !etcd.HasQuorum(up+coming, voters), view, nil
}

// voterState is where a voter stands in a heal, from the cache.
type voterState int

const (
	// voterDown: its Pod is terminal, being deleted by someone else, or
	// gone, and its replacement not granted yet.
	voterDown voterState = iota
	// voterUp: Ready, its Pod running and ready.
	voterUp
	// voterComing: its replacement was granted (status PodReplacing is
	// written before the delete), or a Pod of it runs and is not ready yet:
	// a new Pod starting. A crash-looping Pod counts here too, which can
	// only move its cluster's other requests behind other clusters'
	// quorum-restoring ones, never hold them.
	voterComing
)

func (s *run) voterState(ctx context.Context, m *v1alpha1.EtcdMember) (voterState, error) {
	p := &corev1.Pod{}
	err := s.cl.Client.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: m.Name}, p)
	switch {
	case apierrors.IsNotFound(err):
		p = nil
	case err != nil:
		return voterDown, err
	}
	live := p != nil && p.DeletionTimestamp == nil && !pod.IsTerminal(p)
	ready := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.ConditionReady)
	switch {
	case p != nil && pod.IsServing(p) && ready != nil && ready.Status == metav1.ConditionTrue:
		return voterUp, nil
	case live, ready != nil && ready.Reason == v1alpha1.ReasonPodReplacing:
		return voterComing, nil
	}
	return voterDown, nil
}

// quorumView is the etcd cluster's quorum as seen live at decision time:
// membership from MemberList and health from each voter's own Status
// answer, never from a cached ready count, which can lag.
type quorumView struct {
	voters        int
	healthyOthers int  // voters other than this member that answer
	selfHealthy   bool // this member answers, as a voter (asked only when it may)
	// listed: MemberList answered. When it did not (etcd 3.5+ serves it
	// only with a leader), voters come from the members' status.isVoter.
	listed bool
}

// holdsWithout: the voters other than this member are a majority, so
// removing it (a raft proposal) can commit and leaves quorum intact.
func (q quorumView) holdsWithout() bool {
	return q.voters > 0 && etcd.HasQuorum(q.healthyOthers, q.voters)
}

// lost: even with this member the healthy voters are no majority.
func (q quorumView) lost() bool {
	healthy := q.healthyOthers
	if q.selfHealthy {
		healthy++
	}
	return q.voters > 0 && !etcd.HasQuorum(healthy, q.voters)
}

// answered: some voter answered, so etcd is reachable from here and the
// view is not a network failure of ours.
func (q quorumView) answered() bool { return q.healthyOthers > 0 || q.selfHealthy }

func (q quorumView) String() string {
	return fmt.Sprintf("%d of %d voters healthy without it, %d needed", q.healthyOthers, q.voters, etcd.Majority(q.voters))
}

// quorumAsk says whom liveQuorum counts.
type quorumAsk struct {
	// self asks the member itself too (see answering).
	self bool
	// steadyOnly leaves out other voters whose etcd crash-loops: one that
	// answers in the second between two crashes holds no quorum. Decisions
	// that take a member down while it may still serve (a crash-loop or
	// node-loss replacement, a roll) set it.
	steadyOnly bool
}

// liveQuorum reads the members from the apiserver and etcd's membership
// and health through the other members (and the member itself with
// ask.self; see answering).
func (s *run) liveQuorum(ctx context.Context, ask quorumAsk) (quorumView, error) {
	members, err := etcd.Members(ctx, s.cl.Reader, s.m.Namespace, s.m.Spec.ClusterName)
	if err != nil {
		return quorumView{}, err
	}
	others := etcd.Select(members, s.m.Name)
	if len(others) == 0 {
		return quorumView{}, nil // nobody else to hold quorum or to ask
	}
	t, err := etcd.TargetFor(ctx, s.cl.Reader, s.cl.Name, others)
	if err != nil {
		return quorumView{}, err
	}
	var q quorumView
	var voters []*v1alpha1.EtcdMember // nil entries: voters with no EtcdMember
	if _, list, err := s.cl.Etcd.MemberList(ctx, t); err == nil {
		q.listed = true
		for _, e := range list {
			if !e.IsLearner {
				voters = append(voters, byEtcdMember(members, e))
			}
		}
	} else {
		for i := range members {
			if members[i].Status.IsVoter && members[i].DeletionTimestamp == nil {
				voters = append(voters, &members[i])
			}
		}
	}
	q.voters = len(voters)
	asked := voters
	if ask.steadyOnly {
		if asked, err = s.steady(ctx, voters); err != nil {
			return quorumView{}, err
		}
	}
	q.healthyOthers, q.selfHealthy = s.answering(ctx, t, asked, ask.self)
	return q, nil
}

// steady returns the voters other than this member whose live Pod is not
// crash-looping (nil entries, voters without an EtcdMember, are dropped:
// they are not asked anyway). The member itself is kept; it is only asked
// with quorumAsk.self.
func (s *run) steady(ctx context.Context, voters []*v1alpha1.EtcdMember) ([]*v1alpha1.EtcdMember, error) {
	var out []*v1alpha1.EtcdMember
	for _, v := range voters {
		if v == nil {
			continue
		}
		if v.Name != s.m.Name {
			p := &corev1.Pod{}
			err := s.cl.Reader.Get(ctx, types.NamespacedName{Namespace: v.Namespace, Name: v.Name}, p)
			if client.IgnoreNotFound(err) != nil {
				return nil, err
			}
			if err == nil && pod.EtcdContainerCrashing(p, s.r.Options.CrashLoopRestarts, s.now) {
				continue
			}
		}
		out = append(out, v)
	}
	return out, nil
}

// answering asks the voters for their status at once, so that any number
// that do not answer cost one status timeout (3 s), not one each, and
// counts the others that answer. The member itself is asked only with
// askSelf: a caller that knows it cannot serve (its data dir was wiped
// and its guard holds etcd back, or it crash-loops and only holdsWithout
// matters) saves that timeout, which it would otherwise pay on every
// decision, twice per replacement.
func (s *run) answering(ctx context.Context, t etcd.Target, voters []*v1alpha1.EtcdMember, askSelf bool) (others int, self bool) {
	var (
		wg          sync.WaitGroup
		n           atomic.Int32
		selfAnswers atomic.Bool
	)
	for _, v := range voters {
		isSelf := v != nil && v.Name == s.m.Name
		if v == nil || (isSelf && !askSelf) {
			continue
		}
		wg.Go(func() {
			if _, err := s.cl.Etcd.Status(ctx, t, etcd.MemberClientURL(v)); err != nil {
				return
			}
			if isSelf {
				selfAnswers.Store(true)
			} else {
				n.Add(1)
			}
		})
	}
	wg.Wait()
	return int(n.Load()), selfAnswers.Load()
}

func byEtcdMember(members []v1alpha1.EtcdMember, e etcd.Member) *v1alpha1.EtcdMember {
	for i := range members {
		if _, ok := etcd.FindMember([]etcd.Member{e}, members[i].Name, etcd.MemberPeerURL(&members[i])); ok {
			return &members[i]
		}
	}
	return nil
}
