package fleet_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/ctl"
	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
)

// suiteLog holds everything the managers logged during the suite: the
// in-process manager's logr output and the manager binaries' output.
var suiteLog lockedBuffer

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// registered holds every kubeconfig ever put into a registration Secret
// (putSecret): the credentials that must never show.
var registered [][]byte

// proxyPassword is the proxy credential of the proxied kubeconfig below.
const proxyPassword = "pr0xy-passw0rd-never-shown"

func credentialSpecs() {
	It("never shows a credential in any Event, status, log line or metric label, through a rotation, a heal and bad Secrets", func(ctx SpecContext) {
		baseline(ctx)
		const rotated, bad = "w3", "w4"

		By("bad Secrets: insecure-skip-tls-verify, a proxy-url with a password, YAML that does not parse")
		for _, c := range []struct {
			kc           []byte
			reason, says string
		}{
			{editKubeconfig(goodKubeconfig[bad], func(cl *clientcmdapi.Cluster) { cl.InsecureSkipTLSVerify, cl.CertificateAuthorityData = true, nil }),
				kubeconfigsecret.ReasonInsecureKubeconfig, "insecure-skip-tls-verify"},
			{editKubeconfig(goodKubeconfig[bad], func(cl *clientcmdapi.Cluster) { cl.ProxyURL = "http://fleet:" + proxyPassword + "@127.0.0.1:1" }),
				kubeconfigsecret.ReasonInsecureKubeconfig, "proxy-url"},
			{corruptYAML(goodKubeconfig[bad]), kubeconfigsecret.ReasonInvalidKubeconfig, "does not parse"},
		} {
			putSecret(ctx, bad, kubeconfigData(c.kc))
			// Each Secret in turn: its own message, not the previous one's.
			Eventually(func(g Gomega) string {
				fc, err := row(ctx, bad)
				g.Expect(err).NotTo(HaveOccurred())
				cond := apimeta.FindStatusCondition(fc.Status.Conditions, fleetv1.ConditionConnected)
				g.Expect(cond).NotTo(BeNil())
				g.Expect(cond.Reason).To(Equal(c.reason))
				return cond.Message
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(ContainSubstring(c.says))
		}
		putSecret(ctx, bad, kubeconfigData(goodKubeconfig[bad]))

		By("a rotation: a new ServiceAccount token replaces " + rotated + "'s credential")
		kc := registerToken(ctx, rotated, "fleet-rotated")

		By("a heal on the new token")
		before := podUIDs(ctx, rotated)
		healed := waitHealed(ctx, reboot(ctx, rotated), before, 2*time.Minute, rotated)
		AddReportEntry("heal time on a rotated token", durations(healed))
		waitConnected(ctx, time.Minute, workloads...)

		By("grepping every Event (management and workload clusters), every FleetCluster status, the managers' log and the metric labels")
		texts := map[string]string{"the managers' log": suiteLog.String(), "metric labels": metricLabels()}
		texts["management Events"] = eventTexts(ctx, mgmtC)
		for _, w := range workloads {
			texts[w+" Events"] = eventTexts(ctx, wc[w])
		}
		var rows fleetv1.FleetClusterList
		Expect(mgmtC.List(ctx, &rows)).To(Succeed())
		for _, r := range rows.Items {
			texts["FleetCluster "+r.Name] = statusText(r.Status)
		}
		needles := credentialNeedles(append(registered, kc))
		Expect(texts["the managers' log"]).NotTo(BeEmpty(), "the log is captured")
		for where, text := range texts {
			Expect(leaksIn(text, needles)).To(BeEmpty(), "%s shows a credential", where)
			Expect(text).NotTo(ContainSubstring(proxyPassword), "%s shows the proxy password", where)
		}
	}, SpecTimeout(6*time.Minute))
}

// registerToken registers w with a fresh token of the ServiceAccount that
// etcdfleetctl register installs, bound to the Secret boundTo in its
// namespace (deleting that Secret revokes this token alone), as its good
// kubeconfig; waits for the manager to engage w anew, and returns that
// kubeconfig. The same identity, not a second one: the admission policies
// constrain this one, and the manager refuses any other (Unconstrained).
func registerToken(ctx SpecContext, w, boundTo string) []byte {
	GinkgoHelper()
	kc := registeredToken(ctx, w, boundTo)
	engaged := engageCount()
	putSecret(ctx, w, kubeconfigData(kc))
	goodKubeconfig[w] = kc
	Eventually(engageCount).WithContext(ctx).WithTimeout(time.Minute).Should(BeNumerically(">", engaged))
	return kc
}

// registeredToken is a kubeconfig of register's ServiceAccount in w with a
// token bound to the Secret boundTo of its namespace.
func registeredToken(ctx context.Context, w, boundTo string) []byte {
	GinkgoHelper()
	kc, err := sb.Cluster(w).BoundServiceAccountKubeconfig(ctx, ctl.WorkloadNamespace, ctl.WorkloadSA, boundTo, time.Hour)
	Expect(err).NotTo(HaveOccurred())
	return kc
}

// revokeToken deletes the Secret that w's token boundTo is bound to.
func revokeToken(ctx context.Context, w, boundTo string) {
	GinkgoHelper()
	Expect(sb.Cluster(w).Clientset.CoreV1().Secrets(ctl.WorkloadNamespace).Delete(ctx, boundTo, metav1.DeleteOptions{})).To(Succeed())
}

// editKubeconfig returns kc with fn applied to its cluster entries.
func editKubeconfig(kc []byte, fn func(*clientcmdapi.Cluster)) []byte {
	GinkgoHelper()
	cfg, err := clientcmd.Load(kc)
	Expect(err).NotTo(HaveOccurred())
	for _, cl := range cfg.Clusters {
		fn(cl)
	}
	out, err := clientcmd.Write(*cfg)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// eventTexts joins every core and events.k8s.io Event's texts of a cluster.
func eventTexts(ctx SpecContext, c client.Client) string {
	GinkgoHelper()
	var b strings.Builder
	var core corev1.EventList
	Expect(c.List(ctx, &core)).To(Succeed())
	for _, e := range core.Items {
		b.WriteString(e.Reason + " " + e.Message + " " + e.Source.Component + "\n")
	}
	var ev eventsv1.EventList
	Expect(c.List(ctx, &ev)).To(Succeed())
	for _, e := range ev.Items {
		b.WriteString(e.Reason + " " + e.Note + " " + e.Action + "\n")
	}
	return b.String()
}

func statusText(st fleetv1.FleetClusterStatus) string {
	out := st.Message + "\n"
	for _, c := range st.Conditions {
		out += c.Reason + " " + c.Message + "\n"
	}
	return out
}

// metricLabels joins every label value the in-process registry serves.
func metricLabels() string {
	GinkgoHelper()
	families, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	var b strings.Builder
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				b.WriteString(l.GetName() + "=" + l.GetValue() + "\n")
			}
		}
	}
	return b.String()
}

