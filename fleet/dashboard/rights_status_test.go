package dashboard

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

var _ = Describe("buildClusterStatus, duplicates and rights", func() {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	s := SummarizeEtcd([]etcdv1.EtcdCluster{healthy("a", "one", 3)}, nil)

	It("shows a duplicate registration as Ready=False DuplicateCluster naming the other Secret, with the cluster's identity", func() {
		info := ClusterInfo{Name: "again", Namespace: "ns", Reason: "DuplicateCluster", Duplicate: true, ClusterID: "uid-1",
			Message: "the workload cluster (identity uid-1) is already registered by Secret ns/first"}
		st := buildClusterStatus(nil, clusterInput{info: info}, 1, now)
		Expect(cond(st.Conditions, fleetv1.ConditionReady)).To(Equal("False/DuplicateCluster"))
		Expect(cond(st.Conditions, fleetv1.ConditionConnected)).To(Equal("False/DuplicateCluster"))
		Expect(st.Message).To(ContainSubstring("ns/first"))
		Expect(st.ClusterID).To(Equal("uid-1"))
	})

	It("shows missing rights of a connected cluster as Authorized=False and Ready=False, and their return", func() {
		info := ClusterInfo{Name: "c", Namespace: "ns", Connected: true, MissingRights: "create,delete pods"}
		st := buildClusterStatus(nil, clusterInput{info: info, etcd: &s}, 1, now)
		Expect(cond(st.Conditions, fleetv1.ConditionConnected)).To(Equal("True/ProbeSucceeded"))
		Expect(cond(st.Conditions, fleetv1.ConditionAuthorized)).To(Equal("False/MissingRights"))
		Expect(cond(st.Conditions, fleetv1.ConditionReady)).To(Equal("False/MissingRights"))
		Expect(st.Message).To(ContainSubstring("create,delete pods"))

		info.MissingRights = ""
		st = buildClusterStatus(&st, clusterInput{info: info, etcd: &s}, 1, now)
		Expect(cond(st.Conditions, fleetv1.ConditionAuthorized)).To(Equal("True/RightsGranted"))
		Expect(cond(st.Conditions, fleetv1.ConditionReady)).To(Equal("True/Healthy"))
	})

	It("keeps the last known Authorized while disconnected for other reasons", func() {
		info := ClusterInfo{Name: "c", Namespace: "ns", Connected: true}
		st := buildClusterStatus(nil, clusterInput{info: info, etcd: &s}, 1, now)
		info = ClusterInfo{Name: "c", Namespace: "ns", Reason: "Unreachable"}
		st = buildClusterStatus(&st, clusterInput{info: info}, 1, now)
		Expect(cond(st.Conditions, fleetv1.ConditionAuthorized)).To(Equal("True/RightsGranted"))
		Expect(cond(st.Conditions, fleetv1.ConditionReady)).To(Equal("False/NotConnected"))
	})

	It("gives the Fleet its worst cluster's own Ready reason when that cluster lacks rights", func() {
		info := ClusterInfo{Name: "c", Namespace: "ns", Connected: true, MissingRights: "create pods"}
		st := buildClusterStatus(nil, clusterInput{info: info, etcd: &s}, 1, now)
		fleet := buildFleetStatus(nil, []clusterRow{{Name: "c", Namespace: "ns", Status: &st}}, nil, false, 1, now)
		Expect(cond(fleet.Conditions, fleetv1.ConditionReady)).To(Equal("False/MissingRights"))
	})

	It("shows a cluster refused as unconstrained as Constrained=False and Ready=False Unconstrained, and its return", func() {
		info := ClusterInfo{Name: "c", Namespace: "ns", Reason: "Unconstrained", ConstraintKnown: true,
			Unconstrained: "a Pod in namespace default", Message: "pre-flight: the credentials are not constrained by admission: a Pod"}
		st := buildClusterStatus(nil, clusterInput{info: info}, 1, now)
		Expect(cond(st.Conditions, fleetv1.ConditionConstrained)).To(Equal("False/Unconstrained"))
		Expect(cond(st.Conditions, fleetv1.ConditionReady)).To(Equal("False/Unconstrained"))
		Expect(st.Message).To(ContainSubstring("a Pod"))

		info = ClusterInfo{Name: "c", Namespace: "ns", Connected: true, ConstraintKnown: true}
		st = buildClusterStatus(&st, clusterInput{info: info, etcd: &s}, 1, now)
		Expect(cond(st.Conditions, fleetv1.ConditionConstrained)).To(Equal("True/Constrained"))
		Expect(cond(st.Conditions, fleetv1.ConditionReady)).To(Equal("True/Healthy"))
	})

	It("shows rights beyond the expected ones as Constrained=False OverPrivileged, without making the cluster unready", func() {
		info := ClusterInfo{Name: "c", Namespace: "ns", Connected: true, ConstraintKnown: true, OverPrivileged: "* *.*"}
		st := buildClusterStatus(nil, clusterInput{info: info, etcd: &s}, 1, now)
		Expect(cond(st.Conditions, fleetv1.ConditionConstrained)).To(Equal("False/OverPrivileged"))
		Expect(cond(st.Conditions, fleetv1.ConditionReady)).To(Equal("True/Healthy"))
	})

	It("sets no Constrained condition before a check answered", func() {
		st := buildClusterStatus(nil, clusterInput{info: ClusterInfo{Name: "c", Namespace: "ns", Connected: true}, etcd: &s}, 1, now)
		Expect(cond(st.Conditions, fleetv1.ConditionConstrained)).To(BeEmpty())
	})
})
