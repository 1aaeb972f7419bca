package v1alpha1_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
)

const msgFleetName = "the Fleet is a singleton and must be named 'fleet'"

// The Fleet specs share the one allowed object, so they run in order.
var _ = Describe("Fleet", Ordered, func() {
	ctx := context.Background()
	fleet := &fleetv1alpha1.Fleet{}

	It("rejects any name but fleet", func() {
		for _, name := range []string{"other", "fleet-2", "fleets"} {
			expectInvalid(k8sClient.Create(ctx, &fleetv1alpha1.Fleet{ObjectMeta: metav1.ObjectMeta{Name: name}}),
				msgFleetName)
		}
	})

	It("rejects a generated name that is not fleet", func() {
		expectInvalid(k8sClient.Create(ctx, &fleetv1alpha1.Fleet{ObjectMeta: metav1.ObjectMeta{GenerateName: "fleet"}}),
			msgFleetName)
	})

	It("accepts the singleton, cluster-scoped", func() {
		fleet.Name = fleetv1alpha1.FleetName
		fleet.Spec.Paused = true
		Expect(k8sClient.Create(ctx, fleet)).To(Succeed())
		Expect(fleet.Namespace).To(BeEmpty())
		got := &fleetv1alpha1.Fleet{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Name: "fleet"}, got)).To(Succeed())
		Expect(got.Spec.Paused).To(BeTrue())
	})

	It("caps worstClusters at 10", func() {
		worst := func(n int) []fleetv1alpha1.FleetClusterRef {
			out := make([]fleetv1alpha1.FleetClusterRef, n)
			for i := range out {
				out[i] = fleetv1alpha1.FleetClusterRef{Name: fmt.Sprintf("wc-%d", i), Namespace: "clusters", Reason: "QuorumLost"}
			}
			return out
		}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(fleet), fleet)).To(Succeed())
		fleet.Status.WorstClusters = worst(fleetv1alpha1.MaxWorstClusters + 1)
		expectInvalid(k8sClient.Status().Update(ctx, fleet), "status.worstClusters: Too many: 11: must have at most 10 items")
		fleet.Status.WorstClusters = worst(fleetv1alpha1.MaxWorstClusters)
		Expect(k8sClient.Status().Update(ctx, fleet)).To(Succeed())
	})

	It("reports its status and prints it", func() {
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(fleet), fleet)).To(Succeed())
		fleet.Status.ClustersTotal = 4
		fleet.Status.ClustersConnected = 3
		fleet.Status.ClustersQuorate = 2
		fleet.Status.ClustersDegraded = 1
		fleet.Status.ReplacementsTotal = 17
		fleet.Status.Limiter = &fleetv1alpha1.LimiterStatus{Rate: "2/s", Burst: 5, TokensAvailable: 1, Waiting: 6}
		fleet.Status.Conditions = []metav1.Condition{{Type: fleetv1alpha1.ConditionPaused, Status: metav1.ConditionTrue,
			Reason: fleetv1alpha1.ReasonFleetPaused, LastTransitionTime: metav1.Now()}}
		Expect(k8sClient.Status().Update(ctx, fleet)).To(Succeed())

		got := &fleetv1alpha1.Fleet{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(fleet), got)).To(Succeed())
		Expect(got.Status.Limiter).To(Equal(fleet.Status.Limiter))

		row := tableRow("/apis/fleet.etcdfleet.io/v1alpha1/fleets/fleet")
		Expect(row).To(HaveKeyWithValue("Name", "fleet"))
		Expect(row).To(HaveKeyWithValue("Paused", true))
		Expect(row).To(HaveKeyWithValue("Clusters", BeNumerically("==", 4)))
		Expect(row).To(HaveKeyWithValue("Connected", BeNumerically("==", 3)))
		Expect(row).To(HaveKeyWithValue("Quorate", BeNumerically("==", 2)))
		Expect(row).To(HaveKeyWithValue("Degraded", BeNumerically("==", 1)))
		Expect(row).To(HaveKeyWithValue("Waiting", BeNumerically("==", 6)))
		Expect(row).To(HaveKeyWithValue("Replaced", BeNumerically("==", 17)))
		Expect(row).To(HaveKey("Age"))
	})

	It("keeps the name rule on update", func() {
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(fleet), fleet)).To(Succeed())
		fleet.Spec.Paused = false
		Expect(k8sClient.Update(ctx, fleet)).To(Succeed())
	})
})

var _ = Describe("fleet scheme", func() {
	It("registers both kinds and their lists", func() {
		s := runtime.NewScheme()
		Expect(fleetv1alpha1.AddToScheme(s)).To(Succeed())
		for _, kind := range []string{"FleetCluster", "FleetClusterList", "Fleet", "FleetList"} {
			Expect(s.Recognizes(schema.GroupVersionKind{Group: "fleet.etcdfleet.io", Version: "v1alpha1", Kind: kind})).
				To(BeTrue(), kind)
		}
	})
})
