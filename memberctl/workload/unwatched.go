package workload

import (
	"context"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// unwatchedPage bounds one list: EtcdClusters are few, and a workload
// apiserver that answers with more is cut off by the provider's response
// budget anyway.
const unwatchedPage = 500

// UnwatchedNamespaces returns the namespaces outside watched that hold
// EtcdClusters: with a namespaced registration nothing reconciles them.
// It lists the EtcdClusters' metadata cluster-wide, which the identity
// ClusterRole grants (config/rbac/workload/identity.yaml) in both modes:
// a read of etcdfleet's own kind, which holds no secret. A credential
// without that grant gets Forbidden, which the caller takes as "unknown".
func UnwatchedNamespaces(ctx context.Context, cfg *rest.Config, watched []string) ([]string, error) {
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	res := v1alpha1.GroupVersion.WithResource("etcdclusters")
	var out []string
	opts := metav1.ListOptions{Limit: unwatchedPage}
	for {
		list, err := mc.Resource(res).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, o := range list.Items {
			if !slices.Contains(watched, o.Namespace) && !slices.Contains(out, o.Namespace) {
				out = append(out, o.Namespace)
			}
		}
		if list.Continue == "" {
			slices.Sort(out)
			return out, nil
		}
		opts.Continue = list.Continue
	}
}
