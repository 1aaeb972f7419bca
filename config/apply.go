package config

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Apply applies each manifest in order as fieldOwner, taking ownership
// of the fields it sets so a newer version updates them.
func Apply(ctx context.Context, c client.Client, fieldOwner string, manifests [][]byte) error {
	for _, m := range manifests {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(m, &u.Object); err != nil {
			return err
		}
		if len(u.Object) == 0 {
			continue
		}
		u.SetManagedFields(nil)
		if err := c.Patch(ctx, u, client.Apply, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("apply %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}
