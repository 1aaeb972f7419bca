package memberctl_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

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
})
