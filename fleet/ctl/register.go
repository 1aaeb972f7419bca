package ctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/config"
	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/rotation"
)

// Names on the workload cluster. The registration label and key are
// fleetv1.RegistrationLabel and fleetv1.KubeconfigKey, shared with the
// manager.
const (
	WorkloadNamespace = "etcdfleet-system"
	WorkloadSA        = "etcdfleet"
	fieldManager      = "etcdfleetctl"
)

// RegisterOptions configure Register.
type RegisterOptions struct {
	Name string
	// Workload and Management are the clusters, as the caller reaches them.
	Workload, Management *rest.Config
	// Namespace holds the registration Secrets on the management cluster.
	Namespace string
	// TokenDuration is the lifetime asked of the minted token (default
	// DefaultTokenDuration); the apiserver may grant less, and the granted
	// expiry is what the Secret records.
	TokenDuration time.Duration
	// WatchNamespaces (--namespaces) grant the manager its rights in these
	// namespaces only, by RoleBindings, and scope its caches for the cluster
	// to them. Exactly one of WatchNamespaces and ClusterWide is required:
	// register never picks the scope for the caller.
	WatchNamespaces []string
	// ClusterWide (--cluster-wide) binds the rights by a ClusterRoleBinding
	// instead, in every namespace; Register warns what that grants
	// (ClusterWideWarning).
	ClusterWide bool
	// AllowedImages replaces the image repositories the admission policy
	// lets etcdfleet's Pods run (default: config/rbac/workload's, etcd's
	// official images and etcdfleet's own). Name mirrors here.
	AllowedImages []string
	// AllowedS3Endpoints (--allowed-s3-endpoints) are S3 endpoint hosts
	// (names or IPs, exactly) and CIDRs the admission policies admit
	// although they refuse loopback, link-local, unspecified and metadata
	// addresses by default (AdmissionManifests).
	AllowedS3Endpoints []string
	// AllowTokenRotation (--allow-token-rotation) lets the manager rotate
	// the token itself before it expires: register grants the workload
	// side (workload.TokenRotationObjects: a token of its own
	// ServiceAccount, bound to a registration Secret) and marks the
	// registration Secret (rotation.EnabledAnnotation). Without it, both
	// are removed, so a register run withdraws an earlier opt-in. The
	// management side needs the etcdfleet chart's tokenRotation.enabled.
	AllowTokenRotation bool
	// RotateBefore, with AllowTokenRotation, rotates once less than this
	// is left (rotation.RotateBeforeAnnotation); zero: a third of the
	// token's lifetime.
	RotateBefore time.Duration
	// Server overrides the workload apiserver URL written to the Secret, for
	// when the manager reaches it at another address than the caller does.
	Server string
	Out    io.Writer
	// Warnings receives ClusterWideWarning (default Out); the CLI gives
	// stderr, where a cron job's mail or a terminal shows it apart.
	Warnings io.Writer
}

// The choice of scope. A stolen credential acts with the manager's rights
// wherever they are bound, and cluster-wide those include reading any
// Secret by name and port-forwarding into any Pod, since RBAC cannot name
// Secrets by who references them nor Pods by label. So register binds
// nothing cluster-wide unless told to, and tells what it means when it is.
var (
	// ErrNoScope: neither WatchNamespaces nor ClusterWide.
	ErrNoScope = errors.New("choose where the manager may act on the workload cluster: " +
		"--namespaces=a,b binds its role in those namespaces only (recommended), " +
		"or --cluster-wide binds it in every namespace, where the registered token can get any Secret by name and port-forward into any Pod")
	// ErrBothScopes: WatchNamespaces and ClusterWide.
	ErrBothScopes = errors.New("--namespaces and --cluster-wide exclude each other: " +
		"give --namespaces=a,b to bind the manager's role in those namespaces only, or --cluster-wide alone to bind it in every namespace")
)

