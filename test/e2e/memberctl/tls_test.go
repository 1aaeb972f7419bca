package memberctl_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pod"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/e2e/lincheck"
	"github.com/etcdfleet/etcdfleet/test/sandbox/kubelet"
)

// A TLS EtcdCluster end to end: client TLS with client certificates and
// peer TLS, on certificates the test issues from its own CA. One cluster,
// reused by each spec in turn.
var _ = Describe("a TLS EtcdCluster", Ordered, func() {
	const cluster, ns, name = "pf", "tls", "secure"
	secrets := e2eutil.TLSSecretsOf(name)
	var ca *e2eutil.CA

	It("bootstraps with client mTLS and peer TLS and serves clients over TLS", func(ctx SpecContext) {
		c := clients[cluster]
		sb.Namespace(ctx, cluster, ns)
		ca = e2eutil.NewCA("etcd-ca-1")
		secrets.WriteTLS(ctx, c, ns, name, ca, ca.PEM)
		ec := e2eutil.NewEtcdCluster(ns, name, 3, false)
		ec.Spec.TLS = secrets.Spec()
		Expect(c.Create(ctx, ec)).To(Succeed())
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)

		cli := e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, name)
		defer cli.Close()
		cli.PutKeys(ctx, "k", 100)
		cli.ExpectKeys(ctx, "k", 100)
		By("every member advertises https to its peers and clients")
		list, err := cli.MemberList(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(list.Members).To(HaveLen(3))
		for _, m := range list.Members {
			Expect(m.PeerURLs).To(HaveEach(HavePrefix("https://")), "member %s", m.Name)
			Expect(m.ClientURLs).To(HaveEach(HavePrefix("https://")), "member %s", m.Name)
		}
	}, SpecTimeout(3*time.Minute))

	It("replaces a member whose Pod went terminal, under a client workload over TLS", func(ctx SpecContext) {
		c := clients[cluster]
		ids := e2eutil.MemberIDs(ctx, c, ns, name)
		victim := e2eutil.FirstMember(ctx, c, ns, name)
		uid := e2eutil.Pod(ctx, c, ns, victim).UID
		load := lincheck.StartIn(ctx, sb, cluster, ns, name)
		Expect(fleet.Cluster(cluster).Kubelet.TerminatePod(ns, victim, kubelet.RebootOptions{})).To(Succeed())
		Expect(e2eutil.Pod(ctx, c, ns, victim).Status.Phase).To(Equal(corev1.PodFailed))
		e2eutil.WaitPodsReplaced(ctx, c, ns, map[string]types.UID{victim: uid}, 2*time.Minute)
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
		load.StopAndCheck()
		Expect(e2eutil.MemberIDs(ctx, c, ns, name)).To(Equal(ids), "a PVC member keeps its ID")
		m := e2eutil.Members(ctx, c, ns, name)[victim]
		Expect(m.Status.Replacement).NotTo(BeNil())
		Expect(m.Status.Replacement.LastReason).To(Equal("Terminated"))
		cli := e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, name)
		defer cli.Close()
		cli.ExpectKeys(ctx, "k", 100)
		Expect(strings.Join(e2eutil.Pod(ctx, c, ns, victim).Spec.Containers[0].Command, " ")).To(
			ContainSubstring("--peer-client-cert-auth=true"), "the new Pod runs with peer TLS")
	}, SpecTimeout(3*time.Minute))

	It("rolls the members one at a time when the certificates are renewed, under the workload: quorum Ready throughout, every write kept", func(ctx SpecContext) {
		c := clients[cluster]
		w := startWatching(ctx, cluster, ns, name)
		By("renewing every key pair from the same CA, as cert-manager does")
		secrets.WriteTLS(ctx, c, ns, name, ca, ca.PEM)
		w.waitRolled(ctx)
		w.check(ctx, 1)
	}, SpecTimeout(3*time.Minute))

	It("rotates the CA through an overlap bundle, under the workload: quorum Ready throughout, every write kept", func(ctx SpecContext) {
		c := clients[cluster]
		next := e2eutil.NewCA("etcd-ca-2")
		w := startWatching(ctx, cluster, ns, name)
		By("1: trusting the old and the new CA")
		for _, s := range []string{secrets.Server, secrets.Peer, secrets.Operator} {
			e2eutil.SetTrust(ctx, c, ns, s, e2eutil.Bundle(ca, next))
		}
		w.waitRolled(ctx)
		By("2: key pairs issued by the new CA, both still trusted")
		secrets.WriteTLS(ctx, c, ns, name, next, e2eutil.Bundle(ca, next))
		w.waitRolled(ctx)
		By("3: the old CA dropped")
		for _, s := range []string{secrets.Server, secrets.Peer, secrets.Operator} {
			e2eutil.SetTrust(ctx, c, ns, s, next.PEM)
		}
		w.waitRolled(ctx)
		w.check(ctx, 3)

		By("a client of the new CA is served, one of the old CA refused")
		cfg := fleet.Cluster(cluster).Config
		Expect(e2eutil.DialAs(ctx, cfg, c, ns, name, secrets.Operator)).To(Succeed())
		e2eutil.WriteTLSSecret(ctx, c, ns, "old-ca-client", ca.Issue("old-ca-client", nil, nil), next.PEM)
		Expect(e2eutil.DialAs(ctx, cfg, c, ns, name, "old-ca-client")).To(MatchError(ContainSubstring("tls")),
			"etcd no longer trusts the old CA")
		ca = next
	}, SpecTimeout(5*time.Minute))

	It("is snapshotted over mTLS and restored into a new TLS cluster", func(ctx SpecContext) {
		backupAndRestoreTLS(ctx, cluster, ns, name, ca)
	}, SpecTimeout(3*time.Minute))
})

