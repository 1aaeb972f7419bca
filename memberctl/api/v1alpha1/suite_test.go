package v1alpha1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/etcdfleet/etcdfleet/test/envtestenv"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// The suite runs every check against a real kube-apiserver and etcd
// (envtest) with the generated CRDs from config/crd/workload.

var (
	testEnv   *envtestenv.Env
	cfg       *rest.Config
	k8sClient client.Client
	clientset kubernetes.Interface
	ns        string
	nameSeq   atomic.Int64
)

func TestAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "memberctl/api/v1alpha1 (envtest)")
}

var _ = BeforeSuite(func() {
	env, err := envtestenv.Start(envtestenv.WorkloadCRDs, v1alpha1.AddToScheme)
	Expect(err).NotTo(HaveOccurred())
	testEnv, cfg, k8sClient, clientset = env, env.Config, env.Client, env.Clientset
	Expect(env.Environment.CRDs).To(HaveLen(4))

	ns = "api-test"
	Expect(k8sClient.Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
})

var _ = AfterSuite(func() {
	Expect(testEnv.Stop()).To(Succeed())
})

// uniqueName returns a fresh object name so specs never collide.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, nameSeq.Add(1))
}

// expectInvalid asserts that the apiserver rejected a request as Invalid
// with a message containing msg.
func expectInvalid(err error, msg string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred(), "expected the apiserver to reject with %q", msg)
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected an Invalid error, got: %v", err)
	Expect(err.Error()).To(ContainSubstring(msg))
}

// newCluster returns a valid EtcdCluster that sets every field a Go client
// must set (storage.size: see the Go-zero-value spec in the schema tests).
func newCluster(mutate ...func(*v1alpha1.EtcdCluster)) *v1alpha1.EtcdCluster {
	ec := &v1alpha1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: uniqueName("ec"), Namespace: ns},
		Spec: v1alpha1.EtcdClusterSpec{
			Version: "3.6.16",
			Storage: v1alpha1.StorageSpec{Size: resource.MustParse("1Gi")},
		},
	}
	for _, m := range mutate {
		m(ec)
	}
	return ec
}

// updateCluster re-reads the cluster, applies mutate and updates it.
func updateCluster(ec *v1alpha1.EtcdCluster, mutate func(*v1alpha1.EtcdCluster)) error {
	GinkgoHelper()
	ctx := context.Background()
	cur := &v1alpha1.EtcdCluster{}
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ec), cur)).To(Succeed())
	mutate(cur)
	return k8sClient.Update(ctx, cur)
}

// createUnstructured creates an object from a JSON-like map, so that
// fields a typed Go client would always send can be left out.
func createUnstructured(obj map[string]any) error {
	return k8sClient.Create(context.Background(), &unstructured.Unstructured{Object: obj})
}

// tableRow GETs one object as a server-side Table (what kubectl prints)
// and returns its cells by column name.
func tableRow(path string) map[string]any {
	GinkgoHelper()
	raw, err := clientset.Discovery().RESTClient().Get().AbsPath(path).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		DoRaw(context.Background())
	Expect(err).NotTo(HaveOccurred())
	var table metav1.Table
	Expect(json.Unmarshal(raw, &table)).To(Succeed())
	Expect(table.Rows).To(HaveLen(1))
	out := map[string]any{}
	for i, col := range table.ColumnDefinitions {
		out[col.Name] = table.Rows[0].Cells[i]
	}
	return out
}
