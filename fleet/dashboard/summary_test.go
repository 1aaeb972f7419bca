package dashboard

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

var _ = Describe("StateOf", func() {
	t, f := metav1.ConditionTrue, metav1.ConditionFalse
	DescribeTable("quorum and availability",
		func(c etcdv1.EtcdCluster, quorum, available bool, desired int32, reason string) {
			st := StateOf(&c)
			Expect(st.Quorum).To(Equal(quorum), "quorum")
			Expect(st.Available).To(Equal(available), "available")
			Expect(st.DesiredMembers).To(Equal(desired), "desired")
			Expect(st.Reason).To(Equal(reason), "reason")
			Expect(st.Namespace + "/" + st.Name).To(Equal("ns/a"))
		},
		Entry("Available=True is quorate whatever the members say",
			ec("ns", "a", 3, 0, avail(t, etcdv1.ReasonQuorumHealthy)), true, true, int32(3), etcdv1.ReasonQuorumHealthy),
		Entry("Available=False with a ready majority of voters is quorate (etcd unreachable)",
			ec("ns", "a", 3, 2, avail(f, etcdv1.ReasonClusterUnreachable), voters(true, true, false)), true, false, int32(3), etcdv1.ReasonClusterUnreachable),
		Entry("a ready minority is not",
			ec("ns", "a", 3, 1, avail(f, etcdv1.ReasonQuorumLost), voters(true, false, false)), false, false, int32(3), etcdv1.ReasonQuorumLost),
		Entry("learners do not vote",
			ec("ns", "a", 3, 3, avail(f, etcdv1.ReasonQuorumLost), voters(true, false, false), learners(true, true)), false, false, int32(3), etcdv1.ReasonQuorumLost),
		Entry("members of unknown role count as voters",
			ec("ns", "a", 3, 2, members("", true, true, false)), true, false, int32(3), ""),
		Entry("the majority is of max(replicas, voters): 2 of 5 voters during a scale-down to 3",
			ec("ns", "a", 3, 2, avail(f, etcdv1.ReasonQuorumLost), voters(true, true, false, false, false)), false, false, int32(3), etcdv1.ReasonQuorumLost),
		Entry("a growing cluster needs a majority of the desired replicas",
			ec("ns", "a", 5, 1, voters(true)), false, false, int32(5), ""),
		Entry("unset replicas default to 3",
			ec("ns", "a", 0, 0, defaultReplicas(), voters(true, true)), true, false, int32(3), ""),
		Entry("no status at all: not quorate",
			ec("ns", "a", 3, 0), false, false, int32(3), ""),
		Entry("replicas 0 (paused) has nothing to lose",
			ec("ns", "a", 0, 0, avail(f, etcdv1.ReasonPaused)), true, false, int32(0), etcdv1.ReasonPaused),
	)
})

var _ = Describe("SummarizeEtcd", func() {
	It("is empty for a cluster without etcd", func() {
		Expect(SummarizeEtcd(nil, nil)).To(Equal(EtcdSummary{}))
	})

	It("counts clusters, quorate clusters, members and replacements", func() {
		t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		s := SummarizeEtcd(
			[]etcdv1.EtcdCluster{healthy("a", "one", 3), degraded("a", "two", 3, 2), lost("b", "three", 5, 1)},
			[]etcdv1.EtcdMember{
				member("a", "one-0", 2, t0.Add(time.Minute)),
				member("a", "two-0", 0, time.Time{}),
				member("b", "three-0", 3, t0.Add(3*time.Minute)),
				member("b", "three-1", 1, t0),
			})
		Expect(s.EtcdClusters).To(Equal(int32(3)))
		Expect(s.QuorateEtcdClusters).To(Equal(int32(2)))
		Expect(s.MembersReady).To(Equal(int32(3 + 2 + 1)))
		Expect(s.MembersDesired).To(Equal(int32(3 + 3 + 5)))
		Expect(s.ReplacementsTotal).To(Equal(int64(6)))
		Expect(s.LastReplacementTime.Time).To(BeTemporally("==", t0.Add(3*time.Minute)))
		Expect(s.Healthy()).To(BeFalse())
	})

	It("counts a cluster whose majority is lost for good as quorum lost, whatever its members' lagging Ready says", func() {
		c := ec("a", "one", 3, 3, avail(metav1.ConditionFalse, etcdv1.ReasonMajorityLost), voters(true, true, true))
		s := SummarizeEtcd([]etcdv1.EtcdCluster{c}, nil)
		Expect(s.QuorateEtcdClusters).To(BeZero())
		Expect(s.States[0].Reason).To(Equal(etcdv1.ReasonMajorityLost))
		Expect(SeverityOf(s.States[0])).To(Equal(SeverityQuorumLost))
	})

	It("is healthy when every cluster is quorate and every member ready", func() {
		s := SummarizeEtcd([]etcdv1.EtcdCluster{healthy("a", "one", 3), healthy("a", "two", 1)}, nil)
		Expect(s.Healthy()).To(BeTrue())
		Expect(s.LastReplacementTime).To(BeNil())
	})

	It("orders quorum lost, then unavailable, then degraded, then healthy, then by namespace and name", func() {
		s := SummarizeEtcd([]etcdv1.EtcdCluster{
			healthy("a", "h1", 3),
			degraded("b", "d2", 3, 2),
			ec("a", "paused", 0, 0, avail(metav1.ConditionFalse, etcdv1.ReasonPaused)),
			lost("b", "l1", 3, 1),
			ec("a", "unreachable", 3, 3, avail(metav1.ConditionFalse, etcdv1.ReasonClusterUnreachable), voters(true, true, true)),
			degraded("a", "d1", 3, 2),
			lost("a", "l2", 3, 0),
			healthy("a", "h0", 3),
		}, nil)
		var names []string
		for _, st := range s.States {
			names = append(names, st.Namespace+"/"+st.Name)
		}
		Expect(names).To(Equal([]string{
			"a/l2", "b/l1", // quorum lost
			"a/unreachable", // quorate but unavailable
			"a/d1", "b/d2",  // degraded
			"a/h0", "a/h1", "a/paused", // healthy (a paused cluster is healthy)
		}))
		Expect(s.States[0]).To(Equal(fleetv1.EtcdClusterState{
			Namespace: "a", Name: "l2", Quorum: false, Available: false,
			ReadyMembers: 0, DesiredMembers: 3, Reason: etcdv1.ReasonQuorumLost,
		}))
	})

	It("keeps the worst MaxEtcdClusterStates states but counts every cluster", func() {
		var cs []etcdv1.EtcdCluster
		for i := range 60 {
			cs = append(cs, healthy("ns", fmt.Sprintf("h%02d", i), 1))
		}
		cs = append(cs, lost("zz", "last-by-name", 3, 0))
		s := SummarizeEtcd(cs, nil)
		Expect(s.States).To(HaveLen(fleetv1.MaxEtcdClusterStates))
		Expect(s.States[0].Name).To(Equal("last-by-name"))
		Expect(s.EtcdClusters).To(Equal(int32(61)))
		Expect(s.MembersDesired).To(Equal(int32(63)))
	})

	It("does not reorder its arguments", func() {
		cs := []etcdv1.EtcdCluster{healthy("a", "x", 3), lost("a", "y", 3, 0)}
		SummarizeEtcd(cs, nil)
		Expect(cs[0].Name).To(Equal("x"))
	})
})