// rollWatch records a TLS roll from the apiserver's side: the Pods'
// readiness and deletions, the workload's history, and the members'
// secrets hashes before it.
type rollWatch struct {
	cluster, ns, name string
	ids, hashes       map[string]string
	ready             map[string]bool
	log               *e2eutil.PodLog
	load              *lincheck.Running
}

func startWatching(ctx context.Context, cluster, ns, name string) *rollWatch {
	GinkgoHelper()
	c := clients[cluster]
	w := &rollWatch{cluster: cluster, ns: ns, name: name, ids: e2eutil.MemberIDs(ctx, c, ns, name),
		hashes: secretsHashes(ctx, cluster, ns, name)}
	var err error
	w.log, err = e2eutil.WatchPods(ctx, fleet.Cluster(cluster).Clientset, ns)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(w.log.Stop)
	w.ready = w.log.ReadyAtStart()
	w.load = lincheck.StartIn(ctx, sb, cluster, ns, name)
	return w
}

// secretsHashes is each member's spec.tls.secretsHash.
func secretsHashes(ctx context.Context, cluster, ns, name string) map[string]string {
	GinkgoHelper()
	out := map[string]string{}
	for n, m := range e2eutil.Members(ctx, clients[cluster], ns, name) {
		Expect(m.Spec.TLS).NotTo(BeNil())
		out[n] = m.Spec.TLS.SecretsHash
	}
	return out
}

// waitRolled waits until every member was rolled onto new Secrets' contents
// (one new hash for all, each member's Pod running it) and the cluster is
// Reconciled and Available again, having said TemplateDrifted=True on the
// way.
func (w *rollWatch) waitRolled(ctx context.Context) {
	GinkgoHelper()
	c := clients[w.cluster]
	drifted := false
	Eventually(func(g Gomega) {
		ms := e2eutil.Members(ctx, c, w.ns, w.name)
		var now string
		for n, m := range ms {
			h := m.Spec.TLS.SecretsHash
			g.Expect(h).NotTo(Equal(w.hashes[n]), "member %s not rolled yet", n)
			g.Expect(now == "" || now == h).To(BeTrue(), "members on different Secrets")
			now = h
			g.Expect(m.Status.TemplateHash).To(Equal(pod.TemplateHash(&m.Spec)), "member %s does not run its template yet", n)
		}
		ec := &v1alpha1.EtcdCluster{}
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: w.ns, Name: w.name}, ec)).To(Succeed())
		d := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionTemplateDrifted)
		g.Expect(d).NotTo(BeNil())
		drifted = drifted || d.Status == metav1.ConditionTrue
		g.Expect(d.Status).To(Equal(metav1.ConditionFalse), "template: %s", d.Message)
		p := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionProgressing)
		g.Expect(p).NotTo(BeNil())
		g.Expect(p.Reason).To(Equal(v1alpha1.ReasonReconciled), "progressing: %s", p.Message)
		g.Expect(e2eutil.Available(ec)).To(BeTrue())
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
	Expect(drifted).To(BeTrue(), "status said members ran on old Secrets")
	w.hashes = secretsHashes(ctx, w.cluster, w.ns, w.name)
}

// check ends the watch: the workload's history is linearizable, every key
// is there, each member kept its ID and had its Pod recreated in each
// roll, and a quorum of member Pods was Ready at every instant.
func (w *rollWatch) check(ctx context.Context, rolls int) {
	GinkgoHelper()
	c := clients[w.cluster]
	w.load.StopAndCheck()
	cli := e2eutil.ConnectEtcd(ctx, fleet.Cluster(w.cluster).Config, c, w.ns, w.name)
	defer cli.Close()
	cli.ExpectKeys(ctx, "k", 100)
	Expect(e2eutil.MemberIDs(ctx, c, w.ns, w.name)).To(Equal(w.ids), "a PVC member keeps its ID")
	// Once per roll, or twice: the test writes the Secrets one by one, as
	// cert-manager renews each Certificate on its own, and a member rolled
	// between two writes is rolled again onto the second.
	deleted := w.log.Count(watch.Deleted)
	Expect(deleted).To(HaveLen(len(w.ids)), "every Pod was recreated, under its member's name")
	for n := range w.ids {
		Expect(deleted[n]).To(BeNumerically(">=", rolls), "Pod %s recreated in each roll", n)
		Expect(deleted[n]).To(BeNumerically("<=", 2*rolls), "Pod %s recreated at most twice per roll", n)
	}
	expectQuorumReady(w.ready, w.log.Events(), 2)
}
