package manager

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// applyCRDs server-side applies CRD manifests as the manager's own field
// manager, so a newer manager updates them and nothing else fights it.
func applyCRDs(ctx context.Context, c client.Client, manifests [][]byte) error {
	for _, m := range manifests {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(m, &u.Object); err != nil {
			return err
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := c.Patch(ctx, u, client.Apply, client.FieldOwner("etcdfleet-manager"), client.ForceOwnership); err != nil {
			return fmt.Errorf("install CRD %s: %w", u.GetName(), err)
		}
	}
	return nil
}
