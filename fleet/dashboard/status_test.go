package dashboard

import (
	"errors"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/limiter"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// cond returns a condition's "Status/Reason", or "" when it is missing.
func cond(conds []metav1.Condition, typ string) string {
	c := apimeta.FindStatusCondition(conds, typ)
	if c == nil {
		return ""
	}
	return string(c.Status) + "/" + c.Reason
}

var _ = Describe("buildClusterStatus", func() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 500, time.UTC)
	info := ClusterInfo{Name: "c", Namespace: "ns", Connected: true, ServerVersion: "v1.36.3", LastProbeTime: now}
	sum := SummarizeEtcd([]etcdv1.EtcdCluster{healthy("a", "one", 3), degraded("a", "two", 3, 2)},
		[]etcdv1.EtcdMember{member("a", "m", 4, now)})

	It("reports a healthy cluster", func() {
		s := SummarizeEtcd([]etcdv1.EtcdCluster{healthy("a", "one", 3)}, nil)
		st := buildClusterStatus(nil, clusterInput{info: info, etcd: &s}, 1, now)
		Expect(cond(st.Conditions, fleetv1.ConditionConnected)).To(Equal("True/ProbeSucceeded"))
		Expect(cond(st.Conditions, fleetv1.ConditionReady)).To(Equal("True/Healthy"))
		Expect(cond(st.Conditions, fleetv1.ConditionDegraded)).To(Equal("False/Healthy"))
		Expect(cond(st.Conditions, fleetv1.ConditionPaused)).To(Equal("False/NotPaused"))
		Expect(st.Message).To(BeEmpty())
		Expect(st.MembersSummary).To(Equal("3/3"))
		Expect(st.LastProbeTime.Time).To(Equal(now.Truncate(time.Second)), "times are stored to the second")
		Expect(st.Conditions[0].ObservedGeneration).To(Equal(int64(1)))
	})

	It("reports unready members as Degraded with counts, limiter numbers and the worst state", func() {
		st := buildClusterStatus(nil, clusterInput{info: info, etcd: &sum, waiting: 2, throttled: 7, throttledKnown: true}, 1, now)
		Expect(cond(st.Conditions, fleetv1.ConditionReady)).To(Equal("False/MembersUnhealthy"))
		Expect(cond(st.Conditions, fleetv1.ConditionDegraded)).To(Equal("True/MembersUnhealthy"))
		Expect(st.Message).To(ContainSubstring("1 etcd member(s) not ready (worst: a/two, QuorumAvailable)"))
		Expect([]any{st.EtcdClusters, st.QuorateEtcdClusters, st.MembersReady, st.MembersDesired, st.MembersSummary}).
			To(Equal([]any{int32(2), int32(2), int32(5), int32(6), "5/6"}))
		Expect([]any{st.ReplacementsTotal, st.ReplacementsWaiting, st.ReplacementsThrottled}).
			To(Equal([]any{int64(4), int32(2), int64(7)}))
		Expect(st.EtcdClusterStates).To(HaveLen(2))
		Expect(st.EtcdClusterStates[0].Name).To(Equal("two"))
	})

	It("reports lost quorum before unready members", func() {
		s := SummarizeEtcd([]etcdv1.EtcdCluster{degraded("a", "one", 3, 2), lost("b", "two", 3, 1)}, nil)
		st := buildClusterStatus(nil, clusterInput{info: info, etcd: &s}, 1, now)
		Expect(cond(st.Conditions, fleetv1.ConditionReady)).To(Equal("False/QuorumLost"))
		Expect(cond(st.Conditions, fleetv1.ConditionDegraded)).To(Equal("True/QuorumLost"))
		Expect(st.Message).To(HavePrefix("1 etcd cluster(s) lost quorum (worst: b/two, QuorumLost)"))
	})

	It("keeps the last known counts of a disconnected cluster, and says why it is not Ready", func() {
		prev := buildClusterStatus(nil, clusterInput{info: info, etcd: &sum, throttled: 7, throttledKnown: true}, 1, now)
		off := info
		off.Connected, off.Reason, off.Message, off.ServerVersion = false, "ProbeFailed", "dial tcp: i/o timeout", ""
		off.LastProbeTime = time.Time{}
		st := buildClusterStatus(&prev, clusterInput{info: off}, 1, now.Add(time.Minute))
		Expect(cond(st.Conditions, fleetv1.ConditionConnected)).To(Equal("False/ProbeFailed"))
		Expect(cond(st.Conditions, fleetv1.ConditionReady)).To(Equal("False/NotConnected"))
		Expect(st.Message).To(ContainSubstring("dial tcp: i/o timeout"))
		Expect(st.MembersSummary).To(Equal("5/6"))
		Expect(st.EtcdClusterStates).To(Equal(prev.EtcdClusterStates))
		Expect(st.ReplacementsThrottled).To(Equal(int64(7)), "the limiter forgot the cluster, the status does not")
		Expect(st.ServerVersion).To(Equal("v1.36.3"))
		Expect(st.LastProbeTime).To(Equal(prev.LastProbeTime))
		c := apimeta.FindStatusCondition(st.Conditions, fleetv1.ConditionConnected)
		Expect(c.LastTransitionTime.Time).To(Equal(now.Add(time.Minute).Truncate(time.Second)))
		c = apimeta.FindStatusCondition(st.Conditions, fleetv1.ConditionDegraded)
		Expect(c.LastTransitionTime.Time).To(Equal(now.Truncate(time.Second)), "an unchanged condition keeps its transition time")
	})

	It("says when the etcd objects cannot be read", func() {
		st := buildClusterStatus(nil, clusterInput{info: info, etcdErr: errors.New("cluster ns/c is not engaged")}, 1, now)
		Expect(cond(st.Conditions, fleetv1.ConditionReady)).To(Equal("False/" + ReasonEtcdUnknown))
		Expect(st.Message).To(ContainSubstring("not engaged"))
	})

	DescribeTable("Paused",
		func(fleetPaused, secretPaused bool, want string) {
			i := info
			i.Paused = secretPaused
			st := buildClusterStatus(nil, clusterInput{info: i, fleetPaused: fleetPaused}, 1, now)
			Expect(cond(st.Conditions, fleetv1.ConditionPaused)).To(Equal(want))
		},
		Entry("neither", false, false, "False/NotPaused"),
		Entry("the Secret", false, true, "True/"+ReasonClusterPaused),
		Entry("the Fleet", true, false, "True/FleetPaused"),
		Entry("both: the Fleet wins", true, true, "True/FleetPaused"),
	)

	It("replaces a reason the apiserver would reject and clips long messages", func() {
		i := info
		i.Connected, i.Reason, i.Message = false, "not a reason!", strings.Repeat("é", 2000)
		st := buildClusterStatus(nil, clusterInput{info: i}, 1, now)
		c := apimeta.FindStatusCondition(st.Conditions, fleetv1.ConditionConnected)
		Expect(c.Reason).To(Equal(fleetv1.ReasonProbeFailed))
		Expect(len(c.Message)).To(BeNumerically("<=", maxMessage))
		Expect(c.Message).To(HaveSuffix("é..."))
	})
})

