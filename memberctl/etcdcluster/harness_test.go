package etcdcluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pod"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
	"github.com/etcdfleet/etcdfleet/test/fakeetcd"
)

// harness drives the reconciler by hand against envtest and plays the
// member reconciler's part (Pod started, memberID known, Ready) itself.
type harness struct {
	ns     string
	etcd   *fakeetcd.Etcd
	events *eventLog
	r      *Reconciler
	now    time.Time
}

func newHarness() *harness {
	GinkgoHelper()
	h := &harness{ns: testEnv.NewNamespace(context.Background(), "cluster-test"), etcd: fakeetcd.New(), events: &eventLog{}, now: time.Now()}
	cl := &workload.Cluster{Client: k8sClient, Reader: k8sClient, Recorder: h.events, Etcd: h.etcd}
	h.r = &Reconciler{Clusters: workload.Static{C: cl}, Now: func() time.Time { return h.now }}
	return h
}

func (h *harness) newCluster(replicas int32) *v1alpha1.EtcdCluster {
	GinkgoHelper()
	ec := &v1alpha1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "ec", Namespace: h.ns},
		Spec: v1alpha1.EtcdClusterSpec{
			Replicas: ptr.To(replicas),
			Version:  "3.6.16",
			Storage:  v1alpha1.StorageSpec{Size: resource.MustParse("1Gi")},
		},
	}
	Expect(k8sClient.Create(context.Background(), ec)).To(Succeed())
	return ec
}

func (h *harness) reconcile(ec *v1alpha1.EtcdCluster) ctrl.Result {
	GinkgoHelper()
	res, err := h.r.Reconcile(context.Background(), "", client.ObjectKeyFromObject(ec))
	Expect(err).NotTo(HaveOccurred())
	return res
}

func (h *harness) get(ec *v1alpha1.EtcdCluster) *v1alpha1.EtcdCluster {
	GinkgoHelper()
	cur := &v1alpha1.EtcdCluster{}
	Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(ec), cur)).To(Succeed())
	return cur
}

// members lists the cluster's members, oldest first.
func (h *harness) members() []v1alpha1.EtcdMember {
	GinkgoHelper()
	ms, err := etcd.Members(context.Background(), k8sClient, h.ns, "ec")
	Expect(err).NotTo(HaveOccurred())
	return ms
}

func (h *harness) setReplicas(ec *v1alpha1.EtcdCluster, n int32) {
	GinkgoHelper()
	cur := h.get(ec)
	cur.Spec.Replicas = ptr.To(n)
	Expect(k8sClient.Update(context.Background(), cur)).To(Succeed())
}

// startMember plays the member reconciler and etcd: the member's etcd
// starts (the first one bootstraps the fake cluster), and the member gets
// its finalizer, Pod name, member ID and Ready=True.
func (h *harness) startMember(m *v1alpha1.EtcdMember) {
	GinkgoHelper()
	ctx := context.Background()
	Expect(m.Spec.InitialCluster).NotTo(BeEmpty(), "a Pod is only created once initialCluster is set")
	id, err := h.etcd.Start(m.Name, etcd.MemberPeerURL(m))
	Expect(err).NotTo(HaveOccurred())
	if controllerutil.AddFinalizer(m, v1alpha1.FinalizerMemberCleanup) {
		Expect(k8sClient.Update(ctx, m)).To(Succeed())
	}
	h.setMemberStatus(m, func(s *v1alpha1.EtcdMemberStatus) {
		s.PodName, s.MemberID = m.Name, fmt.Sprintf("%016x", id)
		s.TemplateHash = pod.TemplateHash(&m.Spec) // the Pod is built from the member's spec
		apimeta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady,
			Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonPodReady, Message: "pod is ready"})
	})
}

func (h *harness) setReady(m *v1alpha1.EtcdMember, ready bool) {
	GinkgoHelper()
	st, reason := metav1.ConditionFalse, v1alpha1.ReasonPodNotReady
	if ready {
		st, reason = metav1.ConditionTrue, v1alpha1.ReasonPodReady
	}
	h.setMemberStatus(m, func(s *v1alpha1.EtcdMemberStatus) {
		apimeta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady,
			Status: st, Reason: reason, Message: "set by the test"})
	})
}

func (h *harness) setMemberStatus(m *v1alpha1.EtcdMember, mutate func(*v1alpha1.EtcdMemberStatus)) {
	GinkgoHelper()
	ctx := context.Background()
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(m), m)).To(Succeed())
	mutate(&m.Status)
	Expect(k8sClient.Status().Update(ctx, m)).To(Succeed())
}

// converge reconciles, starting every member that got its initial
// cluster, until the cluster reports n ready members and Reconciled.
func (h *harness) converge(ec *v1alpha1.EtcdCluster, n int32) {
	GinkgoHelper()
	for i := 0; i < 40; i++ {
		h.reconcile(ec)
		for _, m := range h.members() {
			if m.Spec.InitialCluster != "" && m.Status.PodName == "" && !m.Spec.Dormant && m.DeletionTimestamp == nil {
				h.startMember(&m)
			}
		}
		cur := h.get(ec)
		if cur.Status.ReadyMembers == n && conditionReason(cur, v1alpha1.ConditionProgressing) == v1alpha1.ReasonReconciled {
			return
		}
	}
	Fail(fmt.Sprintf("cluster did not converge to %d members: %+v", n, h.get(ec).Status))
}

func conditionReason(ec *v1alpha1.EtcdCluster, t string) string {
	if c := apimeta.FindStatusCondition(ec.Status.Conditions, t); c != nil {
		return c.Reason
	}
	return ""
}

func conditionStatus(ec *v1alpha1.EtcdCluster, t string) metav1.ConditionStatus {
	if c := apimeta.FindStatusCondition(ec.Status.Conditions, t); c != nil {
		return c.Status
	}
	return ""
}

// callsLike returns the calls starting with prefix.
func callsLike(calls []string, prefix string) []string {
	var out []string
	for _, c := range calls {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

func etcdMember(id uint64, name, peerURL string) etcd.Member {
	return etcd.Member{ID: id, Name: name, PeerURLs: []string{peerURL}}
}

func etcdTarget() etcd.Target { return etcd.Target{Key: "test"} }

// mustID parses a member's status.memberID.
func mustID(m *v1alpha1.EtcdMember) uint64 {
	GinkgoHelper()
	id, err := strconv.ParseUint(m.Status.MemberID, 16, 64)
	Expect(err).NotTo(HaveOccurred())
	return id
}

// laggingClient is the real client, except that while stale is set it
// answers EtcdMember lists with that frozen list: a cache that has not seen
// the latest writes yet.
type laggingClient struct {
	client.Client
	stale *v1alpha1.EtcdMemberList
}

func (c *laggingClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if l, ok := list.(*v1alpha1.EtcdMemberList); ok && c.stale != nil {
		c.stale.DeepCopyInto(l)
		return nil
	}
	return c.Client.List(ctx, list, opts...)
}

// lag makes the harness's cache (Cluster.Client) lag: from now on it lists
// the members as they are now. The live reader stays current.
func (h *harness) lag() *laggingClient {
	GinkgoHelper()
	lc := &laggingClient{Client: k8sClient, stale: &v1alpha1.EtcdMemberList{Items: h.members()}}
	cl, err := h.r.Clusters.Cluster(context.Background(), "")
	Expect(err).NotTo(HaveOccurred())
	cl.Client = lc
	return lc
}
