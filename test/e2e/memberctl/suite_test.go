// Package memberctl_test runs the single-cluster operator (memberctl)
// against sandbox clusters with real kube-apiservers and real etcd.
package memberctl_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/etcdfleet/etcdfleet/memberctl/operator"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
	"github.com/etcdfleet/etcdfleet/test/sandbox/kubelet"
)

// One sandbox for the suite: "pf" is operated over port-forward through its
// apiserver, "direct" by dialling Pod IPs; "faults" (port-forward) takes the
// node-wide fault injection so it cannot disturb the lifecycle specs.
var (
	fleet     *sandbox.Fleet
	operators = map[string]func(){}
	clients   = map[string]client.WithWatch{}
)

func TestMemberctl(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "memberctl e2e Suite")
}

// Why each failed spec failed, at the end of the output where CI shows it.
var _ = ReportAfterSuite("failures, last", e2eutil.PrintFailures)

var _ = BeforeSuite(func(ctx SpecContext) {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	fleet, err = sandbox.Start(ctx, sandbox.Options{
		Clusters: []string{"pf", "direct", "faults"},
		CRDDirs:  []string{e2eutil.WorkloadCRDDir()},
		Kubelet:  kubelet.Options{RestartBackoff: 200 * time.Millisecond, MaxRestartBackoff: time.Second},
		Logf:     func(f string, a ...any) { GinkgoWriter.Printf(f+"\n", a...) },
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		for _, stop := range operators {
			stop()
		}
		Expect(fleet.Stop()).To(Succeed())
	})
	for _, name := range []string{"pf", "direct", "faults"} {
		c, err := client.NewWithWatch(fleet.Cluster(name).Config, client.Options{Scheme: e2eutil.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		clients[name] = c
		startOperator(name)
	}
}, NodeTimeout(3*time.Minute))

func access(name string) operator.Access {
	if name == "direct" {
		return operator.Direct
	}
	return operator.PortForward
}

func startOperator(name string) {
	operators[name] = e2eutil.StartOperator(context.Background(), fleet.Cluster(name).Config, operator.Options{Access: access(name)})
}

func stopOperator(name string) {
	if stop := operators[name]; stop != nil {
		stop()
		delete(operators, name)
	}
}

func namespace(ctx context.Context, cluster, ns string) {
	_, err := fleet.Cluster(cluster).Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
}
