package fleet_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/sharder"
	"sigs.k8s.io/multicluster-runtime/pkg/util/sanitize"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
	"github.com/etcdfleet/etcdfleet/test/managerproc"
)

// hrwOwner is the replica among ms that multicluster-runtime's HRW sharder
// gives the cluster name to, as the coordinator of each of them computes
// it over the same live peers.
func hrwOwner(ms []*managerProcess, name string) string {
	peers := make([]sharder.PeerInfo, 0, len(ms))
	for _, m := range ms {
		peers = append(peers, sharder.PeerInfo{ID: sanitize.DNS1123(m.Name), Weight: 1})
	}
	h := sharder.NewHRW()
	for _, p := range peers {
		if h.ShouldOwn(name, peers, p) {
			return p.ID
		}
	}
	return ""
}

// nameOwnedBy returns the first of prefix-1, prefix-2, ... that HRW gives
// to a replica accepted by ok.
func nameOwnedBy(ms []*managerProcess, prefix string, ok func(owner string) bool) string {
	GinkgoHelper()
	for i := 1; i < 100; i++ {
		n := fmt.Sprintf("%s-%d", prefix, i)
		if ok(hrwOwner(ms, n)) {
			return n
		}
	}
	Fail("no name for " + prefix + " lands where asked")
	return ""
}

// duplicateOnAnotherReplica registers w's kubeconfig again under a name
// that another replica than w's owner runs, expects it refused with the
// DuplicateCluster condition and Event naming w's Secret while w stays
// engaged by the same process, then removes it. The name is added to
// reaches[w].
func duplicateOnAnotherReplica(ctx context.Context, ms []*managerProcess, w string, reaches map[string][]string) {
	GinkgoHelper()
	owner := engagedBy(ms, w)
	Expect(owner).NotTo(BeEmpty(), "cluster %s is engaged", w)
	dup := nameOwnedBy(ms, w+"-again", func(o string) bool { return o != owner })
	reaches[w] = append(reaches[w], dup)
	By(fmt.Sprintf("registering %s's kubeconfig again as %s, which %s runs (%s runs %s)", w, dup, hrwOwner(ms, dup), owner, w))
	spans := len(engagementsOf(ms, w))
	putSecret(ctx, dup, kubeconfigData(goodKubeconfig[w]))
	DeferCleanup(func(ctx context.Context) { deleteSecret(ctx, dup) })
	c := expectRow(ctx, dup, fleetv1.ConditionReady, metav1.ConditionFalse, fleetv1.ReasonDuplicateCluster)
	Expect(c.Message).To(ContainSubstring("Secret " + secretNS + "/" + w))
	expectRow(ctx, dup, fleetv1.ConditionConnected, metav1.ConditionFalse, kubeconfigsecret.ReasonDuplicateCluster)
	expectEvent(ctx, dup, corev1.EventTypeWarning, kubeconfigsecret.EventDuplicateCluster)
	Expect(engagedBy(ms, dup)).To(BeEmpty(), "the duplicate was never engaged")
	Expect(engagementsOf(ms, dup)).To(BeEmpty(), "the duplicate was never engaged")
	Expect(engagedBy(ms, w)).To(Equal(owner), "the first registration stays where it was")
	Expect(engagementsOf(ms, w)).To(HaveLen(spans), "the first registration was not interrupted")
	deleteSecret(ctx, dup)
}

