package etcdcluster

import (
	"fmt"
	"sync"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/envtestenv"
)

// The suite runs against ONE real kube-apiserver (envtest) with the
// workload CRDs. etcd is replaced by a fakeetcd.Etcd, a recording stub of
// etcd.Interface that keeps a member list in memory: these specs test
// the reconciler's decisions, not etcd. The end-to-end behaviour with real
// etcd is covered by the sandbox tests.

var (
	testEnv   *envtestenv.Env
	cfg       *rest.Config
	k8sClient client.Client
	scheme    *runtime.Scheme
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
