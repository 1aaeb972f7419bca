package e2eutil

import (
	"context"
	"crypto/tls"
	"fmt"
	"maps"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdaccess"
)

// EtcdVersion is the version the sandbox runs.
const EtcdVersion = "3.7.3"

// EditEtcdCluster reads the EtcdCluster ns/name, applies edit to it and
// updates it, again on a conflict: the controllers write its status all
// the while, and a spec edit read a moment earlier is refused for that
// (an etcddata spec failed so in CI). ec is left as written.
func EditEtcdCluster(ctx context.Context, c client.Client, ns, name string, ec *v1alpha1.EtcdCluster, edit func(*v1alpha1.EtcdCluster)) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ec); err != nil {
			return err
		}
		edit(ec)
		return c.Update(ctx, ec)
	})).To(Succeed())
}

// NewEtcdCluster returns an EtcdCluster to create.
func NewEtcdCluster(ns, name string, replicas int32, memory bool) *v1alpha1.EtcdCluster {
	ec := &v1alpha1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.EtcdClusterSpec{Replicas: ptr.To(replicas), Version: EtcdVersion,
			Storage: v1alpha1.StorageSpec{Size: resource.MustParse("1Gi")}},
	}
	if memory {
		ec.Spec.Storage.Medium = v1alpha1.StorageMediumMemory
		ec.Spec.Storage.Size = resource.MustParse("64Mi")
	}
	return ec
}

// Available reports whether the cluster says Available=True with every
// desired member ready.
func Available(ec *v1alpha1.EtcdCluster) bool {
	return meta.IsStatusConditionTrue(ec.Status.Conditions, v1alpha1.ConditionAvailable) &&
		ec.Spec.Replicas != nil && ec.Status.ReadyMembers == *ec.Spec.Replicas
}