var _ = Describe("clusterStatusChanged", func() {
	t0 := metav1.NewTime(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	base := fleetv1.FleetClusterStatus{LastProbeTime: &t0, MembersSummary: "3/3"}
	DescribeTable("a lastProbeTime-only change waits until the stored one is ProbeRefresh old",
		func(after time.Duration, summary string, want bool) {
			w := base.DeepCopy()
			w.LastProbeTime = ptr.To(metav1.NewTime(t0.Add(after)))
			w.MembersSummary = summary
			Expect(clusterStatusChanged(&base, w, time.Minute)).To(Equal(want))
		},
		Entry("same", time.Duration(0), "3/3", false),
		Entry("10s newer", 10*time.Second, "3/3", false),
		Entry("59s newer", 59*time.Second, "3/3", false),
		Entry("a minute newer", time.Minute, "3/3", true),
		Entry("10s newer with another change", 10*time.Second, "2/3", true),
	)
	It("compares times as the apiserver returns them", func() {
		local := base.DeepCopy()
		local.LastProbeTime = ptr.To(metav1.NewTime(t0.Local()))
		Expect(clusterStatusChanged(&base, local, time.Minute)).To(BeFalse())
	})
})

// row builds a FleetCluster row in a given state.
func row(name string, connected bool, s EtcdSummary, err error) clusterRow {
	info := ClusterInfo{Name: name, Namespace: "ns", Connected: connected}
	in := clusterInput{info: info, etcdErr: err}
	if err == nil {
		in.etcd = &s
	}
	st := buildClusterStatus(nil, in, 1, time.Now())
	return clusterRow{Namespace: "ns", Name: name, Status: &st}
}

var _ = Describe("buildFleetStatus", func() {
	ok := SummarizeEtcd([]etcdv1.EtcdCluster{healthy("a", "x", 3)}, []etcdv1.EtcdMember{member("a", "m", 2, time.Now())})
	lostN := func(n int) EtcdSummary {
		var cs []etcdv1.EtcdCluster
		for i := range n {
			cs = append(cs, lost("a", fmt.Sprint(i), 3, 1))
		}
		return SummarizeEtcd(cs, nil)
	}
	unready := func(missing int32) EtcdSummary {
		return SummarizeEtcd([]etcdv1.EtcdCluster{degraded("a", "x", 5, 5-missing)}, nil)
	}

	It("ranks quorum lost, not connected, etcd unknown, then unready members, and keeps the worst 10", func() {
		rows := []clusterRow{
			row("healthy-1", true, ok, nil),
			row("unready-1", true, unready(1), nil),
			row("lost-1", true, lostN(1), nil),
			row("off-b", false, EtcdSummary{}, nil),
			row("unready-2", true, unready(2), nil),
			row("lost-3", true, lostN(3), nil),
			row("unknown", true, EtcdSummary{}, errors.New("not engaged")),
			row("off-a", false, EtcdSummary{}, nil),
			row("lost-2", true, lostN(2), nil),
			row("unready-1b", true, unready(1), nil),
			row("unready-2b", true, unready(2), nil),
			row("healthy-2", true, ok, nil),
			row("unready-1c", true, unready(1), nil),
		}
		st := buildFleetStatus(nil, rows, nil, false, 3, time.Now())
		var got []string
		for _, w := range st.WorstClusters {
			Expect(w.Namespace).To(Equal("ns"))
			got = append(got, w.Name+":"+w.Reason)
		}
		Expect(got).To(Equal([]string{
			"lost-3:QuorumLost", "lost-2:QuorumLost", "lost-1:QuorumLost",
			"off-a:ProbeFailed", "off-b:ProbeFailed",
			"unknown:" + ReasonEtcdUnknown,
			"unready-2:MembersUnhealthy", "unready-2b:MembersUnhealthy",
			"unready-1:MembersUnhealthy", "unready-1b:MembersUnhealthy",
		}))
		Expect([]int32{st.ClustersTotal, st.ClustersConnected, st.ClustersQuorate, st.ClustersDegraded}).
			To(Equal([]int32{13, 11, 8, 8}))
		Expect(st.ReplacementsTotal).To(Equal(int64(4)))
		Expect(st.ObservedGeneration).To(Equal(int64(3)))
		Expect(st.Limiter).To(BeNil())
		Expect(cond(st.Conditions, fleetv1.ConditionReady)).To(Equal("False/QuorumLost"))
		Expect(cond(st.Conditions, fleetv1.ConditionDegraded)).To(Equal("True/QuorumLost"))
		Expect(cond(st.Conditions, fleetv1.ConditionPaused)).To(Equal("False/NotPaused"))
	})

	It("is Ready with no worst clusters when every cluster is, and reports the limiter and pause", func() {
		stats := limiter.Stats{Rate: 2, Burst: 10, TokensAvailable: 3.99, Waiting: 4}
		st := buildFleetStatus(nil, []clusterRow{row("a", true, ok, nil)}, &stats, true, 1, time.Now())
		Expect(st.WorstClusters).To(BeEmpty())
		Expect(cond(st.Conditions, fleetv1.ConditionReady)).To(Equal("True/Healthy"))
		Expect(cond(st.Conditions, fleetv1.ConditionDegraded)).To(Equal("False/Healthy"))
		Expect(cond(st.Conditions, fleetv1.ConditionPaused)).To(Equal("True/FleetPaused"))
		Expect(*st.Limiter).To(Equal(fleetv1.LimiterStatus{Rate: "2/s", Burst: 10, TokensAvailable: 3, Waiting: 4}))
	})

	It("reports a fleet whose worst cluster is disconnected as NotConnected", func() {
		st := buildFleetStatus(nil, []clusterRow{row("a", true, ok, nil), row("b", false, ok, nil)}, nil, false, 1, time.Now())
		Expect(cond(st.Conditions, fleetv1.ConditionReady)).To(Equal("False/NotConnected"))
		Expect(cond(st.Conditions, fleetv1.ConditionDegraded)).To(Equal("False/Healthy"))
	})
})

var _ = DescribeTable("FormatRate",
	func(r float64, want string) { Expect(FormatRate(r)).To(Equal(want)) },
	Entry(nil, 2.0, "2/s"),
	Entry(nil, 2.5, "2.5/s"),
	Entry(nil, 100.0, "100/s"),
	Entry(nil, 1.0, "1/s"),
	Entry(nil, 0.5, "1/2s"),
	Entry(nil, 1.0/30, "1/30s"),
	Entry(nil, 0.3, "1/3.33s"),
	Entry(nil, 0.0, "0/s"),
	Entry(nil, -1.0, "0/s"),
)

var _ = Describe("withSecretOwner", func() {
	info := ClusterInfo{Name: "c", Namespace: "ns", SecretUID: "uid-2"}
	want := metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: "c", UID: "uid-2"}
	other := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Thing", Name: "t", UID: "t"}

	It("adds the Secret reference, keeping others", func() {
		refs, ok := withSecretOwner([]metav1.OwnerReference{other}, info)
		Expect(ok).To(BeFalse())
		Expect(refs).To(Equal([]metav1.OwnerReference{other, want}))
	})
	It("replaces a reference to an older Secret of the same name", func() {
		old := want
		old.UID = "uid-1"
		refs, ok := withSecretOwner([]metav1.OwnerReference{old}, info)
		Expect(ok).To(BeFalse())
		Expect(refs).To(Equal([]metav1.OwnerReference{want}))
	})
	It("makes the reference neither controller nor blocking", func() {
		blocking := want
		blocking.BlockOwnerDeletion = ptr.To(true)
		refs, ok := withSecretOwner([]metav1.OwnerReference{blocking}, info)
		Expect(ok).To(BeFalse())
		Expect(refs).To(Equal([]metav1.OwnerReference{want}))
	})
	It("leaves correct references alone", func() {
		_, ok := withSecretOwner([]metav1.OwnerReference{other, want}, info)
		Expect(ok).To(BeTrue())
	})
})
