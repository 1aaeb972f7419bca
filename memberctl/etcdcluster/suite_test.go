package etcdcluster

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/test/envtestenv"
)

// The suite runs against ONE real kube-apiserver (envtest) with the
// workload CRDs. etcd is replaced by fakeEtcd, a recording stub of
// etcd.Interface that keeps a member list in memory: these specs test
// the reconciler's decisions, not etcd. The end-to-end behaviour with real
// etcd is covered by the sandbox tests.

var (
	testEnv   *envtestenv.Env
	cfg       *rest.Config
	k8sClient client.Client
	scheme    *runtime.Scheme
	nsSeq     atomic.Int64
)

func TestCluster(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "memberctl/etcdcluster (envtest)")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(GinkgoLogr)
	env, err := envtestenv.Start(envtestenv.WorkloadCRDs, v1alpha1.AddToScheme)
	Expect(err).NotTo(HaveOccurred())
	// A direct client: every read sees the previous write.
	testEnv, cfg, scheme, k8sClient = env, env.Config, env.Scheme, env.Client
})

var _ = AfterSuite(func() {
	Expect(testEnv.Stop()).To(Succeed())
})

// newNamespace creates a fresh namespace so specs never share objects.
func newNamespace() string {
	GinkgoHelper()
	name := fmt.Sprintf("cluster-test-%d", nsSeq.Add(1))
	Expect(k8sClient.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	return name
}

// fakeEtcd is a recording stub of etcd.Interface: an in-memory member
// list that AddLearner, Promote and Remove change as etcd would, plus
// injectable failures.
type fakeEtcd struct {
	mu        sync.Mutex
	clusterID uint64
	nextID    uint64
	members   []etcd.Member
	// fail, when set, is returned by every call.
	fail error
	// promoteErrs are returned by the next Promote calls, in order.
	promoteErrs []error
	calls       []string
	forgotten   []string
	// revision is the keyspace revision Status reports.
	revision int64
}

func newFakeEtcd() *fakeEtcd { return &fakeEtcd{clusterID: 0xc1a5, nextID: 0x100} }

func (f *fakeEtcd) record(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

// Calls returns the calls made so far, e.g. "AddLearner http://...".
func (f *fakeEtcd) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeEtcd) setFail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = err
}

func (f *fakeEtcd) list() []etcd.Member {
	out := make([]etcd.Member, len(f.members))
	for i, m := range f.members {
		m.PeerURLs = append([]string(nil), m.PeerURLs...)
		out[i] = m
	}
	return out
}

// start is what a member's etcd does when its Pod starts: the first one
// bootstraps a single-voter cluster, later ones take their name in the list.
func (f *fakeEtcd) start(name, peerURL string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.members {
		if f.members[i].PeerURLs[0] == peerURL {
			f.members[i].Name = name
			return f.members[i].ID
		}
	}
	Expect(f.members).To(BeEmpty(), "member %s started without being added", name)
	f.nextID++
	f.members = append(f.members, etcd.Member{ID: f.nextID, Name: name, PeerURLs: []string{peerURL}})
	return f.nextID
}

func (f *fakeEtcd) MemberList(_ context.Context, t etcd.Target) (uint64, []etcd.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("MemberList %d", len(t.Endpoints))
	if f.fail != nil {
		return 0, nil, f.fail
	}
	return f.clusterID, f.list(), nil
}

func (f *fakeEtcd) AddLearner(_ context.Context, _ etcd.Target, peerURL string) (etcd.Member, []etcd.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("AddLearner %s", peerURL)
	if f.fail != nil {
		return etcd.Member{}, nil, f.fail
	}
	f.nextID++
	m := etcd.Member{ID: f.nextID, PeerURLs: []string{peerURL}, IsLearner: true}
	f.members = append(f.members, m)
	return m, f.list(), nil
}

func (f *fakeEtcd) Promote(_ context.Context, _ etcd.Target, id uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Promote %016x", id)
	if f.fail != nil {
		return f.fail
	}
	if len(f.promoteErrs) > 0 {
		err := f.promoteErrs[0]
		f.promoteErrs = f.promoteErrs[1:]
		return err
	}
	for i := range f.members {
		if f.members[i].ID == id {
			f.members[i].IsLearner = false
			return nil
		}
	}
	return fmt.Errorf("member %016x not found", id)
}

func (f *fakeEtcd) Remove(_ context.Context, _ etcd.Target, id uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Remove %016x", id)
	if f.fail != nil {
		return f.fail
	}
	for i := range f.members {
		if f.members[i].ID == id {
			f.members = append(f.members[:i], f.members[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("member %016x not found", id)
}

// Status answers with the keyspace revision the test set (revision).
func (f *fakeEtcd) Status(context.Context, etcd.Target, string) (etcd.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return etcd.Status{}, f.fail
	}
	return etcd.Status{Revision: f.revision}, nil
}

func (f *fakeEtcd) Forget(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forgotten = append(f.forgotten, key)
}

// eventLog is an EventRecorder that keeps "<type> <reason> <message>" lines.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (e *eventLog) Event(_ runtime.Object, eventType, reason, message string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, eventType+" "+reason+" "+message)
}

func (e *eventLog) Eventf(o runtime.Object, eventType, reason, format string, args ...any) {
	e.Event(o, eventType, reason, fmt.Sprintf(format, args...))
}

func (e *eventLog) AnnotatedEventf(o runtime.Object, _ map[string]string, eventType, reason, format string, args ...any) {
	e.Eventf(o, eventType, reason, format, args...)
}

func (e *eventLog) All() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.events...)
}