// racingDuplicates deregisters w, then registers its kubeconfig under two
// new names at once, which two different replicas run, so that neither
// replica has seen the other's claim recorded when it connects. Exactly
// one must engage, the other be refused with DuplicateCluster, and never
// both be engaged at once; the one that stays is the one every replica
// ranks first (the older Secret, else the first by name). Then w is
// registered again as before. The two names are added to reaches[w].
func racingDuplicates(ctx context.Context, ms []*managerProcess, w string, reaches map[string][]string) {
	GinkgoHelper()
	By("deregistering " + w + " and waiting until it is disengaged and its claim released")
	deleteSecret(ctx, w)
	Eventually(func() string { return engagedBy(ms, w) }).WithContext(ctx).WithTimeout(time.Minute).Should(BeEmpty())
	Eventually(func(g Gomega) { g.Expect(claimHolders(ctx, g)).NotTo(ContainElement(w)) }).
		WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "the replica that ran %s released its claim", w)
	a := nameOwnedBy(ms, w+"-a", func(o string) bool { return o != "" })
	b := nameOwnedBy(ms, w+"-b", func(o string) bool { return o != "" && o != hrwOwner(ms, a) })
	reaches[w] = append(reaches[w], a, b)
	DeferCleanup(func(ctx context.Context) {
		deleteSecret(ctx, a)
		deleteSecret(ctx, b)
		putSecret(ctx, w, kubeconfigData(goodKubeconfig[w]))
	})
	By(fmt.Sprintf("registering %s (run by %s) and %s (run by %s) at once, both with %s's kubeconfig", a, hrwOwner(ms, a), b, hrwOwner(ms, b), w))
	putSecret(ctx, a, kubeconfigData(goodKubeconfig[w]))
	putSecret(ctx, b, kubeconfigData(goodKubeconfig[w]))

	winner, loser := rankedFirst(ctx, a, b)
	settled := func(g Gomega) {
		fc, err := row(ctx, winner)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(apiCondition(fc, fleetv1.ConditionConnected)).To(HaveField("Status", metav1.ConditionTrue), "%s is connected", winner)
		fc, err = row(ctx, loser)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(apiCondition(fc, fleetv1.ConditionConnected)).To(HaveField("Reason", kubeconfigsecret.ReasonDuplicateCluster), "%s is refused", loser)
		g.Expect(engagedBy(ms, winner)).NotTo(BeEmpty())
		g.Expect(engagedBy(ms, loser)).To(BeEmpty())
	}
	Eventually(settled).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	expectEvent(ctx, loser, corev1.EventTypeWarning, kubeconfigsecret.EventDuplicateCluster)
	// Two rights re-checks (the probe interval) later, nothing moved.
	time.Sleep(2 * managerConfig().Clusters.ProbeInterval)
	settled(Default)
	expectNeverBoth(ms, a, b)
	AddReportEntry("racing duplicates", fmt.Sprintf("%s engaged, %s refused (engagements of %s: %d, of %s: %d); never both",
		winner, loser, winner, len(engagementsOf(ms, winner)), loser, len(engagementsOf(ms, loser))))

	By("registering " + w + " again in their place")
	deleteSecret(ctx, a)
	deleteSecret(ctx, b)
	Eventually(func() []string { return append(engagementsNow(ms, a), engagementsNow(ms, b)...) }).
		WithContext(ctx).WithTimeout(time.Minute).Should(BeEmpty())
	putSecret(ctx, w, kubeconfigData(goodKubeconfig[w]))
	Eventually(func() string { return engagedBy(ms, w) }).WithContext(ctx).WithTimeout(2 * time.Minute).ShouldNot(BeEmpty())
}

// rankedFirst orders two registration Secrets as the provider ranks them
// (neither vouched for): the older first, else the first by name.
func rankedFirst(ctx context.Context, a, b string) (string, string) {
	GinkgoHelper()
	var sa, sbb corev1.Secret
	Expect(mgmtC.Get(ctx, client.ObjectKey{Namespace: secretNS, Name: a}, &sa)).To(Succeed())
	Expect(mgmtC.Get(ctx, client.ObjectKey{Namespace: secretNS, Name: b}, &sbb)).To(Succeed())
	if sbb.CreationTimestamp.Before(&sa.CreationTimestamp) || (sbb.CreationTimestamp.Equal(&sa.CreationTimestamp) && b < a) {
		return b, a
	}
	return a, b
}

// claimHolders lists the holders of the claim Leases (etcdfleet-claim-*).
func claimHolders(ctx context.Context, g Gomega) []string {
	var ls coordinationv1.LeaseList
	g.Expect(mgmtC.List(ctx, &ls, client.InNamespace(secretNS))).To(Succeed())
	var out []string
	for _, l := range ls.Items {
		if len(l.Name) > len("etcdfleet-claim-") && l.Name[:len("etcdfleet-claim-")] == "etcdfleet-claim-" && l.Spec.HolderIdentity != nil {
			out = append(out, *l.Spec.HolderIdentity)
		}
	}
	return out
}

func apiCondition(fc *fleetv1.FleetCluster, typ string) *metav1.Condition {
	for i := range fc.Status.Conditions {
		if fc.Status.Conditions[i].Type == typ {
			return &fc.Status.Conditions[i]
		}
	}
	return nil
}

// engagementsOf lists every engagement of cluster name by any of ms.
func engagementsOf(ms []*managerProcess, name string) []managerproc.Engagement {
	var out []managerproc.Engagement
	for _, m := range ms {
		for _, e := range m.Engagements() {
			if e.Cluster == name {
				out = append(out, e)
			}
		}
	}
	return out
}

// engagementsNow names the processes among ms with name engaged now.
func engagementsNow(ms []*managerProcess, name string) []string {
	var out []string
	for _, m := range ms {
		for _, c := range m.Current() {
			if c == name {
				out = append(out, m.Name)
			}
		}
	}
	return out
}

// expectNeverBoth checks, from every engagement the processes logged, that
// a and b were never engaged at the same time (by any processes).
func expectNeverBoth(ms []*managerProcess, a, b string) {
	GinkgoHelper()
	for _, x := range engagementsOf(ms, a) {
		for _, y := range engagementsOf(ms, b) {
			Expect(x.From.Before(y.To) && y.From.Before(x.To)).To(BeFalse(),
				"%s engaged by %s (%s–%s) while %s engaged by %s (%s–%s)", a, x.Process, x.From.Format(time.StampMilli),
				x.To.Format(time.StampMilli), b, y.Process, y.From.Format(time.StampMilli), y.To.Format(time.StampMilli))
		}
	}
}
