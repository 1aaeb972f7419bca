package rotation_test

import (
	"bytes"
	"context"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/ctl"
	"github.com/etcdfleet/etcdfleet/fleet/rotation"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// One real kube-apiserver plays both sides: the management cluster holding
// the registration Secret and FleetCluster, and the workload cluster that
// register installs etcdfleet's ServiceAccount in. The rotator's clock is
// moved instead of waiting for the hour-long tokens to age.
var fleet *sandbox.Fleet

func TestRotation(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "token rotation Suite")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	_, file, _, _ := runtime.Caller(0)
	var err error
	fleet, err = sandbox.Start(ctx, sandbox.Options{Clusters: []string{"mgmt"}, Nodes: 1,
		CRDDirs: []string{filepath.Join(filepath.Dir(file), "..", "..", "config", "crd", "management")}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(fleet.Stop()).To(Succeed()) })
}, NodeTimeout(3*time.Minute))

const (
	ns   = "etcdfleet-system"
	name = "self"
)

func scheme() *apiruntime.Scheme {
	s := apiruntime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = fleetv1.AddToScheme(s)
	return s
}

func mgmtClient(cfg *rest.Config) client.Client {
	c, err := client.New(cfg, client.Options{Scheme: scheme()})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return c
}

func register(ctx context.Context, allow bool) {
	var out bytes.Buffer
	mg := fleet.Cluster("mgmt")
	ExpectWithOffset(1, ctl.Register(ctx, ctl.RegisterOptions{Name: name, Workload: mg.Config, Management: mg.Config,
		Namespace: ns, TokenDuration: time.Hour, ClusterWide: true, AllowTokenRotation: allow, Out: &out})).To(Succeed())
	fc := &fleetv1.FleetCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	ExpectWithOffset(1, client.IgnoreAlreadyExists(mgmtClient(mg.Config).Create(ctx, fc))).To(Succeed())
}

func secret(ctx context.Context) *corev1.Secret {
	s, err := fleet.Cluster("mgmt").Clientset.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return s
}

func tokenOf(s *corev1.Secret) string {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data[fleetv1.KubeconfigKey])
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return cfg.BearerToken
}

// asToken is the apiserver's config with token as the only credential.
func asToken(token string) *rest.Config {
	cfg := rest.AnonymousClientConfig(fleet.Cluster("mgmt").Config)
	cfg.BearerToken = token
	return cfg
}

func mayMintOwnToken(ctx context.Context, token string) bool {
	cs := kubernetes.NewForConfigOrDie(asToken(token))
	r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: ns, Name: ctl.WorkloadSA}}}, metav1.CreateOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return r.Status.Allowed
}

// reconcileAt runs one reconcile of the registration with the clock at now.
func reconcileAt(ctx context.Context, c client.Client, now time.Time) (ctrl.Result, error) {
	r := rotation.New(c, rotation.Options{Namespace: ns, Now: func() time.Time { return now }, Recorder: record.NewFakeRecorder(10)})
	return r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
}

func condition(ctx context.Context) *metav1.Condition {
	var fc fleetv1.FleetCluster
	ExpectWithOffset(1, mgmtClient(fleet.Cluster("mgmt").Config).Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &fc)).To(Succeed())
	return apimeta.FindStatusCondition(fc.Status.Conditions, rotation.ConditionTokenRotation)
}

func lifetime(token string) rotation.Token {
	t, err := rotation.ParseToken(token)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return t
}