// WaitAvailable waits until the cluster is Available with all members ready.
func WaitAvailable(ctx context.Context, c client.Client, ns, name string, timeout time.Duration) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		ec := &v1alpha1.EtcdCluster{}
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ec)).To(Succeed())
		g.Expect(Available(ec)).To(BeTrue(), "status: %+v\nmembers: %s", ec.Status, describeMembers(ctx, c, ns, name))
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// Poke wakes a reconcile of object obj now: it touches an annotation, an
// event the reconcilers watch, for a spec that waits for a look that
// would otherwise come only at the object's next requeue (a minute for a
// steady EtcdCluster). What the look does is up to the reconciler: a
// poke proves nothing by itself.
func Poke(ctx context.Context, c client.Client, obj client.Object) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"e2e.etcdfleet.io/poke":"%d"}}}`, time.Now().UnixNano())
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
}

// Members returns the EtcdMembers of a cluster by name.
func Members(ctx context.Context, c client.Client, ns, cluster string) map[string]v1alpha1.EtcdMember {
	GinkgoHelper()
	var list v1alpha1.EtcdMemberList
	Expect(c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelCluster: cluster})).To(Succeed())
	out := map[string]v1alpha1.EtcdMember{}
	for _, m := range list.Items {
		out[m.Name] = m
	}
	return out
}

// MemberIDs returns member name -> etcd member ID from EtcdMember status.
func MemberIDs(ctx context.Context, c client.Client, ns, cluster string) map[string]string {
	GinkgoHelper()
	ids := map[string]string{}
	for n, m := range Members(ctx, c, ns, cluster) {
		ids[n] = m.Status.MemberID
	}
	return ids
}

// MemberNames returns the names of a cluster's EtcdMembers, sorted.
func MemberNames(ctx context.Context, c client.Client, ns, cluster string) []string {
	GinkgoHelper()
	return slices.Sorted(maps.Keys(Members(ctx, c, ns, cluster)))
}

// FirstMember returns the name of a cluster's EtcdMember that sorts first.
func FirstMember(ctx context.Context, c client.Client, ns, cluster string) string {
	GinkgoHelper()
	return MemberNames(ctx, c, ns, cluster)[0]
}

// Etcd is a client reaching an etcd cluster through port-forward.
type Etcd struct {
	*clientv3.Client
	dialer *etcdaccess.PortForwardDialer
}

// Close closes the client and its forwards.
func (e *Etcd) Close() { e.Client.Close(); e.dialer.Close() }

// ConnectEtcd dials every current member of the cluster through
// pods/portforward on the cluster's apiserver.
func ConnectEtcd(ctx context.Context, cfg *rest.Config, c client.Client, ns, cluster string) *Etcd {
	GinkgoHelper()
	e, err := DialEtcd(ctx, cfg, c, ns, cluster)
	Expect(err).NotTo(HaveOccurred())
	return e
}

// DialEtcd is ConnectEtcd returning an error, for code outside a spec.
// Extra gRPC dial options (e.g. a shorter reconnect backoff) come last.
func DialEtcd(ctx context.Context, cfg *rest.Config, c client.Client, ns, cluster string, opts ...grpc.DialOption) (*Etcd, error) {
	return DialEtcdLogging(ctx, cfg, c, ns, cluster, nil, opts...)
}

// DialEtcdLogging is DialEtcd with the client's logger: nil is the etcd
// client's default (warnings to stderr); zap.NewNop() keeps a client that
// is expected to fail (a probe of members that are down) quiet.
func DialEtcdLogging(ctx context.Context, cfg *rest.Config, c client.Client, ns, cluster string, log *zap.Logger, opts ...grpc.DialOption) (*Etcd, error) {
	var list v1alpha1.EtcdMemberList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelCluster: cluster}); err != nil {
		return nil, err
	}
	d, err := etcdaccess.NewPortForwardDialer(cfg, etcdaccess.PortForwardOptions{})
	if err != nil {
		return nil, err
	}
	var eps []string
	for i := range list.Items {
		eps = append(eps, etcd.MemberClientURL(&list.Items[i]))
	}
	var tlsCfg *tls.Config
	if len(list.Items) > 0 && etcd.ClientTLS(&list.Items[0]) {
		tlsCfg = liveClientTLS(c, &list.Items[0])
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, TLS: tlsCfg, Logger: log,
		DialOptions: append([]grpc.DialOption{grpc.WithContextDialer(etcdaccess.ContextDialer(d))}, opts...)})
	if err != nil {
		d.Close()
		return nil, err
	}
	return &Etcd{Client: cli, dialer: d}, nil
}

// PutKeys writes n keys under prefix, retrying each briefly.
func (e *Etcd) PutKeys(ctx context.Context, prefix string, n int) {
	GinkgoHelper()
	for i := 0; i < n; i++ {
		key, val := fmt.Sprintf("%s/%05d", prefix, i), fmt.Sprintf("value-%d", i)
		Eventually(func() error {
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			_, err := e.Put(cctx, key, val)
			return err
		}).WithTimeout(30 * time.Second).Should(Succeed())
	}
}

// ExpectKeys waits until every key written by PutKeys(prefix, n) reads back.
func (e *Etcd) ExpectKeys(ctx context.Context, prefix string, n int) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		resp, err := e.Get(cctx, prefix+"/", clientv3.WithPrefix())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(resp.Kvs).To(HaveLen(n))
		for i, kv := range resp.Kvs {
			g.Expect(string(kv.Key)).To(Equal(fmt.Sprintf("%s/%05d", prefix, i)))
			g.Expect(string(kv.Value)).To(Equal(fmt.Sprintf("value-%d", i)))
		}
	}).WithTimeout(60 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
}

// ExpectKeysIn dials ns/cluster's etcd afresh, waits until every key that
// PutKeys(prefix, n) wrote reads back, and closes the connection: the
// check after a fault that replaced the members an older client dialled.
func ExpectKeysIn(ctx context.Context, cfg *rest.Config, c client.Client, ns, cluster, prefix string, n int) {
	GinkgoHelper()
	e := ConnectEtcd(ctx, cfg, c, ns, cluster)
	defer e.Close()
	e.ExpectKeys(ctx, prefix, n)
}

// describeMembers summarises member readiness for failure messages.
func describeMembers(ctx context.Context, c client.Client, ns, cluster string) string {
	var list v1alpha1.EtcdMemberList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelCluster: cluster}); err != nil {
		return err.Error()
	}
	out := ""
	for _, m := range list.Items {
		cond := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.ConditionReady)
		if cond == nil {
			cond = &metav1.Condition{}
		}
		out += fmt.Sprintf("\n  %s id=%s voter=%v ready=%s/%s: %s", m.Name, m.Status.MemberID, m.Status.IsVoter, cond.Status, cond.Reason, cond.Message)
		p := &corev1.Pod{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: m.Name}, p); err == nil {
			out += fmt.Sprintf(" [pod %s uid=%s node=%q deleting=%v ready=%v conds=%v]", p.Status.Phase, p.UID, p.Spec.NodeName, p.DeletionTimestamp != nil, PodReady(p), p.Status.Conditions)
		}
	}
	return out
}

// PodReady reports whether p's Ready condition is True, as the apiserver
// reports it. The e2e suites judge the operator with it, so it is theirs
// rather than memberctl/component/pod.IsReady, the operator's own.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Pod returns Pod ns/name as the apiserver has it now (not a cache), and
// fails the spec if it cannot be read.
func Pod(ctx context.Context, c client.Client, ns, name string) *corev1.Pod {
	GinkgoHelper()
	p := &corev1.Pod{}
	Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, p)).To(Succeed())
	return p
}

// PodNode names the Node that Pod ns/name is bound to.
func PodNode(ctx context.Context, c client.Client, ns, name string) string {
	GinkgoHelper()
	return Pod(ctx, c, ns, name).Spec.NodeName
}

// PodUIDs returns the current Pod UID of every member of a cluster.
func PodUIDs(ctx context.Context, c client.Client, ns, cluster string) map[string]types.UID {
	GinkgoHelper()
	out := map[string]types.UID{}
	for n := range Members(ctx, c, ns, cluster) {
		p := &corev1.Pod{}
		Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, p)).To(Succeed())
		out[n] = p.UID
	}
	return out
}

// WaitPodsReplaced waits until every Pod named in old was replaced by a
// new, Ready Pod of the same name. It guards against reading a status that
// predates a fault: a stopped operator leaves Available=True behind.
func WaitPodsReplaced(ctx context.Context, c client.Client, ns string, old map[string]types.UID, timeout time.Duration) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		for n, uid := range old {
			p := &corev1.Pod{}
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, p)).To(Succeed())
			g.Expect(p.UID).NotTo(Equal(uid), "Pod %s not replaced yet", n)
			g.Expect(PodReady(p)).To(BeTrue(), "Pod %s not ready yet", n)
		}
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(250 * time.Millisecond).Should(Succeed())
}
