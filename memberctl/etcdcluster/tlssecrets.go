package etcdcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// TLS Secrets. A member's Pod mounts its cluster's serving and peer
// Secrets as they are when the Pod starts, and etcd reads its trusted CA
// files only then, so a change of the Secrets' contents (cert-manager
// renewing a certificate, a CA bundle changed for a rotation) reaches etcd
// only through a restart. Each pass reads the Secrets (by name, uncached:
// the workload credential may get Secrets, never list or watch them) and
// hashes their data; the hash is part of the Pod template
// (spec.tls.secretsHash), so a change is rolled like any re-template: one
// member at a time, followers first, the leader last, through the shared
// gate, only while quorum holds without the member. Since the credential
// cannot watch Secrets, a TLS cluster is looked at every
// Options.TLSSecretsEvery for a change.

// tlsSecretsEvery (the default of Options.TLSSecretsEvery): cert-manager
// renews a certificate long before it expires (by default a third of its
// life before), so a renewal rolled a minute late costs nothing, and a
// minute is the pace at which the kubelet itself refreshes mounted
// Secrets.
const tlsSecretsEvery = time.Minute

// mountedSecrets are the Secrets the members' Pods mount, in a fixed
// order. The operator's client Secret is not among them: a change of it
// reaches the operator at its next dial, and no member.
func mountedSecrets(t *v1alpha1.TLSSpec) []string {
	var out []string
	if t == nil {
		return out
	}
	if t.Client != nil {
		out = append(out, t.Client.ServerSecretRef.Name)
	}
	if t.Peer != nil {
		out = append(out, t.Peer.SecretRef.Name)
	}
	return out
}

// readTLSSecrets sets p.tlsSecrets to the hash of the mounted Secrets'
// data, or leaves it "" (nothing rolled for TLS in this pass) when the
// cluster has no TLS or a Secret cannot be read; a missing Secret already
// keeps new Pods from starting, which their members' status reports.
func (p *pass) readTLSSecrets(ctx context.Context) {
	names := mountedSecrets(p.ec.Spec.TLS)
	if len(names) == 0 {
		return
	}
	h := sha256.New()
	for _, name := range names {
		var s corev1.Secret
		if err := p.cl.Reader.Get(ctx, types.NamespacedName{Namespace: p.ec.Namespace, Name: name}, &s); err != nil {
			log.FromContext(ctx).Info("TLS Secret not read; its changes are not rolled in this pass", "secret", name, "error", err.Error())
			return
		}
		hashSecretData(h, name, s.Data)
	}
	p.tlsSecrets = hex.EncodeToString(h.Sum(nil))[:16]
}

// hashSecretData writes a Secret's name and data, keys sorted, with
// lengths, so that no two different Secrets write the same bytes.
func hashSecretData(h interface{ Write([]byte) (int, error) }, name string, data map[string][]byte) {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	fmt.Fprintf(h, "%d:%s;", len(name), name)
	for _, k := range keys {
		fmt.Fprintf(h, "%d:%s=%d:", len(k), k, len(data[k]))
		_, _ = h.Write(data[k])
	}
}
