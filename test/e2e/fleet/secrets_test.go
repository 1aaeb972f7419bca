package fleet_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
)

func badSecretSpecs() {
	It("reports a bad YAML, a missing key and a wrong CA each with a clear condition and no credentials, leaves the rest alone, and engages each once fixed", func(ctx SpecContext) {
		baseline(ctx)
		cases := []struct {
			w      string
			data   map[string][]byte
			reason string
			says   string
		}{
			{"w2", kubeconfigData(corruptYAML(goodKubeconfig["w2"])), kubeconfigsecret.ReasonInvalidKubeconfig, "does not parse"},
			{"w3", map[string][]byte{"config": goodKubeconfig["w3"]}, kubeconfigsecret.ReasonInvalidSecret, `no data key "kubeconfig"`},
			{"w4", kubeconfigData(withCA(goodKubeconfig["w4"], foreignCA())), kubeconfigsecret.ReasonTLSError, "certificate"},
		}
		markAt := time.Now()
		for _, c := range cases {
			putSecret(ctx, c.w, c.data)
		}
		for _, c := range cases {
			cond := expectRow(ctx, c.w, fleetv1.ConditionConnected, metav1.ConditionFalse, c.reason)
			GinkgoWriter.Printf("FleetCluster %s: %s %q\n", c.w, cond.Reason, cond.Message)
			Expect(cond.Message).To(ContainSubstring(c.says))
			fc, err := row(ctx, c.w)
			Expect(err).NotTo(HaveOccurred())
			texts := []string{fc.Status.Message}
			for _, cd := range fc.Status.Conditions {
				texts = append(texts, cd.Message)
			}
			for _, t := range texts {
				Expect(leaks(t, goodKubeconfig[c.w])).To(BeEmpty(), "FleetCluster %s shows credentials", c.w)
			}
		}

		By("rebooting w1 meanwhile: it heals as usual and never drops")
		ids := memberIDs(ctx, "w1")
		before := podUIDs(ctx, "w1")
		logs := watchPods(ctx, "w1")
		load := startWorkloads(ctx, "w1")
		rebootAt := reboot(ctx, "w1")
		healed := waitHealed(ctx, rebootAt, before, 2*time.Minute, "w1")
		load.StopAndCheck()
		AddReportEntry("w1 heal time beside 3 bad Secrets", durations(healed))
		expectKeys(ctx, "w1")
		expectSameMembers(ctx, ids)
		Expect(logs["w1"].Count(watch.Deleted)).To(HaveLen(len(before["w1"])))
		for _, e := range states.since("w1", markAt) {
			Expect(e.Connected).To(BeTrue(), "w1 dropped at %s: %+v", e.At, e)
		}

		By("fixing each Secret engages its cluster")
		for _, c := range cases {
			putSecret(ctx, c.w, kubeconfigData(goodKubeconfig[c.w]))
		}
		for _, c := range cases {
			expectRow(ctx, c.w, fleetv1.ConditionConnected, metav1.ConditionTrue)
		}
		waitConnected(ctx, time.Minute, workloads...)
	}, SpecTimeout(4*time.Minute))
}

