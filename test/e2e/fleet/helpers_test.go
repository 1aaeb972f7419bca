package fleet_test

import (
	"bytes"
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
)

// goodKubeconfig is the working kubeconfig baseline() registers for each
// cluster: the one etcdfleetctl register mints (e2eutil.RegisterInstall),
// until a spec rotates to another.
var goodKubeconfig = map[string][]byte{}

// keysWritten records the EtcdClusters that hold their keys.
var keysWritten = map[string]bool{}

// --- registration Secrets -------------------------------------------------

// putSecret creates or replaces a registration Secret: data as given,
// labelled, not paused.
func putSecret(ctx context.Context, name string, data map[string][]byte) {
	GinkgoHelper()
	for _, v := range data {
		registered = append(registered, v)
	}
	s := &corev1.Secret{}
	err := mgmtC.Get(ctx, types.NamespacedName{Namespace: secretNS, Name: name}, s)
	if apierrors.IsNotFound(err) {
		s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretNS, Name: name,
			Labels: map[string]string{fleetv1.RegistrationLabel: "true"}}, Data: data}
		Expect(mgmtC.Create(ctx, s)).To(Succeed())
		return
	}
	Expect(err).NotTo(HaveOccurred())
	s.Data = data
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.Labels[fleetv1.RegistrationLabel] = "true"
	delete(s.Annotations, fleetv1.PausedAnnotation)
	Expect(mgmtC.Update(ctx, s)).To(Succeed())
}

func kubeconfigData(kc []byte) map[string][]byte {
	return map[string][]byte{fleetv1.KubeconfigKey: kc}
}

func deleteSecret(ctx context.Context, name string) {
	GinkgoHelper()
	Expect(client.IgnoreNotFound(mgmtC.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretNS, Name: name}}))).To(Succeed())
}

// editSecret applies fn to the Secret and updates it.
func editSecret(ctx context.Context, name string, fn func(*corev1.Secret)) {
	GinkgoHelper()
	Eventually(func() error {
		s := &corev1.Secret{}
		if err := mgmtC.Get(ctx, types.NamespacedName{Namespace: secretNS, Name: name}, s); err != nil {
			return err
		}
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		fn(s)
		return mgmtC.Update(ctx, s)
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

func setLabelled(ctx context.Context, name string, on bool) {
	GinkgoHelper()
	editSecret(ctx, name, func(s *corev1.Secret) {
		if on {
			s.Labels[fleetv1.RegistrationLabel] = "true"
		} else {
			delete(s.Labels, fleetv1.RegistrationLabel)
		}
	})
}

func setClusterPaused(ctx context.Context, name string, on bool) {
	GinkgoHelper()
	editSecret(ctx, name, func(s *corev1.Secret) {
		if on {
			s.Annotations[fleetv1.PausedAnnotation] = "true"
		} else {
			delete(s.Annotations, fleetv1.PausedAnnotation)
		}
	})
}

func setFleetPaused(ctx context.Context, on bool) {
	GinkgoHelper()
	Eventually(func() error {
		f := &fleetv1.Fleet{}
		if err := mgmtC.Get(ctx, types.NamespacedName{Name: fleetv1.FleetName}, f); err != nil {
			return err
		}
		f.Spec.Paused = on
		return mgmtC.Update(ctx, f)
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// --- FleetCluster rows ------------------------------------------------------

func row(ctx context.Context, name string) (*fleetv1.FleetCluster, error) {
	fc := &fleetv1.FleetCluster{}
	return fc, mgmtC.Get(ctx, types.NamespacedName{Namespace: secretNS, Name: name}, fc)
}

// expectRow waits until the FleetCluster's condition typ has status and,
// if reasons are given, one of them; it returns the condition.
func expectRow(ctx context.Context, name, typ string, status metav1.ConditionStatus, reasons ...string) *metav1.Condition {
	GinkgoHelper()
	var got *metav1.Condition
	Eventually(func(g Gomega) {
		fc, err := row(ctx, name)
		g.Expect(err).NotTo(HaveOccurred())
		got = apimeta.FindStatusCondition(fc.Status.Conditions, typ)
		g.Expect(got).NotTo(BeNil(), "FleetCluster %s has no %s condition yet", name, typ)
		g.Expect(got.Status).To(Equal(status), "FleetCluster %s %s: %s %s", name, typ, got.Reason, got.Message)
		if len(reasons) > 0 {
			g.Expect(reasons).To(ContainElement(got.Reason), "FleetCluster %s %s: %s", name, typ, got.Message)
		}
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	return got
}

// --- baseline -------------------------------------------------------------

// baseline brings the fleet to the state every spec starts from: every
// workload cluster reachable and registered with a working kubeconfig, no
// pause, both EtcdClusters of every cluster Available with their keys.
func baseline(ctx context.Context) {
	GinkgoHelper()
	By("baseline: every cluster registered, healthy and holding its keys")
	setFleetPaused(ctx, false)
	for _, w := range workloads {
		Expect(sb.Cluster(w).Heal()).To(Succeed())
		s := &corev1.Secret{}
		err := mgmtC.Get(ctx, types.NamespacedName{Namespace: secretNS, Name: w}, s)
		if err != nil || s.Labels[fleetv1.RegistrationLabel] != "true" || s.Annotations[fleetv1.PausedAnnotation] != "" ||
			!bytes.Equal(s.Data[fleetv1.KubeconfigKey], goodKubeconfig[w]) {
			Expect(client.IgnoreNotFound(err)).To(Succeed())
			putSecret(ctx, w, kubeconfigData(goodKubeconfig[w]))
		}
	}
	waitConnected(ctx, 2*time.Minute, workloads...)
	for _, w := range workloads {
		Expect(client.IgnoreAlreadyExists(wc[w].Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: etcdNS}}))).To(Succeed())
		for _, n := range etcdNames {
			Expect(client.IgnoreAlreadyExists(wc[w].Create(ctx, e2eutil.NewEtcdCluster(etcdNS, n, 3, false)))).To(Succeed())
		}
	}
	waitHealed(ctx, time.Now(), nil, 3*time.Minute, workloads...)
	for _, w := range workloads {
		for _, n := range etcdNames {
			if keysWritten[w+"/"+n] {
				continue
			}
			e := e2eutil.ConnectEtcd(ctx, wcfg[w], wc[w], etcdNS, n)
			e.PutKeys(ctx, "k", keys)
			e.Close()
			keysWritten[w+"/"+n] = true
		}
	}
}
