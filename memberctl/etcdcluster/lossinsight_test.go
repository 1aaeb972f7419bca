package etcdcluster

import (
	"context"
	"errors"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// liveReads counts the reads that reach the apiserver through the Reader
// a reconcile is given for live reads, by kind.
type liveReads struct {
	client.Reader
	claims, memberLists atomic.Int32
}

func (r *liveReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.PersistentVolumeClaim); ok {
		r.claims.Add(1)
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

func (r *liveReads) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*v1alpha1.EtcdMemberList); ok {
		r.memberLists.Add(1)
	}
	return r.Reader.List(ctx, list, opts...)
}

// claimsCache is a cache that still shows every claim, Bound, however
// the apiserver has them: a cache that lags the deletes.
type claimsCache struct{ client.Client }

func (c claimsCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if pvc, ok := obj.(*corev1.PersistentVolumeClaim); ok {
		*pvc = corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// A quorum loss after a power cycle, members restarting with their data
// in place, is the common one: the live reads that prove a loss (the
// members, then each claim, one after another) cost seconds per reconcile
// at a fleet heal's load, so they are made only when the cache shows a
// sign of loss, or one is being counted.
var _ = Describe("a quorum loss with every member's data in place", func() {
	ctx := context.Background()

	It("reads no claim live; a cache that lags a loss delays it one pass, and one being counted is read live", func() {
		h := newHarness()
		live := &liveReads{Reader: k8sClient}
		cl := &workload.Cluster{Client: k8sClient, Reader: live, Recorder: h.events, Etcd: h.etcd}
		h.r.Clusters = workload.Static{C: cl}
		ec := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "ec", Namespace: h.ns},
			Spec: v1alpha1.EtcdClusterSpec{Version: "3.6.16", Storage: v1alpha1.StorageSpec{Size: resource.MustParse("1Gi")}}}
		Expect(k8sClient.Create(ctx, ec)).To(Succeed())
		h.converge(ec, 3)
		var claims []*corev1.PersistentVolumeClaim
		for _, m := range h.members() {
			c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: etcd.PVCName(m.Name)},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
			Expect(k8sClient.Create(ctx, c)).To(Succeed())
			claims = append(claims, c)
		}
		h.etcd.SetFail(errors.New("context deadline exceeded"))

		By("every claim in place: not one read live")
		live.claims.Store(0)
		h.reconcile(ec)
		Expect(live.claims.Load()).To(BeZero())
		Expect(conditionReason(h.get(ec), v1alpha1.ConditionAvailable)).To(Equal(v1alpha1.ReasonClusterUnreachable))

		By("every claim deleted, a cache still showing them: no loss yet")
		for _, c := range claims {
			Expect(k8sClient.Delete(ctx, c)).To(Succeed())
		}
		cl.Client = claimsCache{k8sClient}
		h.reconcile(ec)
		Expect(conditionStatus(h.get(ec), v1alpha1.ConditionTotalLoss)).To(BeEmpty())

		By("the cache caught up: the loss is proven live and counted")
		cl.Client = k8sClient
		h.reconcile(ec)
		Expect(conditionStatus(h.get(ec), v1alpha1.ConditionTotalLoss)).To(Equal(metav1.ConditionTrue))

		By("counted, it is read live even where the cache lags")
		cl.Client = claimsCache{k8sClient}
		live.claims.Store(0)
		h.reconcile(ec)
		Expect(live.claims.Load()).To(BeNumerically(">", 0))
		Expect(conditionStatus(h.get(ec), v1alpha1.ConditionTotalLoss)).To(Equal(metav1.ConditionTrue))
	})
})
