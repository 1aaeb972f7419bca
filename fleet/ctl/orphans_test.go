package ctl_test

import (
	"bytes"
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/fleet/ctl"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// What a stolen token may have created outside etcdfleet's owners goes
// with the token on unregister; what etcdfleet still manages, the user's
// own objects and (unless asked) claims stay.
var _ = Describe("unregister removes orphans", Ordered, func() {
	managed := map[string]string{etcdv1.LabelManagedBy: etcdv1.ManagedByValue}
	meta := func(name string, labels map[string]string, owner *metav1.OwnerReference) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels}
		if owner != nil {
			m.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		return m
	}
	pod := func(m metav1.ObjectMeta) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: m, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	}
	svc := func(m metav1.ObjectMeta) *corev1.Service {
		return &corev1.Service{ObjectMeta: m, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: meta("data-thief", managed, nil), Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	exists := func(ctx context.Context, c client.Client, obj client.Object) bool {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return false
		}
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		return obj.GetDeletionTimestamp() == nil
	}

	It("deletes them, printing each, after revoking the token", func(ctx SpecContext) {
		w1 := fleet.Cluster("w1")
		_, err := register(ctx, "orphans", w1.Config)
		Expect(err).NotTo(HaveOccurred())
		c, err := client.New(w1.Config, client.Options{})
		Expect(err).NotTo(HaveOccurred())
		Expect(etcdv1.AddToScheme(c.Scheme())).To(Succeed())
		ec := &etcdv1.EtcdCluster{ObjectMeta: meta("kept", nil, nil), Spec: etcdv1.EtcdClusterSpec{Replicas: ptr.To[int32](1), Version: "3.7.3",
			Storage: etcdv1.StorageSpec{Size: resource.MustParse("1Gi")}}}
		Expect(c.Create(ctx, ec)).To(Succeed())
		cm := &corev1.ConfigMap{ObjectMeta: meta("someones", nil, nil)}
		Expect(c.Create(ctx, cm)).To(Succeed())
		byEtcd := &metav1.OwnerReference{APIVersion: etcdv1.GroupVersion.String(), Kind: "EtcdCluster", Name: ec.Name, UID: ec.UID, Controller: ptr.To(true)}
		byOther := &metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID, Controller: ptr.To(true)}
		orphans := []client.Object{pod(meta("thief", managed, nil)), svc(meta("thief", managed, byOther))}
		kept := []client.Object{svc(meta("kept-client", managed, byEtcd)), pod(meta("users", nil, nil)), claim}
		for _, o := range append(append([]client.Object{}, orphans...), kept...) {
			Expect(c.Create(ctx, o)).To(Succeed())
		}

		var out bytes.Buffer
		Expect(ctl.Unregister(ctx, ctl.UnregisterOptions{Name: "orphans", Management: fleet.Cluster("mgmt").Config, Namespace: ns,
			Workload: w1.Config, Out: &out})).To(Succeed())
		Expect(out.String()).To(ContainSubstring("deleted orphaned Pod default/thief"))
		Expect(out.String()).To(ContainSubstring("deleted orphaned Service default/thief"))
		Expect(out.String()).To(ContainSubstring("kept orphaned PersistentVolumeClaim default/data-thief: it may hold data"))
		for _, o := range orphans {
			Expect(exists(ctx, c, o)).To(BeFalse(), "%T %s is an orphan", o, o.GetName())
		}
		for _, o := range kept {
			Expect(exists(ctx, c, o)).To(BeTrue(), "%T %s is kept", o, o.GetName())
		}
		Expect(out.String()).NotTo(ContainSubstring("kept-client"))
		Expect(out.String()).NotTo(ContainSubstring("users"))
	}, SpecTimeout(2*time.Minute))

	It("deletes orphaned claims only when asked", func(ctx SpecContext) {
		c, err := client.New(fleet.Cluster("w1").Config, client.Options{})
		Expect(err).NotTo(HaveOccurred())
		var out bytes.Buffer
		n, err := ctl.RemoveOrphans(ctx, c, ctl.OrphanOptions{DeleteClaims: true, Out: &out})
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(Equal(1))
		Expect(out.String()).To(ContainSubstring("deleted orphaned PersistentVolumeClaim default/data-thief"))
		Expect(exists(ctx, c, claim)).To(BeFalse())
	}, SpecTimeout(time.Minute))
})
