package etcdmember

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
	"github.com/etcdfleet/etcdfleet/test/envtestenv"
)

// The suite runs the member reconciler, called by hand, against ONE real
// kube-apiserver (envtest) with the workload CRDs. There is no kubelet:
// the specs write Pod status themselves. etcd is a fakeetcd.Etcd, a stub of
// etcd.Interface with a member list and per-member health: these specs test
// the reconciler's decisions; the sandbox e2e suites run real etcd.

var (
	testEnv   *envtestenv.Env
	k8sClient client.Client
)

func TestMember(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "memberctl/etcdmember (envtest)")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(GinkgoLogr)
	env, err := envtestenv.Start(envtestenv.WorkloadCRDs, v1alpha1.AddToScheme)
	Expect(err).NotTo(HaveOccurred())
	testEnv, k8sClient = env, env.Client
})

var _ = AfterSuite(func() { Expect(testEnv.Stop()).To(Succeed()) })

// countingGate is the shared gate: it records every request, delays the
// next `delay` of them, and counts the tokens given back.
type countingGate struct {
	mu       sync.Mutex
	requests []gate.Request
	delay    int
	granted  int
	canceled int
}

func (g *countingGate) Reserve(_ context.Context, r gate.Request) gate.Decision {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.requests = append(g.requests, r)
	if g.delay > 0 {
		g.delay--
		return gate.Decision{Delay: time.Minute, Cancel: func() {}}
	}
	g.granted++
	return gate.Decision{Cancel: func() { g.mu.Lock(); g.canceled++; g.mu.Unlock() }}
}

func (g *countingGate) count() (requests, granted, canceled int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.requests), g.granted, g.canceled
}

// eventLog keeps "<Kind>/<name> <type> <reason> <message>" lines.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (e *eventLog) Event(o runtime.Object, eventType, reason, message string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	kind := "EtcdMember"
	if _, ok := o.(*v1alpha1.EtcdCluster); ok {
		kind = "EtcdCluster"
	}
	name := o.(client.Object).GetName()
	e.events = append(e.events, fmt.Sprintf("%s/%s %s %s %s", kind, name, eventType, reason, message))
}

func (e *eventLog) Eventf(o runtime.Object, eventType, reason, format string, args ...any) {
	e.Event(o, eventType, reason, fmt.Sprintf(format, args...))
}

func (e *eventLog) AnnotatedEventf(o runtime.Object, _ map[string]string, eventType, reason, format string, args ...any) {
	e.Eventf(o, eventType, reason, format, args...)
}

// with returns the events whose reason is reason.
func (e *eventLog) with(reason string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.events {
		if strings.Fields(ev)[2] == reason {
			out = append(out, ev)
		}
	}
	return out
}

// cacheClient is what the reconciler's Cluster.Client is in production: a
// cache of Pods narrowed to the managed-by label (so a relabelled Pod
// drops out of it), writing to the apiserver. failDeletes makes the next
// Deletes fail, as an apiserver hiccup or a cancelled context would; a
// frozen EtcdCluster is served stale, as a lagging cache would.
type cacheClient struct {
	client.Client
	mu          sync.Mutex
	failDeletes int
	frozen      *v1alpha1.EtcdCluster
	// staleMember, when set, is what the cache still says of that member.
	staleMember *v1alpha1.EtcdMember
	// stalePodOnce, when set, is returned by the next read of that Pod
	// only: the cache caught up right after.
	stalePodOnce *corev1.Pod
}

func (c *cacheClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.mu.Lock()
	frozen, stale, stalePod := c.frozen, c.staleMember, c.stalePodOnce
	if _, ok := obj.(*corev1.Pod); ok && stalePod != nil && stalePod.Name == key.Name {
		c.stalePodOnce = nil
	} else {
		stalePod = nil
	}
	c.mu.Unlock()
	if stalePod != nil {
		stalePod.DeepCopyInto(obj.(*corev1.Pod))
		return nil
	}
	if ec, ok := obj.(*v1alpha1.EtcdCluster); ok && frozen != nil {
		frozen.DeepCopyInto(ec)
		return nil
	}
	if m, ok := obj.(*v1alpha1.EtcdMember); ok && stale != nil && stale.Name == key.Name {
		stale.DeepCopyInto(m)
		return nil
	}
	if err := c.Client.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if p, ok := obj.(*corev1.Pod); ok && p.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByValue {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, key.Name)
	}
	return nil
}

func (c *cacheClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	c.mu.Lock()
	fail := c.failDeletes > 0
	if fail {
		c.failDeletes--
	}
	c.mu.Unlock()
	if fail {
		return fmt.Errorf("injected: delete %s failed after the status write", obj.GetName())
	}
	return c.Client.Delete(ctx, obj, opts...)
}
