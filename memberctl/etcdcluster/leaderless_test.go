package etcdcluster

import (
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/fakeetcd"
)

// After a power cycle every cluster of a fleet is leaderless at once, and
// a reconcile waiting the whole list timeout on each holds a worker that
// a revived cluster's reconcile needs (leaderlessListTimeout).
var _ = Describe("a cluster whose members' readiness shows no quorum", func() {
	It("gives etcd's MemberList a short deadline, and the usual one once a quorum is Ready again", func() {
		h := newHarness()
		ec := h.newCluster(3)
		h.converge(ec, 3)
		ms := h.members()
		listsSince := func(n int) []time.Duration {
			GinkgoHelper()
			b := h.etcd.ListBudgets()
			Expect(len(b)).To(BeNumerically(">", n), "the reconcile asked etcd for its member list")
			return b[n:]
		}

		By("two of three members not Ready, etcd without a leader")
		h.etcd.SetNoQuorum(errors.New("context deadline exceeded"))
		h.setReady(&ms[0], false)
		h.setReady(&ms[1], false)
		n := len(h.etcd.ListBudgets())
		h.reconcile(ec)
		Expect(listsSince(n)).To(HaveEach(And(BeNumerically(">", 0), BeNumerically("<=", leaderlessListTimeout))))
		Expect(conditionReason(h.get(ec), v1alpha1.ConditionAvailable)).To(Equal(v1alpha1.ReasonQuorumLost))

		By("a second member Ready again: a quorum, asked without the short deadline")
		h.etcd.SetNoQuorum(nil)
		h.setReady(&ms[1], true)
		n = len(h.etcd.ListBudgets())
		h.reconcile(ec)
		Expect(listsSince(n)).To(HaveEach(Equal(fakeetcd.NoDeadline)), "the reconcile's own context has no deadline here; Ops adds the list timeout")
		Expect(conditionReason(h.get(ec), v1alpha1.ConditionAvailable)).To(Equal(v1alpha1.ReasonQuorumAvailable))
	})
})
