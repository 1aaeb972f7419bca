package pvc_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/component/internal/componenttest"
)

// One real kube-apiserver (envtest) for the whole suite; see componenttest.

var (
	env *componenttest.Env
	k8s client.Client
)

func TestSync(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "memberctl/component/pvc (envtest)")
}

var _ = BeforeSuite(func() {
	var err error
	env, err = componenttest.Start()
	Expect(err).NotTo(HaveOccurred())
	k8s = env.Client
})

var _ = AfterSuite(func() {
	Expect(env.Stop()).To(Succeed())
})
