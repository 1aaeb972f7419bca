package dashboard

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// Builders of the workload objects the specs summarise.

type ecOpt func(*etcdv1.EtcdCluster)

// ec builds an EtcdCluster with spec.replicas and status.readyMembers.
func ec(ns, name string, replicas, ready int32, opts ...ecOpt) etcdv1.EtcdCluster {
	c := etcdv1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       etcdv1.EtcdClusterSpec{Replicas: ptr.To(replicas), Version: "3.6.0"},
		Status:     etcdv1.EtcdClusterStatus{ReadyMembers: ready},
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// avail sets the Available condition.
func avail(status metav1.ConditionStatus, reason string) ecOpt {
	return func(c *etcdv1.EtcdCluster) {
		c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{
			Type: etcdv1.ConditionAvailable, Status: status, Reason: reason,
			LastTransitionTime: metav1.Now(),
		})
	}
}

// members adds status.members of role with the given readiness.
func members(role etcdv1.MemberRole, ready ...bool) ecOpt {
	return func(c *etcdv1.EtcdCluster) {
		for _, r := range ready {
			c.Status.Members = append(c.Status.Members, etcdv1.EtcdClusterMemberStatus{
				Name: fmt.Sprintf("%s-%d", c.Name, len(c.Status.Members)), Role: role, Ready: r,
			})
		}
	}
}

func voters(ready ...bool) ecOpt   { return members(etcdv1.MemberRoleVoter, ready...) }
func learners(ready ...bool) ecOpt { return members(etcdv1.MemberRoleLearner, ready...) }

// defaultReplicas leaves spec.replicas unset.
func defaultReplicas() ecOpt { return func(c *etcdv1.EtcdCluster) { c.Spec.Replicas = nil } }

// readyVoters returns n readiness flags, the first ready of them true.
func readyVoters(n, ready int) []bool {
	out := make([]bool, n)
	for i := range ready {
		out[i] = true
	}
	return out
}

// healthy is an EtcdCluster with every one of its n members ready.
func healthy(ns, name string, n int32) etcdv1.EtcdCluster {
	return ec(ns, name, n, n, avail(metav1.ConditionTrue, etcdv1.ReasonQuorumHealthy), voters(readyVoters(int(n), int(n))...))
}

// degraded has quorum but only ready of its n members ready.
func degraded(ns, name string, n, ready int32) etcdv1.EtcdCluster {
	return ec(ns, name, n, ready, avail(metav1.ConditionTrue, etcdv1.ReasonQuorumAvailable), voters(readyVoters(int(n), int(ready))...))
}

// lost has lost quorum: ready of n voters ready.
func lost(ns, name string, n, ready int32) etcdv1.EtcdCluster {
	return ec(ns, name, n, ready, avail(metav1.ConditionFalse, etcdv1.ReasonQuorumLost), voters(readyVoters(int(n), int(ready))...))
}

// member is an EtcdMember with a replacement record (total 0: none).
func member(ns, name string, total int32, last time.Time) etcdv1.EtcdMember {
	m := etcdv1.EtcdMember{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if total > 0 {
		t := metav1.NewTime(last)
		m.Status.Replacement = &etcdv1.ReplacementStatus{Total: total, LastTime: &t}
	}
	return m
}
