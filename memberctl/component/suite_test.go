package component_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// One real kube-apiserver (envtest) serves the specs of all four component
// packages (pdb, pod, pvc, service): a control plane costs seconds of CPU
// to start, so the specs share it and each works in a fresh namespace.

var (
	env *Env
	k8s client.Client
)

func TestSyncers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "memberctl/component (envtest)")
}

var _ = BeforeSuite(func() {
	var err error
	env, err = Start()
	Expect(err).NotTo(HaveOccurred())
	k8s = env.Client
})

var _ = AfterSuite(func() {
	Expect(env.Stop()).To(Succeed())
})
