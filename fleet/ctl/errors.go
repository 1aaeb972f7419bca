package ctl

import (
	"errors"
	"fmt"
	"net"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// explain turns an API error into a message a user can act on, naming
// which cluster it came from.
func explain(where string, err error) error {
	if err == nil {
		return nil
	}
	var ue *url.Error
	var ne net.Error
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s: permission denied: %v (the credentials used need to manage CRDs, ClusterRoles and ServiceAccounts on the workload cluster and Secrets on the management cluster)", where, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%s: not authenticated: %v (check the kubeconfig or context)", where, err)
	case errors.As(err, &ue), errors.As(err, &ne):
		return fmt.Errorf("%s is unreachable: %v", where, err)
	}
	return fmt.Errorf("%s: %w", where, err)
}

func clientsetFor(cfg *rest.Config) (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(cfg)
}

// RESTConfig loads a kubeconfig (path "" means $KUBECONFIG or
// ~/.kube/config) at a context ("" means its current context).
func RESTConfig(path, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %q context %q: %w", path, context, err)
	}
	return cfg, nil
}
