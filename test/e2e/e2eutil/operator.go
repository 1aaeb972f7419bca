package e2eutil

import (
	"context"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/etcdfleet/etcdfleet/memberctl/operator"
)

// Scheme knows the built-in kinds and etcd.etcdfleet.io.
func Scheme() *runtime.Scheme {
	return operator.Scheme()
}

// StartOperator runs the operator against cfg's cluster alone, with
// production's wiring and opts (OperatorOptions for production's), until
// the returned stop func is called (stop waits for it to exit).
func StartOperator(ctx context.Context, cfg *rest.Config, access operator.Access, opts operator.Options) (stop func()) {
	stop, err := RunOperator(ctx, cfg, access, opts)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return stop
}
