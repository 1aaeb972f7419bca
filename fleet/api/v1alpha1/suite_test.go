package v1alpha1_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/etcdfleet/etcdfleet/test/envtestenv"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
)

// The suite runs every check against a real kube-apiserver and etcd
// (envtest) with the generated CRDs from config/crd/management.

var (
	testEnv   *envtestenv.Env
	k8sClient client.Client
	clientset kubernetes.Interface
	ns        string
)

func TestAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "fleet/api/v1alpha1 (envtest)")
}

var _ = BeforeSuite(func() {
	env, err := envtestenv.Start(envtestenv.ManagementCRDs, fleetv1alpha1.AddToScheme)
	Expect(err).NotTo(HaveOccurred())
	testEnv, k8sClient, clientset = env, env.Client, env.Clientset
	Expect(env.Environment.CRDs).To(HaveLen(2))

	ns = "fleet-test"
	Expect(k8sClient.Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
})

var _ = AfterSuite(func() {
	Expect(testEnv.Stop()).To(Succeed())
})

// expectInvalid asserts that the apiserver rejected a request as Invalid
// with a message containing msg.
func expectInvalid(err error, msg string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred(), "expected the apiserver to reject with %q", msg)
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected an Invalid error, got: %v", err)
	Expect(err.Error()).To(ContainSubstring(msg))
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