// ClusterWideWarning is printed by a cluster-wide register, every time, so
// that a rotation from cron keeps saying what the token it stores can do.
const ClusterWideWarning = "WARNING: --cluster-wide binds ClusterRole " + WorkloadClusterRole + " to ServiceAccount " +
	WorkloadNamespace + "/" + WorkloadSA + " in every namespace of the workload cluster: the registered token, " +
	"and whoever steals it from the management cluster, can get any Secret of the cluster by name, " +
	"port-forward into any Pod, and create etcd Pods, claims and Services in any namespace (within the admission policies). " +
	"Use --namespaces=a,b to grant only the namespaces that run etcd."

// Validate checks what Register can check without a cluster: a name and
// exactly one scope, so that the CLI refuses before loading kubeconfigs.
func (o RegisterOptions) Validate() error {
	if o.Name == "" {
		return errors.New("a cluster name is required")
	}
	// Blanks only (--namespaces=) count as no namespaces: the empty list
	// would otherwise mean cluster-wide, which must be asked for by name.
	namespaced := len(normalizeNamespaces(o.WatchNamespaces)) > 0
	if o.RotateBefore != 0 && (!o.AllowTokenRotation || o.RotateBefore < 0) {
		return errors.New("--rotate-before needs --allow-token-rotation and a positive duration")
	}
	switch {
	case namespaced && o.ClusterWide:
		return ErrBothScopes
	case !namespaced && !o.ClusterWide:
		return ErrNoScope
	}
	return nil
}

// Register installs the workload side and writes the registration Secret.
func Register(ctx context.Context, o RegisterOptions) error {
	if err := o.Validate(); err != nil {
		return err
	}
	ca, err := caData(o.Workload)
	if err != nil {
		return err
	}
	wl, err := client.New(o.Workload, client.Options{})
	if err != nil {
		return fmt.Errorf("workload cluster: %w", err)
	}
	mg, err := client.New(o.Management, client.Options{})
	if err != nil {
		return fmt.Errorf("management cluster: %w", err)
	}
	server := o.Server
	if server == "" {
		server = o.Workload.Host
	}
	if err := checkCollision(ctx, mg, o.Namespace, o.Name, server); err != nil {
		return err
	}
	id, err := refuseDuplicate(ctx, o.Workload, mg, o.Namespace, o.Name)
	if err != nil {
		return err
	}
	namespaces := normalizeNamespaces(o.WatchNamespaces)
	manifests, err := AdmissionManifests(o.AllowedImages, o.AllowedS3Endpoints)
	if err != nil {
		return err
	}
	if o.ClusterWide {
		warn := o.Warnings
		if warn == nil {
			warn = o.Out
		}
		fmt.Fprintln(warn, ClusterWideWarning)
	}
	if err := installWorkload(ctx, wl, manifests, namespaces, o.Out); err != nil {
		return explain("workload cluster", err)
	}
	if err := grantTokenRotation(ctx, wl, o.Workload, o.AllowTokenRotation, o.Out); err != nil {
		return explain("workload cluster", err)
	}
	if err := rotate(ctx, wl, mg, o, kubeconfigFor(o.Name, server, ca), namespaces); err != nil {
		return err
	}
	return explain("management cluster", recordClusterID(ctx, mg, o.Namespace, o.Name, id))
}

// rotate mints a new bound token, stores it in the registration Secret, and
// only then revokes the earlier ones, so that the manager never holds a
// revoked token while a valid one exists.
func rotate(ctx context.Context, wl, mg client.Client, o RegisterOptions, kubeconfig func(token string) ([]byte, error), namespaces []string) error {
	if o.TokenDuration == 0 {
		o.TokenDuration = DefaultTokenDuration
	}
	tok, err := mintBoundToken(ctx, wl, o.Workload, o.Name, o.TokenDuration)
	if err != nil {
		return explain("workload cluster", err)
	}
	kc, err := kubeconfig(tok.value)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "writing Secret %s/%s on the management cluster (token expires %s)\n",
		o.Namespace, o.Name, tok.expiresAt.UTC().Format(time.RFC3339))
	if err := writeSecret(ctx, mg, o, kc, tok.expiresAt, namespaces); err != nil {
		// The new token is not stored anywhere: revoke it, keep the old.
		return errors.Join(explain("management cluster", err), client.IgnoreNotFound(wl.Delete(ctx, tok.boundTo)))
	}
	revoked, err := revokeTokens(ctx, wl, o.Name, tok.boundTo)
	if err != nil {
		return explain("workload cluster", fmt.Errorf("the new token is registered, but revoking the previous ones failed (re-run register): %w", err))
	}
	if len(revoked) > 0 {
		fmt.Fprintf(o.Out, "revoked the previous token: removed Secret %s/%s, which it was bound to, from the workload cluster\n",
			WorkloadNamespace, strings.Join(revoked, ", "))
	}
	return nil
}

