package ctl

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// grantTokenRotation applies the opt-in token rotation rights and their
// admission policy (workload.TokenRotationObjects) when allow, and
// removes them otherwise, so that register run without the flag withdraws
// an earlier opt-in: the rights exist only while asked for.
func grantTokenRotation(ctx context.Context, wl client.Client, cfg *rest.Config, allow bool, out io.Writer) error {
	objs := workload.TokenRotationObjects(WorkloadNamespace, WorkloadSA)
	if !allow {
		return removeTokenRotation(ctx, wl)
	}
	fmt.Fprintf(out, "granting ServiceAccount %s/%s tokens of itself only, bound to a registration Secret (--allow-token-rotation)\n",
		WorkloadNamespace, WorkloadSA)
	// The policy before the rule: the right never exists unconstrained.
	slices.Reverse(objs)
	for _, o := range objs {
		if err := wl.Patch(ctx, o, client.Apply, client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("grant token rotation (%s %s): %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
	}
	return awaitTokensPolicy(ctx, cfg)
}

// awaitTokensPolicy waits until the apiserver enforces the tokens policy.
// An apiserver loads a new admission policy a moment after it is stored,
// and a token minted in that moment could be unbound, which no unregister
// would revoke (the specs of fleet/rotation saw it admitted a second after
// the apply). As the ServiceAccount, it asks for a token bound to a Secret
// that is not a registration's, and that does not exist: the policy
// refuses it by name; before the policy is loaded the apiserver answers
// NotFound, and no token is ever minted.
func awaitTokensPolicy(ctx context.Context, cfg *rest.Config) error {
	imp := rest.CopyConfig(cfg)
	imp.Impersonate = rest.ImpersonationConfig{UserName: serviceaccount.MakeUsername(WorkloadNamespace, WorkloadSA)}
	cs, err := kubernetes.NewForConfig(imp)
	if err != nil {
		return err
	}
	secs := int64(600)
	probe := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs,
		BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Secret", Name: "etcdfleet-policy-probe"}}}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, last = cs.CoreV1().ServiceAccounts(WorkloadNamespace).CreateToken(ctx, WorkloadSA, probe, metav1.CreateOptions{})
		return last != nil && strings.Contains(last.Error(), workload.TokensPolicy), nil
	})
	if err != nil {
		return fmt.Errorf("the token rotation right is granted, but the apiserver does not enforce admission policy %s "+
			"(impersonating %s to check it; last answer: %v): remove the grant with register without --allow-token-rotation",
			workload.TokensPolicy, WorkloadSA, last)
	}
	return nil
}

// removeTokenRotation deletes the token rotation rights, then their
// policy.
func removeTokenRotation(ctx context.Context, wl client.Client) error {
	for _, o := range workload.TokenRotationObjects(WorkloadNamespace, WorkloadSA) {
		if err := client.IgnoreNotFound(wl.Delete(ctx, o)); err != nil {
			return fmt.Errorf("remove token rotation (%s %s): %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
	}
	return nil
}