// needleLen is the length of the credential pieces searched for: long
// enough never to occur by chance, short enough to catch a truncated or
// wrapped credential.
const needleLen = 24

// credentialNeedles cuts every token, client key and client certificate
// of the kubeconfigs, as written and base64-encoded (how []byte values are
// logged; at every alignment; once more for the *-data fields, which the
// kubeconfig file holds encoded), into pieces of needleLen every needleLen/2 characters: any
// piece of 35 characters or more of a credential contains one.
func credentialNeedles(kcs [][]byte) map[string]bool {
	GinkgoHelper()
	needles := map[string]bool{}
	for _, kc := range kcs {
		cfg, err := clientcmd.Load(kc)
		if err != nil {
			continue // the corrupt YAML: its credentials are a good kubeconfig's
		}
		for _, ai := range cfg.AuthInfos {
			for _, s := range []string{ai.Token, string(ai.ClientKeyData), string(ai.ClientCertificateData)} {
				if s == "" {
					continue
				}
				// As written, base64-encoded, and base64-encoded as the
				// kubeconfig file's *-data fields are, then again.
				forms := append([]string{s}, base64Forms(s)...)
				forms = append(forms, base64Forms(base64.StdEncoding.EncodeToString([]byte(s)))...)
				for _, form := range forms {
					for _, line := range strings.Split(form, "\n") {
						if strings.HasPrefix(line, "-----") {
							continue
						}
						for i := 0; i+needleLen <= len(line); i += needleLen / 2 {
							needles[line[i:i+needleLen]] = true
						}
					}
				}
			}
		}
	}
	Expect(needles).NotTo(BeEmpty())
	return needles
}

// base64Forms are s base64-encoded at each of the three byte alignments
// it may have inside a larger encoded value (a whole kubeconfig logged as
// []byte), without the characters the alignment prefix affects.
func base64Forms(s string) []string {
	var out []string
	for shift := range 3 {
		enc := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", shift) + s))
		if shift > 0 {
			enc = enc[4:]
		}
		out = append(out, enc)
	}
	return out
}

// leaksIn returns the needles found in text (and "PRIVATE KEY"), sliding
// once over it: a search per needle would take minutes on the suite's log.
func leaksIn(text string, needles map[string]bool) []string {
	var out []string
	if strings.Contains(text, "PRIVATE KEY") {
		out = append(out, "PRIVATE KEY")
	}
	for i := 0; i+needleLen <= len(text); i++ {
		if needles[text[i:i+needleLen]] {
			out = append(out, text[i:i+needleLen])
			i += needleLen - 1 // report each leak once, not per overlapping piece
		}
	}
	return out
}