var _ = Describe("token rotation", Ordered, func() {
	It("does nothing, and the rights are absent, when not opted in", func(ctx SpecContext) {
		register(ctx, false)
		s := secret(ctx)
		Expect(s.Annotations).NotTo(HaveKey(rotation.EnabledAnnotation))
		tok := tokenOf(s)
		Expect(mayMintOwnToken(ctx, tok)).To(BeFalse(), "no token right without the opt-in")
		_, err := fleet.Cluster("mgmt").Clientset.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, "etcdfleet-workload-tokens", metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue())
		_, err = reconcileAt(ctx, mgmtClient(fleet.Cluster("mgmt").Config), lifetime(tok).ExpiresAt.Add(-time.Minute))
		Expect(err).NotTo(HaveOccurred())
		Expect(tokenOf(secret(ctx))).To(Equal(tok), "not rotated")
		Expect(condition(ctx)).To(BeNil())
	}, SpecTimeout(2*time.Minute))

	It("shows WorkloadForbidden when the registration asks for rotation but the workload cluster does not grant it", func(ctx SpecContext) {
		s := secret(ctx)
		s.Annotations[rotation.EnabledAnnotation] = "true" // by hand, without register's grant
		_, err := fleet.Cluster("mgmt").Clientset.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		tok := tokenOf(s)
		_, err = reconcileAt(ctx, mgmtClient(fleet.Cluster("mgmt").Config), lifetime(tok).ExpiresAt.Add(-time.Minute))
		Expect(err).To(HaveOccurred(), "retried")
		c := condition(ctx)
		Expect(c).NotTo(BeNil())
		Expect(c.Status).To(Equal(metav1.ConditionFalse))
		Expect(c.Reason).To(Equal(rotation.ReasonWorkloadForbidden))
		Expect(c.Message).To(ContainSubstring("--allow-token-rotation"))
		Expect(tokenOf(secret(ctx))).To(Equal(tok))
	}, SpecTimeout(2*time.Minute))

	It("shows ManagementForbidden when the manager may not update registration Secrets", func(ctx SpecContext) {
		register(ctx, true)
		tok := tokenOf(secret(ctx))
		Expect(mayMintOwnToken(ctx, tok)).To(BeTrue())
		_, err := reconcileAt(ctx, managerWithoutSecretUpdate(ctx), lifetime(tok).ExpiresAt.Add(-time.Minute))
		Expect(err).To(HaveOccurred())
		c := condition(ctx)
		Expect(c.Status).To(Equal(metav1.ConditionFalse))
		Expect(c.Reason).To(Equal(rotation.ReasonManagementForbidden))
		Expect(c.Message).To(ContainSubstring("tokenRotation.enabled"))
		Expect(tokenOf(secret(ctx))).To(Equal(tok))
	}, SpecTimeout(2*time.Minute))

	It("leaves a due rotation to the replica that owns the cluster, and looks again later", func(ctx SpecContext) {
		mg := mgmtClient(fleet.Cluster("mgmt").Config)
		tok := tokenOf(secret(ctx))
		due := lifetime(tok).IssuedAt.Add(45 * time.Minute)
		asked := []string{}
		r := rotation.New(mg, rotation.Options{Namespace: ns, Now: func() time.Time { return due }, Recorder: record.NewFakeRecorder(10),
			Owns: func(n string) bool { asked = append(asked, n); return false }, OwnerRecheck: 7 * time.Second})
		res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
		Expect(err).NotTo(HaveOccurred())
		Expect(asked).To(Equal([]string{name}))
		Expect(res.RequeueAfter).To(Equal(7*time.Second), "looks again in case the cluster moves here")
		Expect(tokenOf(secret(ctx))).To(Equal(tok), "not rotated by a replica that does not own the cluster")
	}, SpecTimeout(2*time.Minute))

	var rotated string
	It("waits while the token is young, and rotates it before it expires when opted in", func(ctx SpecContext) {
		mg := mgmtClient(fleet.Cluster("mgmt").Config)
		old := tokenOf(secret(ctx))
		lt := lifetime(old)
		res, err := reconcileAt(ctx, mg, lt.IssuedAt.Add(time.Minute))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.RequeueAfter).To(BeNumerically("~", 39*time.Minute, time.Minute), "due with a third of the hour left")
		Expect(condition(ctx).Reason).To(Equal(rotation.ReasonScheduled))
		Expect(tokenOf(secret(ctx))).To(Equal(old))

		_, err = reconcileAt(ctx, mg, lt.IssuedAt.Add(45*time.Minute))
		Expect(err).NotTo(HaveOccurred())
		s := secret(ctx)
		rotated = tokenOf(s)
		Expect(rotated).NotTo(Equal(old))
		nt := lifetime(rotated)
		Expect(nt.SecretName).To(Equal(lt.SecretName), "bound to the same registration Secret")
		Expect(nt.SecretUID).To(Equal(lt.SecretUID))
		Expect(nt.ExpiresAt.Sub(nt.IssuedAt)).To(BeNumerically("~", time.Hour, time.Minute), "the same lifetime")
		Expect(s.Annotations[fleetv1.TokenExpiresAtAnnotation]).To(Equal(nt.ExpiresAt.UTC().Format(time.RFC3339)))
		Expect(mayMintOwnToken(ctx, rotated)).To(BeTrue(), "the new token works")
		c := condition(ctx)
		Expect(c.Status).To(Equal(metav1.ConditionTrue))
		Expect(c.Reason).To(Equal(rotation.ReasonRotated))
	}, SpecTimeout(2*time.Minute))

	It("admits only bound, short tokens of itself from the opted-in credential", func(ctx SpecContext) {
		cs := kubernetes.NewForConfigOrDie(asToken(rotated))
		lt := lifetime(rotated)
		bound := &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Secret", Name: lt.SecretName, UID: lt.SecretUID}
		try := func(sa string, spec authenticationv1.TokenRequestSpec) error {
			_, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
			return err
		}
		Expect(try(ctl.WorkloadSA, authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600), BoundObjectRef: bound})).To(Succeed())
		Expect(try(ctl.WorkloadSA, authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600),
			BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Secret", Name: "not-a-registration"}})).
			To(MatchError(ContainSubstring("bound to a registration Secret")), "bound to a Secret unregister does not delete")
		Expect(try(ctl.WorkloadSA, authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)})).
			To(MatchError(ContainSubstring("bound to a registration Secret")), "an unbound token would outlive unregister")
		Expect(try(ctl.WorkloadSA, authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](365 * 24 * 3600), BoundObjectRef: bound})).
			To(MatchError(ContainSubstring("at most")))
		_, err := fleet.Cluster("mgmt").Clientset.CoreV1().ServiceAccounts(ns).Create(ctx,
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{})
		Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
		Expect(apierrors.IsForbidden(try("other", authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}))).
			To(BeTrue(), "no token of another ServiceAccount")
	}, SpecTimeout(2*time.Minute))

	It("rotates from a running manager, once, and records an Event", func(ctx SpecContext) {
		mg := fleet.Cluster("mgmt")
		before := tokenOf(secret(ctx))
		// The clock runs 45 minutes ahead until the first rotation is
		// recorded (within its reconcile, before the Secret's update is
		// reconciled), then true: the new token is young, and must not be
		// rotated again.
		var ahead atomic.Bool
		ahead.Store(true)
		now := func() time.Time {
			if ahead.Load() {
				return time.Now().Add(45 * time.Minute)
			}
			return time.Now()
		}
		mgr, err := ctrl.NewManager(mg.Config, ctrl.Options{Scheme: scheme(), Metrics: metricsserver.Options{BindAddress: "0"},
			Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Secret{}: {
				Namespaces: map[string]cache.Config{ns: {}}, Label: labels.SelectorFromSet(labels.Set{fleetv1.RegistrationLabel: "true"})}}}})
		Expect(err).NotTo(HaveOccurred())
		rec := flipOnRotated{EventRecorder: mgr.GetEventRecorderFor("etcdfleet-token-rotation"), ahead: &ahead}
		Expect(rotation.New(mgr.GetClient(), rotation.Options{Namespace: ns, Now: now, SkipNameValidation: true,
			Recorder: rec}).SetupWithManager(mgr)).To(Succeed())
		mctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() { _ = mgr.Start(mctx) }()
		Eventually(func() string { return tokenOf(secret(ctx)) }).WithTimeout(30 * time.Second).ShouldNot(Equal(before))
		Eventually(ahead.Load).WithTimeout(10*time.Second).Should(BeFalse(), "the rotation was recorded")
		after := tokenOf(secret(ctx))
		Consistently(func() string { return tokenOf(secret(ctx)) }).WithTimeout(3*time.Second).Should(Equal(after), "no second rotation")
		Eventually(func() bool {
			evs, err := mg.Clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=TokenRotated"})
			return err == nil && len(evs.Items) > 0
		}).WithTimeout(10 * time.Second).Should(BeTrue())
		rotated = after
	}, SpecTimeout(2*time.Minute))

	It("revokes the rotated token on unregister", func(ctx SpecContext) {
		var out bytes.Buffer
		mg := fleet.Cluster("mgmt")
		Expect(ctl.Unregister(ctx, ctl.UnregisterOptions{Name: name, Management: mg.Config, Namespace: ns,
			Workload: mg.Config, Out: &out})).To(Succeed())
		cs := kubernetes.NewForConfigOrDie(asToken(rotated))
		Eventually(func() bool {
			_, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods"}}},
				metav1.CreateOptions{})
			return apierrors.IsUnauthorized(err)
		}).WithTimeout(30 * time.Second).Should(BeTrue())
	}, SpecTimeout(2*time.Minute))
})

