package v1alpha1_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
)

func states(n int) []fleetv1alpha1.EtcdClusterState {
	out := make([]fleetv1alpha1.EtcdClusterState, n)
	for i := range out {
		out[i] = fleetv1alpha1.EtcdClusterState{Namespace: "tenant", Name: fmt.Sprintf("etcd-%d", i),
			Available: true, Quorum: true, ReadyMembers: 3, DesiredMembers: 3, Reason: "QuorumHealthy"}
	}
	return out
}

var _ = Describe("FleetCluster", func() {
	ctx := context.Background()

	create := func(name string) *fleetv1alpha1.FleetCluster {
		GinkgoHelper()
		fc := &fleetv1alpha1.FleetCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		Expect(k8sClient.Create(ctx, fc)).To(Succeed())
		return fc
	}

	It("has an empty spec and prunes unknown spec fields", func() {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "fleet.etcdfleet.io/v1alpha1", "kind": "FleetCluster",
			"metadata": map[string]any{"name": "pruned", "namespace": ns},
			"spec":     map[string]any{"kubeconfig": "nope"},
		}}
		Expect(k8sClient.Create(ctx, u)).To(Succeed())
		Expect(u.Object["spec"]).To(BeEmpty())
	})

	It("caps etcdClusterStates at 50", func() {
		fc := create("cap")
		fc.Status.EtcdClusterStates = states(fleetv1alpha1.MaxEtcdClusterStates + 1)
		expectInvalid(k8sClient.Status().Update(ctx, fc),
			"status.etcdClusterStates: Too many: 51: must have at most 50 items")
		fc.Status.EtcdClusterStates = states(fleetv1alpha1.MaxEtcdClusterStates)
		Expect(k8sClient.Status().Update(ctx, fc)).To(Succeed())
	})

	It("keys etcdClusterStates by namespace and name", func() {
		fc := create("keys")
		s := states(2)
		s[1].Name = s[0].Name
		fc.Status.EtcdClusterStates = s
		expectInvalid(k8sClient.Status().Update(ctx, fc), "status.etcdClusterStates[1]: Duplicate value")
		s[1].Namespace = "other-tenant"
		Expect(k8sClient.Status().Update(ctx, fc)).To(Succeed())
	})

	It("reports health and prints it at a glance", func() {
		fc := create("wc-1")
		now := metav1.Now()
		expires := metav1.NewTime(time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC))
		cond := func(t string, s metav1.ConditionStatus, reason string) metav1.Condition {
			return metav1.Condition{Type: t, Status: s, Reason: reason, LastTransitionTime: now}
		}
		fc.Status = fleetv1alpha1.FleetClusterStatus{
			Conditions: []metav1.Condition{
				cond(fleetv1alpha1.ConditionConnected, metav1.ConditionTrue, fleetv1alpha1.ReasonProbeSucceeded),
				cond(fleetv1alpha1.ConditionReady, metav1.ConditionFalse, fleetv1alpha1.ReasonQuorumLost),
				cond(fleetv1alpha1.ConditionDegraded, metav1.ConditionTrue, fleetv1alpha1.ReasonQuorumLost),
				cond(fleetv1alpha1.ConditionPaused, metav1.ConditionFalse, fleetv1alpha1.ReasonNotPaused),
			},
			ServerVersion: "v1.36.3", LastProbeTime: &now, Message: "tenant/etcd-1 lost quorum", Replica: "manager-1",
			EtcdClusters: 2, QuorateEtcdClusters: 1, MembersReady: 5, MembersDesired: 6, MembersSummary: "5/6",
			ReplacementsTotal: 9, LastReplacementTime: &now, ReplacementsWaiting: 2, ReplacementsThrottled: 7,
			TokenExpiresAt: &expires,
			EtcdClusterStates: []fleetv1alpha1.EtcdClusterState{
				{Namespace: "tenant", Name: "etcd-1", ReadyMembers: 1, DesiredMembers: 3, Reason: "QuorumLost"},
				{Namespace: "tenant", Name: "etcd-0", Available: true, Quorum: true, ReadyMembers: 3, DesiredMembers: 3},
			},
		}
		Expect(k8sClient.Status().Update(ctx, fc)).To(Succeed())
		got := &fleetv1alpha1.FleetCluster{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(fc), got)).To(Succeed())
		Expect(got.Status.EtcdClusterStates).To(Equal(fc.Status.EtcdClusterStates))

		row := tableRow("/apis/fleet.etcdfleet.io/v1alpha1/namespaces/" + ns + "/fleetclusters/wc-1")
		Expect(row).To(HaveKeyWithValue("Connected", "True"))
		Expect(row).To(HaveKeyWithValue("Ready", "False"))
		Expect(row).To(HaveKeyWithValue("Paused", "False"))
		Expect(row).To(HaveKeyWithValue("EtcdClusters", BeNumerically("==", 2)))
		Expect(row).To(HaveKeyWithValue("Quorate", BeNumerically("==", 1)))
		Expect(row).To(HaveKeyWithValue("Members", "5/6"))
		Expect(row).To(HaveKeyWithValue("Replaced", BeNumerically("==", 9)))
		Expect(row).To(HaveKeyWithValue("Throttled", BeNumerically("==", 7)))
		Expect(row).To(HaveKeyWithValue("Replica", "manager-1"))
		Expect(row).To(HaveKey("Age"))
		Expect(row).To(HaveKeyWithValue("TokenExpires", "2027-03-01T12:00:00Z"))
	})
})