// installWorkload applies manifests, the CRDs, RBAC and admission policy,
// with the RBAC bound in namespaces or, with none (Validate has made sure
// that was asked for), cluster-wide.
func installWorkload(ctx context.Context, wl client.Client, manifests [][]byte, namespaces []string, out io.Writer) error {
	where := "the whole cluster"
	if len(namespaces) > 0 {
		var err error
		if manifests, err = withoutClusterBinding(manifests); err != nil {
			return err
		}
		where = "namespaces " + strings.Join(namespaces, ", ")
	}
	fmt.Fprintf(out, "applying etcdfleet CRDs, RBAC (for %s) and admission policy to the workload cluster\n", where)
	if err := config.Apply(ctx, wl, fieldManager, manifests); err != nil {
		return err
	}
	return bindRBAC(ctx, wl, namespaces)
}

// checkCollision refuses to overwrite the registration of another cluster.
func checkCollision(ctx context.Context, mg client.Client, ns, name, server string) error {
	s := &corev1.Secret{}
	err := mg.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return explain("management cluster", err)
	}
	kc, err := clientcmd.Load(s.Data[fleetv1.KubeconfigKey])
	if err != nil || kc.Contexts[kc.CurrentContext] == nil {
		return nil // an unreadable registration may be replaced
	}
	if c := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster]; c != nil && c.Server != server {
		return fmt.Errorf("the name %q is already registered for server %s; choose another name or run `etcdfleetctl unregister %s` first",
			name, c.Server, name)
	}
	return nil
}

// kubeconfigFor returns the kubeconfig of a token: only the server, its CA
// and the ServiceAccount token.
func kubeconfigFor(name, server string, ca []byte) func(token string) ([]byte, error) {
	return func(token string) ([]byte, error) { return kubeconfig(name, server, ca, token) }
}

func kubeconfig(name, server string, ca []byte, token string) ([]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	kc.AuthInfos[WorkloadSA] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: WorkloadSA}
	kc.CurrentContext = name
	return clientcmd.Write(*kc)
}

// writeSecret writes the registration Secret: the kubeconfig, the token's
// expiry and, in namespaced mode, the namespaces.
func writeSecret(ctx context.Context, c client.Client, o RegisterOptions, kc []byte, expires time.Time, namespaces []string) error {
	ns, name := o.Namespace, o.Name
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if err := c.Create(ctx, nsObj); err != nil && !apierrors.IsAlreadyExists(err) && !apierrors.IsForbidden(err) {
		return err
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	err := c.Get(ctx, client.ObjectKeyFromObject(s), s)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.Labels[fleetv1.RegistrationLabel] = "true"
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[fleetv1.TokenExpiresAtAnnotation] = expires.UTC().Format(time.RFC3339)
	delete(s.Annotations, fleetv1.WatchNamespacesAnnotation)
	if len(namespaces) > 0 {
		s.Annotations[fleetv1.WatchNamespacesAnnotation] = strings.Join(namespaces, ",")
	}
	delete(s.Annotations, rotation.EnabledAnnotation)
	delete(s.Annotations, rotation.RotateBeforeAnnotation)
	if o.AllowTokenRotation {
		s.Annotations[rotation.EnabledAnnotation] = "true"
		if o.RotateBefore > 0 {
			s.Annotations[rotation.RotateBeforeAnnotation] = o.RotateBefore.String()
		}
	}
	s.Data = map[string][]byte{fleetv1.KubeconfigKey: kc}
	if apierrors.IsNotFound(err) {
		return c.Create(ctx, s)
	}
	return c.Update(ctx, s)
}
