package pod

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// templated is the part of a member's spec that a rolling re-template
// changes, and so what TemplateHash covers. The version is not in it: a
// version roll is told by the image tag, and judged by etcd's upgrade
// rules first. Nothing of the manager's own settings is in it either (the
// image repositories, the agent image), so that upgrading the manager, or
// changing how Build fills a default, never restarts every member of the
// fleet at once; such changes reach members as they are recreated.
type templated struct {
	Resources                 corev1.ResourceRequirements       `json:"resources,omitempty"`
	Affinity                  *corev1.Affinity                  `json:"affinity,omitempty"`
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	Options                   *v1alpha1.EtcdOptions             `json:"options,omitempty"`
	// TLSSecrets is the member's spec.tls.secretsHash: a change of the
	// mounted TLS Secrets' contents restarts the Pod. Omitted when empty,
	// so that the hash of a member without TLS is what it always was.
	TLSSecrets string `json:"tlsSecrets,omitempty"`
}

// TemplateHash is the hash of the re-templatable part of a member's spec:
// resources, affinity, topologySpreadConstraints, options and the hash of
// its TLS Secrets' contents. Build puts
// it on the Pod (v1alpha1.AnnotationTemplateHash); a Pod whose hash is not
// its member's now runs an old template and is rolled.
func TemplateHash(s *v1alpha1.EtcdMemberSpec) string {
	b, err := json.Marshal(templated{
		Resources: s.Resources, Affinity: s.Affinity,
		TopologySpreadConstraints: s.TopologySpreadConstraints, Options: s.Options,
		TLSSecrets: tlsSecretsHash(s),
	})
	if err != nil {
		panic("marshal a member template: " + err.Error()) // plain API types always marshal
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// RunningTemplateHash is the template hash a Pod was built from, from its
// annotation; "" for a Pod built before template hashes.
func RunningTemplateHash(p *corev1.Pod) string {
	return p.Annotations[v1alpha1.AnnotationTemplateHash]
}

// tlsSecretsHash is the member's spec.tls.secretsHash, "" without TLS.
func tlsSecretsHash(s *v1alpha1.EtcdMemberSpec) string {
	if s.TLS == nil {
		return ""
	}
	return s.TLS.SecretsHash
}
