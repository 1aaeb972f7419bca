package pod

import (
	"testing"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// A change of the TLS Secrets' contents is a new template (the member is
// rolled); a member without TLS, or with TLS but no hash yet, keeps the
// hash it had before the hash of the Secrets existed.
func TestTemplateHashCoversTLSSecrets(t *testing.T) {
	plain := newMember().Spec
	// The hash of a plain member from before spec.tls.secretsHash existed:
	// pinned, so that a change of it (which would roll every member of
	// every cluster once) is a decision, not an accident.
	const before = "9acca9082e865d64"
	if got := TemplateHash(&plain); got != before {
		t.Fatalf("TemplateHash of a member without TLS = %s, was %s", got, before)
	}
	noHash := newMember(func(m *v1alpha1.EtcdMember) {
		m.Spec.TLS = &v1alpha1.MemberTLS{ClientServerSecretRef: "srv", PeerSecretRef: "peer"}
	}).Spec
	if TemplateHash(&noHash) != before {
		t.Fatal("a TLS member with no secrets hash yet must keep its old template hash")
	}
	a, b := *noHash.DeepCopy(), *noHash.DeepCopy()
	a.TLS.SecretsHash, b.TLS.SecretsHash = "aaaa", "bbbb"
	if TemplateHash(&a) == TemplateHash(&b) || TemplateHash(&a) == before {
		t.Fatal("the TLS Secrets' hash must change the template hash")
	}
}
