package kubeconfigsecret

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const token = "s3cr3t-token-abcdefghijklmnopqrstuvwxyz"

func kubeconfig(user string) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:6443
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
users:
- name: u
  user:
%s
`, user)
}

var _ = Describe("parseKubeconfig", func() {
	It("accepts inline credentials", func() {
		cfg, _, err := parseKubeconfig(kubeconfig("    token: " + token))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.BearerToken).To(Equal(token))
	})

	DescribeTable("refuses what would run programs or read the operator's files, without echoing credentials",
		func(user, says string) {
			_, _, err := parseKubeconfig(kubeconfig(user))
			var f *failure
			Expect(errors.As(err, &f)).To(BeTrue())
			Expect(f.reason).To(Equal(ReasonInvalidKubeconfig))
			Expect(f.msg).To(ContainSubstring(says))
			Expect(f.msg).NotTo(ContainSubstring(token))
		},
		Entry("exec plugin", "    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, env: [{name: T, value: "+token+"}]}", "plugin"),
		Entry("auth-provider", "    auth-provider: {name: oidc, config: {id-token: "+token+"}}", "plugin"),
		Entry("token file", "    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token", "files"),
		Entry("client key file", "    client-key: /etc/key.pem\n    client-certificate: /etc/cert.pem", "files"),
	)

	It("does not echo a token from YAML it cannot parse", func() {
		raw := []byte("users:\n- name: u\n  user: {token: " + token + "\n  : : [")
		_, red, err := parseKubeconfig(raw)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).NotTo(ContainSubstring(token))
		Expect(red.redact("x " + token + " y")).To(Equal("x " + redacted + " y"))
	})

	It("redacts every user's credentials, raw and base64", func() {
		kc := []byte(string(kubeconfig("    token: "+token)) + "- name: other\n  user: {password: hunter2-long}\n")
		_, red, err := parseKubeconfig(kc)
		Expect(err).NotTo(HaveOccurred())
		b64 := base64.StdEncoding.EncodeToString([]byte(token))
		Expect(red.redact(token + " hunter2-long " + b64)).To(Equal(redacted + " " + redacted + " " + redacted))
	})
})

var _ = DescribeTable("classify",
	func(err error, reason string) {
		Expect(classify(err, "step", nil).reason).To(Equal(reason))
	},
	Entry("401", apierrors.NewUnauthorized("no"), ReasonUnauthorized),
	Entry("403", apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no")), ReasonForbidden),
	Entry("refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, ReasonUnreachable),
	Entry("other", errors.New("boom"), ReasonError),
	Entry("already classified", &failure{reason: ReasonSyncFailed, msg: "x"}, ReasonSyncFailed),
)

var _ = Describe("Options", func() {
	It("defaults in one place and requires a namespace, label and key", func() {
		o := Options{Namespace: "ns"}.withDefaults()
		Expect(o.QPS).To(BeNumerically("==", 50))
		Expect(o.Burst).To(Equal(100))
		Expect(o.ProbeInterval.Seconds()).To(BeNumerically("==", 10))
		Expect(o.FailureThreshold).To(Equal(5))
		Expect(o.Backoff.Cap.Minutes()).To(BeNumerically("==", 5))
		Expect(o.ControllerName).To(Equal("kubeconfigsecret-ns"))
		Expect(o.Scheme).NotTo(BeNil())
		Expect(o.WatchedKinds).To(BeEmpty(), "what to watch is the caller's")
		_, err := New(Options{})
		Expect(err).To(MatchError(And(ContainSubstring("Namespace is required"),
			ContainSubstring("Label is required"), ContainSubstring("Key is required"))))
	})
})
