package kubeconfigsecret_test

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
)

// Claims are decided from what every replica reads alike (security review
// L8): the Secret whose annotation vouches for the identity, else the
// oldest, counting the Secrets that RecordedClaims says other replicas or
// earlier processes saw reach the cluster.
var _ = Describe("Claims", func() {
	const label, annotation = "test.example/claims-kubeconfig", "test.example/cluster-id"
	var (
		p        *kubeconfigsecret.Provider
		recorded atomic.Value // []string
		w1ID     string
		started  int // controller names are unique per process
	)
	BeforeEach(func(ctx SpecContext) {
		var err error
		w1ID, err = kubeconfigsecret.KubeSystemUID(ctx, w1.Config)
		Expect(err).NotTo(HaveOccurred())
		recorded.Store([]string(nil))
		opts := testOptions
		opts.Label, opts.ControllerName, opts.OnChange = label, fmt.Sprintf("kubeconfigsecret-claims-%d", started), nil
		started++
		opts.Identify, opts.IdentityAnnotation = kubeconfigsecret.KubeSystemUID, annotation
		opts.AccessRecheckInterval = 250 * time.Millisecond
		opts.RecordedClaims = func(_ context.Context, id string) ([]string, error) {
			if id != w1ID {
				return nil, nil
			}
			return recorded.Load().([]string), nil
		}
		p = startProvider(ctx, opts)
	})
	put := func(ctx context.Context, name string, kc []byte, vouchFor string) {
		GinkgoHelper()
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretNS, Name: name, Labels: map[string]string{label: "true"}},
			Data: map[string][]byte{testKey: kc}}
		if vouchFor != "" {
			sec.Annotations = map[string]string{annotation: vouchFor}
		}
		Expect(mgmtC.Create(ctx, sec)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(mgmtC.Delete(ctx, sec))).To(Succeed()) })
	}
	st := func(name string) func() kubeconfigsecret.ClusterState {
		return func() kubeconfigsecret.ClusterState { s, _ := p.State(name); return s }
	}
	refusedFor := func(ctx context.Context, name, reason, msg string) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			s := st(name)()
			g.Expect(s.Connected).To(BeFalse())
			g.Expect(s.Reason).To(Equal(reason))
			g.Expect(s.Message).To(ContainSubstring(msg))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	}

	It("gives the cluster to the Secret that vouches for it, whichever engaged first, and refuses one vouching for another cluster", func(ctx SpecContext) {
		put(ctx, "claims-first", w1.Kubeconfig, "")
		Eventually(func() bool { return st("claims-first")().Connected }).WithContext(ctx).WithTimeout(30 * time.Second).Should(BeTrue())

		By("registering the same cluster as a Secret that vouches for it: it takes the cluster over")
		put(ctx, "claims-vouched", w1.Kubeconfig, w1ID)
		Eventually(func() bool { return st("claims-vouched")().Connected }).WithContext(ctx).WithTimeout(30 * time.Second).Should(BeTrue())
		refusedFor(ctx, "claims-first", kubeconfigsecret.ReasonDuplicateCluster, "Secret "+secretNS+"/claims-vouched")

		By("registering a Secret whose annotation names another cluster than it reaches")
		put(ctx, "claims-mismatch", w1.Kubeconfig, "another-cluster")
		refusedFor(ctx, "claims-mismatch", kubeconfigsecret.ReasonIdentityMismatch, "another-cluster")
		Consistently(func() bool { return st("claims-vouched")().Connected }).WithTimeout(time.Second).Should(BeTrue())
	})

	It("disengages a newer Secret once another replica records an older one for its cluster, even one that cannot connect, and engages it when that one goes", func(ctx SpecContext) {
		unreachable := bytes.ReplaceAll(w1.Kubeconfig, []byte(w1.Config.Host), []byte("https://127.0.0.1:1"))
		Expect(unreachable).NotTo(Equal(w1.Kubeconfig))
		put(ctx, "claims-recorded", unreachable, "")
		time.Sleep(1100 * time.Millisecond) // creation times have a one-second resolution
		put(ctx, "claims-newer", w1.Kubeconfig, "")
		Eventually(func() bool { return st("claims-newer")().Connected }).WithContext(ctx).WithTimeout(30 * time.Second).Should(BeTrue())

		By("another replica recording the older Secret's identity: the newer one gives way within a re-check")
		recorded.Store([]string{"claims-recorded"})
		refusedFor(ctx, "claims-newer", kubeconfigsecret.ReasonDuplicateCluster, "Secret "+secretNS+"/claims-recorded")
		Consistently(func() bool { return st("claims-newer")().Connected }).WithTimeout(2 * time.Second).Should(BeFalse())

		By("removing the recorded Secret: the newer one engages")
		Expect(mgmtC.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretNS, Name: "claims-recorded"}})).To(Succeed())
		Eventually(func() bool { return st("claims-newer")().Connected }).WithContext(ctx).WithTimeout(30 * time.Second).Should(BeTrue())
	})
})
