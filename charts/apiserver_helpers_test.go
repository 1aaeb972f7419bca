package charts_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/etcdfleet/etcdfleet/fleet/app"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// configRBAC reads config/rbac/workload as kustomization.yaml lists it.
func configRBAC(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	dir := filepath.Join(root, "config", "rbac", "workload")
	kust := struct {
		Resources []string `json:"resources"`
	}{}
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &kust); err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range kust.Resources {
		objs = append(objs, decodeFile(t, filepath.Join(dir, r))...)
	}
	return objs
}

func adminClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	s := app.Scheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustCreate(ctx context.Context, t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(ctx, obj); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
}

func createNamespace(ctx context.Context, t *testing.T, c client.Client, name string, labels map[string]string) {
	t.Helper()
	mustCreate(ctx, t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
}

// installCRDs creates the CRDs of dir, as helm does with crds/, and waits
// until they are Established.
func installCRDs(ctx context.Context, t *testing.T, c client.Client, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		for _, o := range decodeFile(t, filepath.Join(dir, e.Name())) {
			if o.GetKind() != "CustomResourceDefinition" {
				t.Fatalf("%s holds a %s", e.Name(), o.GetKind())
			}
			if err := c.Create(ctx, o); err != nil {
				t.Fatalf("create CRD %s: %v", o.GetName(), err)
			}
			names = append(names, o.GetName())
		}
	}
	for _, name := range names {
		eventually(ctx, t, 30*time.Second, "CRD "+name+" Established", func() error {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, types.NamespacedName{Name: name}, crd); err != nil {
				return err
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return nil
				}
			}
			return fmt.Errorf("conditions %+v", crd.Status.Conditions)
		})
	}
}

// apply server-side applies objs, as `helm install` would create them.
func apply(ctx context.Context, t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	// Namespaces first, then the rest in order.
	sorted := slices.Clone(objs)
	sort.SliceStable(sorted, func(i, j int) bool {
		return sorted[i].GetKind() == "Namespace" && sorted[j].GetKind() != "Namespace"
	})
	for _, o := range sorted {
		o = o.DeepCopy()
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("chart-test"), client.ForceOwnership); err != nil {
			t.Fatalf("apply %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
}

// podSecurity proves, with a server-side dry run in a namespace enforcing
// the restricted Pod Security Standard, that the Deployment's Pod would be
// admitted, and that the namespace does enforce it.
func podSecurity(ctx context.Context, t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	d, _ := managerContainer(t, objs)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: "pod-security-check", Labels: d.Spec.Template.Labels},
		Spec: *d.Spec.Template.Spec.DeepCopy()}
	if err := c.Create(ctx, pod.DeepCopy(), client.DryRunAll); err != nil {
		t.Errorf("the manager's Pod is not admitted under the restricted Pod Security Standard: %v", err)
	}
	priv := pod.DeepCopy()
	priv.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptrTo(true)
	if err := c.Create(ctx, priv, client.DryRunAll); !apierrors.IsForbidden(err) {
		t.Errorf("namespace %s does not enforce the restricted standard (a Pod allowing privilege escalation got %v)", d.Namespace, err)
	}
}

func ptrTo[T any](v T) *T { return &v }

// saClientset acts as namespace/name with a freshly minted token.
func saClientset(ctx context.Context, t *testing.T, c *sandbox.Cluster, namespace, name string) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(saConfig(ctx, t, c, namespace, name))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// saClient is a controller-runtime client acting as namespace/name.
func saClient(ctx context.Context, t *testing.T, c *sandbox.Cluster, namespace, name string) client.Client {
	t.Helper()
	cl, err := client.New(saConfig(ctx, t, c, namespace, name), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func saConfig(ctx context.Context, t *testing.T, c *sandbox.Cluster, namespace, name string) *rest.Config {
	t.Helper()
	kc, err := c.ServiceAccountKubeconfig(ctx, namespace, name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 500, 1000 // hundreds of access reviews
	return cfg
}

// expectAccess asks a SelfSubjectAccessReview for each permission in
// namespace ns ("" is cluster-wide) and fails unless each is allowed (or
// denied) as wanted.
func expectAccess(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, want bool, ps ...perm) {
	t.Helper()
	where := "cluster-wide"
	if ns != "" {
		where = "in namespace " + ns
	}
	type result struct {
		allowed bool
		reason  string
		err     error
	}
	results := make([]result, len(ps))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			res, sub, _ := strings.Cut(p.resource, "/")
			r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: ns, Verb: p.verb, Group: p.group, Resource: res, Subresource: sub, Name: p.name,
				}},
			}, metav1.CreateOptions{})
			if err != nil {
				results[i] = result{err: err}
				return
			}
			results[i] = result{allowed: r.Status.Allowed, reason: r.Status.Reason}
		}()
	}
	wg.Wait()
	for i, p := range ps {
		switch r := results[i]; {
		case r.err != nil:
			t.Errorf("access review %s %s: %v", p, where, r.err)
		case r.allowed != want && want:
			t.Errorf("the ServiceAccount may not %s %s, but needs to", p, where)
		case r.allowed != want:
			t.Errorf("the ServiceAccount may %s %s (%s), but must not", p, where, r.reason)
		}
	}
}

func ignore[T any](_ T, err error) error { return err }

func forbidden(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: want Forbidden, got %v", what, err)
	}
}

// eventually polls fn until it returns nil, or fails with its last error.
func eventually(ctx context.Context, t *testing.T, timeout time.Duration, what string, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// syncBuffer collects the manager's log.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
