package etcdmember

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// The version a member runs is read from etcd again for each new Pod: a
// member recreated on another etcd version must not keep reporting the
// old one.
var _ = Describe("the running version", func() {
	It("is read again from the new Pod's etcd after the Pod is replaced", func() {
		h := newHarness("", 3)
		Expect(h.member("ec-0").Status.Version).To(Equal("3.6.16"))
		h.etcd.SetVersion("ec-0", "3.7.3")
		h.setPod("ec-0", failed("Terminated"))
		h.reconcile("ec-0") // deletes the terminal Pod and creates the new one
		Expect(h.podReplaced("ec-0")).To(BeTrue())
		h.setPod("ec-0", running(true, 0))
		h.reconcile("ec-0")
		m := h.member("ec-0")
		Expect(m.Status.Version).To(Equal("3.7.3"))
		Expect(meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.ConditionVersionDrifted)).To(BeTrue())
	})

	// The read of a new Pod's version comes with its Ready write: the
	// connection it takes is dialled while etcd starts, not then.
	It("has the new Pod's connection dialled while the Pod runs and is not Ready yet", func() {
		h := newHarness("", 3)
		url := etcd.MemberClientURL(h.member("ec-0"))
		h.setPod("ec-0", running(false, 0))
		h.reconcile("ec-0")
		Expect(h.etcd.Warmed(url)).To(BeZero(), "a Pod whose version is known is not dialled when it stops being Ready")
		h.setPod("ec-0", failed("Terminated"))
		h.reconcile("ec-0")
		Expect(h.podReplaced("ec-0")).To(BeTrue())
		warmed, asked := h.etcd.Warmed(url), h.etcd.StatusAsked("ec-0")
		h.setPod("ec-0", running(false, 0))
		h.reconcile("ec-0")
		Expect(h.etcd.Warmed(url)).To(Equal(warmed+1), "dialled once the Pod runs")
		Expect(h.etcd.StatusAsked("ec-0")).To(Equal(asked), "nothing asked before Ready")
	})
})
