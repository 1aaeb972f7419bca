package etcddefrag

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// member is one voter as this reconcile saw it.
type member struct {
	m        *v1alpha1.EtcdMember
	endpoint string
	status   etcd.Status
}

// view is a cluster every member of which is a healthy voter, with an
// agreed leader: the only kind of cluster a member may be blocked in.
type view struct {
	target  etcd.Target
	members []member // by name
	leader  uint64
}

// look reads the cluster's members, from the apiserver and from etcd, and
// returns the view, or why no member may be defragmented now (a
// defragmentation blocks its member: with another member down, blocking a
// follower could stop the cluster's writes).
func look(ctx context.Context, cl *workload.Cluster, ec *v1alpha1.EtcdCluster) (*view, string, error) {
	all, err := etcd.Members(ctx, cl.Reader, ec.Namespace, ec.Name)
	if err != nil {
		return nil, "", err
	}
	if why := unready(all, desiredReplicas(ec)); why != "" {
		return nil, why, nil
	}
	t, err := etcd.TargetFor(ctx, cl.Reader, cl.Name, all)
	if err != nil {
		return nil, "", err
	}
	_, list, err := cl.Etcd.MemberList(ctx, t)
	if err != nil {
		return nil, fmt.Sprintf("etcd does not answer: %v", err), nil
	}
	if why := membershipDiffers(all, list); why != "" {
		return nil, why, nil
	}
	v := &view{target: t}
	for i := range all {
		m := member{m: &all[i], endpoint: etcd.MemberClientURL(&all[i])}
		if m.status, err = cl.Etcd.Status(ctx, t, m.endpoint); err != nil {
			return nil, fmt.Sprintf("member %s does not answer: %v", m.m.Name, err), nil
		}
		if errs := blockingErrors(m.status.Errors); len(errs) > 0 {
			return nil, fmt.Sprintf("member %s reports %s", m.m.Name, strings.Join(errs, "; ")), nil
		}
		v.members = append(v.members, m)
	}
	if why := v.agreeOnLeader(); why != "" {
		return nil, why, nil
	}
	if n := len(v.members); n > 1 && !etcd.HasQuorum(n-1, n) {
		return nil, fmt.Sprintf("a %d-member cluster loses quorum while one member is defragmented; scale it to 3", n), nil
	}
	sort.Slice(v.members, func(i, j int) bool { return v.members[i].m.Name < v.members[j].m.Name })
	return v, "", nil
}

func desiredReplicas(ec *v1alpha1.EtcdCluster) int {
	if ec.Spec.Replicas == nil {
		return int(v1alpha1.DefaultReplicas)
	}
	return int(*ec.Spec.Replicas)
}

// unready says why the EtcdMembers are not all running voters, or "".
func unready(all []v1alpha1.EtcdMember, desired int) string {
	if desired == 0 {
		return "the cluster is paused (replicas 0)"
	}
	for i := range all {
		m := &all[i]
		switch {
		case m.DeletionTimestamp != nil:
			return fmt.Sprintf("member %s is being removed", m.Name)
		case m.Status.PodName == "":
			return fmt.Sprintf("member %s has no Pod", m.Name)
		case !m.Status.IsVoter:
			return fmt.Sprintf("member %s is not a voter yet", m.Name)
		}
	}
	if len(all) != desired {
		return fmt.Sprintf("the cluster has %d of its %d members", len(all), desired)
	}
	return ""
}

// membershipDiffers says how etcd's member list differs from the
// EtcdMembers, or "".
func membershipDiffers(all []v1alpha1.EtcdMember, list []etcd.Member) string {
	if len(list) != len(all) {
		return fmt.Sprintf("etcd lists %d members, there are %d EtcdMembers", len(list), len(all))
	}
	for i := range all {
		e, ok := etcd.FindMember(list, all[i].Name, etcd.MemberPeerURL(&all[i]))
		switch {
		case !ok:
			return fmt.Sprintf("member %s is not in etcd's member list", all[i].Name)
		case e.IsLearner:
			return fmt.Sprintf("member %s is a learner", all[i].Name)
		}
	}
	return ""
}

// blockingErrors are the errors of a member's status that make it
// unhealthy. A NOSPACE alarm does not: freeing space is what a
// defragmentation is for.
func blockingErrors(errs []string) []string {
	var out []string
	for _, e := range errs {
		if !isNoSpace(e) {
			out = append(out, e)
		}
	}
	return out
}

// noSpace reports whether a member reports a NOSPACE alarm.
func (v *view) noSpace() bool {
	for _, m := range v.members {
		for _, e := range m.status.Errors {
			if isNoSpace(e) {
				return true
			}
		}
	}
	return false
}

// isNoSpace reports whether e, one of a member's status errors, is a
// NOSPACE alarm (etcd lists each alarm as "memberID:<id> alarm:NOSPACE").
func isNoSpace(e string) bool { return strings.Contains(e, "NOSPACE") }

// agreeOnLeader sets the leader every member names, or says why there is
// none.
func (v *view) agreeOnLeader() string {
	for _, m := range v.members {
		if m.status.Leader == 0 {
			return fmt.Sprintf("member %s knows no leader", m.m.Name)
		}
		if v.leader != 0 && m.status.Leader != v.leader {
			return "the members do not agree on a leader (an election is in progress)"
		}
		v.leader = m.status.Leader
	}
	for _, m := range v.members {
		if m.status.MemberID == v.leader {
			return ""
		}
	}
	return fmt.Sprintf("the leader %016x is none of the members", v.leader)
}

// next is the member to do now, of those without a result: a follower
// while one is left, then the leader, so the leader is always last even if
// leadership moved during the run. Nil when every member is done.
func (v *view) next(done func(name string) bool) (*member, v1alpha1.DefragRole) {
	var leader *member
	for i := range v.members {
		m := &v.members[i]
		switch {
		case done(m.m.Name):
		case m.status.MemberID == v.leader:
			leader = m
		default:
			return m, v1alpha1.DefragRoleFollower
		}
	}
	if leader != nil {
		return leader, v1alpha1.DefragRoleLeader
	}
	return nil, ""
}
