// Package envtestenv starts one real kube-apiserver and etcd (envtest) with
// one of this repository's CRD directories installed, for the suites that
// test against an apiserver without the sandbox's nodes and kubelets.
//
// # Usage
//
// One Env per suite, because a control plane costs seconds of CPU:
//
//	var env *envtestenv.Env
//	var _ = BeforeSuite(func() {
//		var err error
//		env, err = envtestenv.Start(envtestenv.WorkloadCRDs, v1alpha1.AddToScheme)
//		Expect(err).NotTo(HaveOccurred())
//	})
//	var _ = AfterSuite(func() { Expect(env.Stop()).To(Succeed()) })
//
// The binaries come from KUBEBUILDER_ASSETS, which `make test` sets from
// test/tools/assets.sh.
package envtestenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// CRD directories, relative to the module root.
const (
	WorkloadCRDs   = "config/crd/workload"
	ManagementCRDs = "config/crd/management"
)

// startTimeout replaces envtest's default 20 s: several control planes
// starting at once on 2 cores need more.
const startTimeout = 90 * time.Second

// Env is a running control plane with the CRDs installed.
type Env struct {
	Environment *envtest.Environment
	Config      *rest.Config
	Scheme      *runtime.Scheme
	// Client talks to the apiserver directly (no cache), so every read
	// sees the previous write.
	Client    client.WithWatch
	Clientset kubernetes.Interface

	nsSeq atomic.Int64
}

// Start starts the control plane with crdDir (relative to the module root)
// installed, and builds clients whose Scheme has the built-in kinds plus
// addToScheme.
// crdInstallWait bounds the wait for the CRDs to be served (see
// sandbox.CRDInstallWait, which this package does not import).
const crdInstallWait = 2 * time.Minute

func Start(crdDir string, addToScheme ...func(*runtime.Scheme) error) (*Env, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is unset, so there is no kube-apiserver to test against: " +
			"run `make test`, or export KUBEBUILDER_ASSETS=\"$(test/tools/assets.sh)\" " +
			"KUBEBUILDER_CONTROLPLANE_START_TIMEOUT=90s before `go test`")
	}
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	useExisting := false
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, crdDir)},
		ErrorIfCRDPathMissing: true,
		UseExistingCluster:    &useExisting,
		// envtest's 10 s suits an idle machine; make test runs this beside
		// suites that start a dozen apiservers on two cores.
		CRDInstallOptions: envtest.CRDInstallOptions{MaxTime: crdInstallWait},
	}
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") == "" {
		env.ControlPlaneStartTimeout = startTimeout
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start envtest: %w", err)
	}
	e := &Env{Environment: env, Config: cfg, Scheme: runtime.NewScheme()}
	if err := e.clients(addToScheme); err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	return e, nil
}

func (e *Env) clients(addToScheme []func(*runtime.Scheme) error) error {
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme}, addToScheme...) {
		if err := add(e.Scheme); err != nil {
			return err
		}
	}
	var err error
	if e.Client, err = client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme}); err != nil {
		return err
	}
	e.Clientset, err = kubernetes.NewForConfig(e.Config)
	return err
}

// Stop stops the control plane; a nil Env (Start failed) is fine.
func (e *Env) Stop() error {
	if e == nil {
		return nil
	}
	return e.Environment.Stop()
}

// NewNamespace creates the namespace <prefix>-<n>, n counting up from 1
// per Env, so that the specs of a suite sharing one control plane never
// share objects; it returns the name. A failed create fails the running
// spec (gomega, reported at the caller's line), so it is for Ginkgo suites.
func (e *Env) NewNamespace(ctx context.Context, prefix string) string {
	name := fmt.Sprintf("%s-%d", prefix, e.nsSeq.Add(1))
	gomega.ExpectWithOffset(1, e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(gomega.Succeed())
	return name
}

// ModuleRoot walks up from the working directory (the package directory
// under go test) to go.mod, so that paths do not depend on how deep the
// test package sits or on -trimpath.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}