func rotationSpecs() {
	It("re-engages a cluster whose token is rotated mid-heal, and the heal completes", func(ctx SpecContext) {
		baseline(ctx)
		const w = "w1"
		// Two tokens of register's ServiceAccount, each bound to a Secret,
		// so that the old one can be revoked alone once the new one is in.
		registerToken(ctx, w, "fleet-old")
		waitConnected(ctx, time.Minute, w)
		waitHealed(ctx, time.Now(), nil, time.Minute, w)

		ids := memberIDs(ctx, w)
		before := podUIDs(ctx, w)
		logs := watchPods(ctx, w)
		load := startWorkloads(ctx, w)
		rebootAt := reboot(ctx, w)
		By("waiting for the heal to begin: the first terminal Pod is deleted")
		Eventually(func() int { return len(logs[w].Count(watch.Deleted)) }).WithContext(ctx).
			WithTimeout(time.Minute).WithPolling(20 * time.Millisecond).Should(BeNumerically(">", 0))
		Expect(unhealed(ctx, w, before[w])).NotTo(BeEmpty(), "the heal is still under way")

		By("writing a new token into the Secret while the old one still works")
		engagedBefore := engageCount()
		rotateAt := time.Now()
		newKC := registeredToken(ctx, w, "fleet-new")
		putSecret(ctx, w, kubeconfigData(newKC))
		goodKubeconfig[w] = newKC

		By("seeing the cluster re-engage for the new Secret and the heal complete")
		// The old token stays valid until below, so only the changed
		// Secret can make the provider engage the cluster anew.
		Eventually(engageCount).WithContext(ctx).WithTimeout(30*time.Second).WithPolling(20*time.Millisecond).
			Should(BeNumerically(">", engagedBefore), "w1 re-engaged after its Secret changed")
		GinkgoWriter.Printf("w1 states since the rotation: %+v\n", states.since(w, rotateAt))
		healed := waitHealed(ctx, rebootAt, before, 2*time.Minute, w)
		load.StopAndCheck()
		AddReportEntry("heal time with a token rotation mid-heal", fmt.Sprintf("%s (re-engaged %s after the rotation)",
			durations(healed), (states.connectedAt(w, rotateAt.Add(time.Millisecond)).Sub(rotateAt)).Round(10*time.Millisecond)))
		expectKeys(ctx, w)
		expectSameMembers(ctx, ids)
		for name, n := range logs[w].Count(watch.Deleted) {
			Expect(n).To(Equal(1), "Pod %s deleted %d times", name, n)
		}
		Expect(logs[w].Count(watch.Deleted)).To(HaveLen(len(before[w])))

		By("revoking the old token: the cluster stays engaged on the new one")
		revokedAt := time.Now()
		revokeToken(ctx, w, "fleet-old")
		Consistently(func() bool { st, _ := fm.Provider.State(w); return st.Connected }).WithContext(ctx).
			WithTimeout(5 * time.Second).WithPolling(20 * time.Millisecond).Should(BeTrue())
		for _, e := range states.since(w, revokedAt) {
			Expect(e.Connected).To(BeTrue(), "w1 dropped after the old token was revoked: %+v", e)
		}
	}, SpecTimeout(4*time.Minute))
}

// engageCount is how many times the provider engaged a cluster so far.
func engageCount() uint64 {
	GinkgoHelper()
	return series(kubeconfigsecret.MetricEngageDuration, map[string]string{"namespace": secretNS}).GetHistogram().GetSampleCount()
}

// series returns the series of the named metric on controller-runtime's
// registry whose labels include want, or nil.
func series(name string, want map[string]string) *dto.Metric {
	GinkgoHelper()
	mfs, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			matched := 0
			for _, l := range m.GetLabel() {
				if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
					matched++
				}
			}
			if matched == len(want) {
				return m
			}
		}
	}
	return nil
}

// corruptYAML breaks the kubeconfig's YAML while keeping its credentials
// in the bytes, so a parse error that quoted them would show.
func corruptYAML(kc []byte) []byte {
	out := bytes.Replace(kc, []byte("users:\n"), []byte("users: {\n"), 1)
	Expect(out).NotTo(Equal(kc))
	return out
}

// withCA replaces the kubeconfig's certificate-authority-data.
func withCA(kc, ca []byte) []byte {
	GinkgoHelper()
	cfg, err := clientcmd.Load(kc)
	Expect(err).NotTo(HaveOccurred())
	for _, c := range cfg.Clusters {
		c.CertificateAuthorityData = ca
	}
	out, err := clientcmd.Write(*cfg)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// foreignCA is a CA certificate that signed nothing of the sandbox's.
func foreignCA() []byte {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "not the sandbox CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// leaks returns the pieces of kc's credentials (token, client key and
// certificate, raw or base64, any 24 characters of them) found in text.
func leaks(text string, kc []byte) []string {
	GinkgoHelper()
	cfg, err := clientcmd.Load(kc)
	Expect(err).NotTo(HaveOccurred())
	var creds []string
	for _, ai := range cfg.AuthInfos {
		for _, s := range []string{ai.Token, string(ai.ClientKeyData), string(ai.ClientCertificateData)} {
			if s != "" {
				creds = append(creds, s, base64.StdEncoding.EncodeToString([]byte(s)))
			}
		}
	}
	Expect(creds).NotTo(BeEmpty())
	var out []string
	if strings.Contains(text, "PRIVATE KEY") {
		out = append(out, "PRIVATE KEY")
	}
	const n = 24
	for _, c := range creds {
		for _, line := range strings.Split(c, "\n") {
			if strings.HasPrefix(line, "-----") {
				continue
			}
			for i := 0; i+n <= len(line); i += n / 2 {
				if strings.Contains(text, line[i:i+n]) {
					out = append(out, line[i:i+n])
				}
			}
		}
	}
	return out
}
