package ctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/config"
	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
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
	// TokenDuration is the minted token's lifetime.
	TokenDuration time.Duration
	// Server overrides the workload apiserver URL written to the Secret, for
	// when the manager reaches it at another address than the caller does.
	Server string
	Out    io.Writer
}

// Register installs the workload side and writes the registration Secret.
func Register(ctx context.Context, o RegisterOptions) error {
	if o.Name == "" {
		return errors.New("a cluster name is required")
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
	id, err := refuseDuplicate(ctx, wl, mg, o.Namespace, o.Name)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "applying etcdfleet CRDs and RBAC to the workload cluster\n")
	if err := config.Apply(ctx, wl, fieldManager, config.WorkloadManifests()); err != nil {
		return explain("workload cluster", err)
	}
	token, err := mintToken(ctx, o)
	if err != nil {
		return explain("workload cluster", err)
	}
	kc, err := kubeconfig(o.Name, server, o.Workload.CAData, token)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "writing Secret %s/%s on the management cluster\n", o.Namespace, o.Name)
	if err := writeSecret(ctx, mg, o.Namespace, o.Name, kc); err != nil {
		return explain("management cluster", err)
	}
	return explain("management cluster", recordClusterID(ctx, mg, o.Namespace, o.Name, id))
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

func mintToken(ctx context.Context, o RegisterOptions) (string, error) {
	cs, err := clientsetFor(o.Workload)
	if err != nil {
		return "", err
	}
	secs := int64(o.TokenDuration.Seconds())
	tr, err := cs.CoreV1().ServiceAccounts(WorkloadNamespace).CreateToken(ctx, WorkloadSA, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("mint a token for %s/%s: %w", WorkloadNamespace, WorkloadSA, err)
	}
	return tr.Status.Token, nil
}

// kubeconfig holds only the server, its CA and the ServiceAccount token.
func kubeconfig(name, server string, ca []byte, token string) ([]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	kc.AuthInfos[WorkloadSA] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: WorkloadSA}
	kc.CurrentContext = name
	return clientcmd.Write(*kc)
}

func writeSecret(ctx context.Context, c client.Client, ns, name string, kc []byte) error {
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
	s.Data = map[string][]byte{fleetv1.KubeconfigKey: kc}
	if apierrors.IsNotFound(err) {
		return c.Create(ctx, s)
	}
	return c.Update(ctx, s)
}
