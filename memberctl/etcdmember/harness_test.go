package etcdmember

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pod"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/memberctl/replacement"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
	"github.com/etcdfleet/etcdfleet/test/fakeetcd"
)

// testPolicy caps at 2 so that a cap is reached in a few steps.
var testPolicy = replacement.Policy{InitialBackoff: time.Second, MaxBackoff: time.Minute, Cap: 2,
	Window: time.Hour, HealthyReset: 10 * time.Minute}

// harness is one EtcdCluster of n running members in its own namespace,
// and a member reconciler wired to a fake etcd, a counting gate and an
// event log. Name doubles as the workload cluster name, so the metric
// series of each spec are its own.
type harness struct {
	ns     string
	etcd   *fakeetcd.Etcd
	gate   *countingGate
	events *eventLog
	cache  *cacheClient
	r      *Reconciler
	now    time.Time
	ec     *v1alpha1.EtcdCluster
}

func newHarness(medium v1alpha1.StorageMedium, n int) *harness {
	GinkgoHelper()
	ns := testEnv.NewNamespace(context.Background(), "member-test")
	h := &harness{ns: ns, etcd: fakeetcd.New(), events: &eventLog{}, cache: &cacheClient{Client: k8sClient},
		now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	h.restart()
	h.ec = &v1alpha1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "ec", Namespace: ns},
		Spec: v1alpha1.EtcdClusterSpec{Replicas: ptr.To(int32(n)), Version: "3.6.16",
			Storage: v1alpha1.StorageSpec{Medium: medium, Size: resource.MustParse("64Mi")}},
	}
	Expect(k8sClient.Create(context.Background(), h.ec)).To(Succeed())
	for i := 0; i < n; i++ {
		h.startMember(fmt.Sprintf("ec-%d", i))
	}
	return h
}

// restart is a manager restart: a new Reconciler and a new gate, nothing
// carried over in memory.
func (h *harness) restart() {
	h.gate = &countingGate{}
	cl := &workload.Cluster{Name: h.ns, Client: h.cache, Reader: k8sClient, Recorder: h.events, Etcd: h.etcd, Gate: h.gate}
	opts := DefaultOptions()
	opts.Policy = testPolicy
	h.r = &Reconciler{Clusters: workload.Static{C: cl}, Options: opts, Now: func() time.Time { return h.now }}
}

// startMember creates a member as the cluster controller would, lets the
// reconciler create its Pod, plays the kubelet (Pod running and ready) and
// reconciles until the member is Ready.
func (h *harness) startMember(name string) {
	GinkgoHelper()
	ctx := context.Background()
	m := &v1alpha1.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, Labels: v1alpha1.MemberLabels("ec", name),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(h.ec, v1alpha1.GroupVersion.WithKind("EtcdCluster"))}},
		Spec: v1alpha1.EtcdMemberSpec{ClusterName: "ec", Version: "3.6.16", Storage: h.ec.Spec.Storage,
			InitialCluster: name + "=http://peer"},
	}
	Expect(k8sClient.Create(ctx, m)).To(Succeed())
	m.Status.IsVoter = true
	Expect(k8sClient.Status().Update(ctx, m)).To(Succeed())
	h.etcd.Add(name, etcd.MemberPeerURL(m))
	h.reconcile(name) // creates the Pod
	h.setPod(name, running(true, 0))
	h.reconcile(name) // discovers the member ID
	Expect(isReady(h.member(name))).To(BeTrue(), "member %s is Ready", name)
}

func (h *harness) reconcileErr(name string) (ctrl.Result, error) {
	return h.r.Reconcile(context.Background(), h.ns, client.ObjectKey{Namespace: h.ns, Name: name})
}

func (h *harness) reconcile(name string) ctrl.Result {
	GinkgoHelper()
	res, err := h.reconcileErr(name)
	Expect(err).NotTo(HaveOccurred())
	return res
}

func (h *harness) member(name string) *v1alpha1.EtcdMember {
	GinkgoHelper()
	m := &v1alpha1.EtcdMember{}
	Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: h.ns, Name: name}, m)).To(Succeed())
	return m
}

// removing reports whether the member was deleted (its finalizer holds it).
func (h *harness) removing(name string) bool {
	GinkgoHelper()
	m := &v1alpha1.EtcdMember{}
	err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: h.ns, Name: name}, m)
	if apierrors.IsNotFound(err) {
		return true
	}
	Expect(err).NotTo(HaveOccurred())
	return m.DeletionTimestamp != nil
}

func (h *harness) cluster() *v1alpha1.EtcdCluster {
	GinkgoHelper()
	ec := &v1alpha1.EtcdCluster{}
	Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(h.ec), ec)).To(Succeed())
	return ec
}

// pod returns the member's Pod, or nil.
func (h *harness) pod(name string) *corev1.Pod {
	GinkgoHelper()
	p := &corev1.Pod{}
	err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: h.ns, Name: name}, p)
	if apierrors.IsNotFound(err) {
		return nil
	}
	Expect(err).NotTo(HaveOccurred())
	return p
}

// setPod plays the kubelet: it writes the Pod's status.
// podReplaced reports whether the Pod that name's last replacement
// recorded is gone: the Pod there now, if any, is its successor.
func (h *harness) podReplaced(name string) bool {
	GinkgoHelper()
	st, p := h.member(name).Status.Replacement, h.pod(name)
	return st != nil && st.LastPodUID != "" && (p == nil || p.UID != st.LastPodUID)
}

func (h *harness) setPod(name string, st corev1.PodStatus) {
	GinkgoHelper()
	p := h.pod(name)
	Expect(p).NotTo(BeNil())
	p.Status = st
	Expect(k8sClient.Status().Update(context.Background(), p)).To(Succeed())
}

// losePod deletes the member's Pod, as a node that died with it would.
func (h *harness) losePod(name string) {
	GinkgoHelper()
	Expect(k8sClient.Delete(context.Background(), h.pod(name), client.GracePeriodSeconds(0))).To(Succeed())
	Eventually(func() *corev1.Pod { return h.pod(name) }).Should(BeNil())
}

// crashLoop makes the member's etcd crash over and over.
func (h *harness) crashLoop(name string) {
	GinkgoHelper()
	h.setPod(name, running(false, 7))
	h.etcd.SetDown(name, true)
}

// playClusterController releases the replacement lease, as the cluster
// controller does once the cluster is whole again.
func (h *harness) playClusterController() {
	GinkgoHelper()
	ec := h.cluster()
	ec.Status.Replacing = nil
	Expect(k8sClient.Status().Update(context.Background(), ec)).To(Succeed())
}

// finalize lets a deleted member's finalizer remove it from etcd.
func (h *harness) finalize(name string) {
	GinkgoHelper()
	h.reconcile(name)
	Eventually(func() bool {
		err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: h.ns, Name: name}, &v1alpha1.EtcdMember{})
		return apierrors.IsNotFound(err)
	}).Should(BeTrue())
}

func running(ready bool, restarts int32) corev1.PodStatus {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return corev1.PodStatus{Phase: corev1.PodRunning,
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: st}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: pod.ContainerName, Ready: ready, RestartCount: restarts}}}
}

func failed(reason string) corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodFailed, Reason: reason, Message: "set by the test"}
}

func isReady(m *v1alpha1.EtcdMember) bool {
	return meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.ConditionReady)
}

func readyMessage(m *v1alpha1.EtcdMember) string {
	if c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		return c.Message
	}
	return ""
}
