package ctl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/fleet/rotation"
)

// DefaultTokenDuration is register's token lifetime: short enough that a
// stolen kubeconfig dies on its own within a month, long enough that a
// monthly (or weekly, from cron) `etcdfleetctl register NAME` rotates it
// well before the manager warns at 20 % of the lifetime left (six days).
const DefaultTokenDuration = 30 * 24 * time.Hour

// RegistrationOfLabel, on a Secret in WorkloadNamespace of the workload
// cluster, names the registration whose token is bound to that Secret.
// Deleting the Secret revokes the token: the apiserver rejects a bound
// token whose object is gone.
const RegistrationOfLabel = "fleet.etcdfleet.io/registration"

// token is a minted credential and the Secret it is bound to.
type token struct {
	value     string
	expiresAt time.Time
	boundTo   *corev1.Secret
}

// mintBoundToken creates a new registration Secret for name in the
// workload cluster and a token of the manager's ServiceAccount bound to it.
// On error nothing is left behind.
func mintBoundToken(ctx context.Context, wl client.Client, cfg *rest.Config, name string, d time.Duration) (*token, error) {
	holder := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Namespace: WorkloadNamespace, GenerateName: "etcdfleet-registration-",
		Labels: map[string]string{RegistrationOfLabel: name, "app.kubernetes.io/part-of": "etcdfleet"},
		Annotations: map[string]string{"fleet.etcdfleet.io/purpose": "the registered token of " + name +
			" is bound to this Secret: delete it to revoke the token"},
	}}
	if err := wl.Create(ctx, holder); err != nil {
		return nil, fmt.Errorf("create the Secret the token is bound to: %w", err)
	}
	cs, err := clientsetFor(cfg)
	if err != nil {
		return nil, errors.Join(err, client.IgnoreNotFound(wl.Delete(ctx, holder)))
	}
	secs := int64(d.Seconds())
	tr, err := cs.CoreV1().ServiceAccounts(WorkloadNamespace).CreateToken(ctx, WorkloadSA, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs, BoundObjectRef: &authenticationv1.BoundObjectReference{
			APIVersion: "v1", Kind: "Secret", Name: holder.Name, UID: holder.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		err = fmt.Errorf("mint a token for %s/%s: %w", WorkloadNamespace, WorkloadSA, err)
		return nil, errors.Join(err, client.IgnoreNotFound(wl.Delete(ctx, holder)))
	}
	return &token{value: tr.Status.Token, expiresAt: rotation.ExpiryOf(tr), boundTo: holder}, nil
}

// revokeTokens deletes the registration Secrets of name on the workload
// cluster except keep (nil: all), which revokes the tokens bound to them.
// It returns the names deleted.
func revokeTokens(ctx context.Context, wl client.Client, name string, keep *corev1.Secret) ([]string, error) {
	var list corev1.SecretList
	if err := wl.List(ctx, &list, client.InNamespace(WorkloadNamespace), client.MatchingLabels{RegistrationOfLabel: name}); err != nil {
		return nil, err
	}
	var deleted []string
	for i := range list.Items {
		s := &list.Items[i]
		if keep != nil && s.UID == keep.UID {
			continue
		}
		if err := client.IgnoreNotFound(wl.Delete(ctx, s, client.Preconditions{UID: &s.UID})); err != nil {
			return deleted, err
		}
		deleted = append(deleted, s.Name)
	}
	return deleted, nil
}

// caData returns the CA the manager must trust for the workload apiserver:
// inline data, or the file a kubeconfig names (certificate-authority:).
// Without one the manager would trust only the system roots, which a
// cluster's own CA almost never is, so the cluster would never engage.
func caData(cfg *rest.Config) ([]byte, error) {
	if cfg.Insecure {
		return nil, errors.New("the workload kubeconfig skips TLS verification (insecure-skip-tls-verify); " +
			"register needs the apiserver's CA to hand to the manager")
	}
	if len(cfg.CAData) > 0 {
		return cfg.CAData, nil
	}
	if cfg.CAFile != "" {
		b, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read the workload kubeconfig's certificate-authority: %w", err)
		}
		if len(b) == 0 {
			return nil, fmt.Errorf("the workload kubeconfig's certificate-authority %s is empty", cfg.CAFile)
		}
		return b, nil
	}
	return nil, errors.New("the workload kubeconfig names no CA (certificate-authority or certificate-authority-data); " +
		"the manager could not verify the apiserver")
}