// managerWithoutSecretUpdate is a management client with the etcdfleet
// chart's rights without tokenRotation.enabled: Secrets read-only, the
// FleetCluster status writable.
func managerWithoutSecretUpdate(ctx context.Context) client.Client {
	mg := fleet.Cluster("mgmt")
	_, err := mg.Clientset.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "manager"}}, metav1.CreateOptions{})
	ExpectWithOffset(1, client.IgnoreAlreadyExists(err)).To(Succeed())
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "manager", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{fleetv1.GroupVersion.Group}, Resources: []string{"fleetclusters"}, Verbs: []string{"get"}},
		{APIGroups: []string{fleetv1.GroupVersion.Group}, Resources: []string{"fleetclusters/status"}, Verbs: []string{"update"}},
	}}
	_, err = mg.Clientset.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{})
	ExpectWithOffset(1, client.IgnoreAlreadyExists(err)).To(Succeed())
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "manager", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "manager"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "manager", Namespace: ns}}}
	_, err = mg.Clientset.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{})
	ExpectWithOffset(1, client.IgnoreAlreadyExists(err)).To(Succeed())
	kc, err := mg.ServiceAccountKubeconfig(ctx, ns, "manager", time.Hour)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return mgmtClient(cfg)
}

// flipOnRotated turns the test clock true when a rotation is recorded.
type flipOnRotated struct {
	record.EventRecorder
	ahead *atomic.Bool
}

func (f flipOnRotated) Event(obj apiruntime.Object, eventType, reason, message string) {
	if reason == "TokenRotated" {
		f.ahead.Store(false)
	}
	f.EventRecorder.Event(obj, eventType, reason, message)
}
