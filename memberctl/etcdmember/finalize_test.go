package etcdmember

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

var _ = Describe("the member finalizer", func() {
	It("holds when every member is deleted at once but the EtcdCluster is not, so no data claim goes", func() {
		h := newHarness("", 3)
		names := []string{"ec-0", "ec-1", "ec-2"}
		for _, n := range names {
			Expect(k8sClient.Delete(context.Background(), h.member(n))).To(Succeed())
		}
		for _, n := range names {
			_, err := h.reconcileErr(n)
			Expect(err).To(MatchError(ContainSubstring("every member of EtcdCluster ec is being deleted")))
		}
		for _, n := range names {
			Expect(controllerutil.ContainsFinalizer(h.member(n), v1alpha1.FinalizerMemberCleanup)).To(BeTrue(),
				"member %s keeps its finalizer, and with it its claim", n)
		}
		Expect(h.events.with("RemovalBlocked")).NotTo(BeEmpty(), "a Warning Event says why")
	})

	It("lets the only member of its cluster go: there is nobody to tell", func() {
		h := newHarness("", 1)
		Expect(k8sClient.Delete(context.Background(), h.member("ec-0"))).To(Succeed())
		h.finalize("ec-0")
	})
})
