package etcdcluster

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// newMember templates an EtcdMember from status.observed. Its name is
// generated ("<cluster>-xxxxx"); the component label that needs the name
// is added with spec.initialCluster.
func newMember(ec *v1alpha1.EtcdCluster, bootstrap bool) *v1alpha1.EtcdMember {
	o := ec.Status.Observed.DeepCopy()
	return &v1alpha1.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    ec.Name + "-",
			Namespace:       ec.Namespace,
			Labels:          v1alpha1.ClusterLabels(ec.Name),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ec, v1alpha1.GroupVersion.WithKind("EtcdCluster"))},
		},
		Spec: v1alpha1.EtcdMemberSpec{
			ClusterName:               ec.Name,
			Version:                   o.Version,
			Storage:                   o.Storage,
			Resources:                 o.Resources,
			Affinity:                  o.Affinity,
			TopologySpreadConstraints: o.TopologySpreadConstraints,
			Options:                   o.Options,
			Bootstrap:                 bootstrap,
			ClusterToken:              ec.Status.ClusterToken,
			TLS:                       memberTLS(ec.Spec.TLS),
		},
	}
}

// memberTLS resolves the cluster's TLS spec into a member's Secret names.
func memberTLS(t *v1alpha1.TLSSpec) *v1alpha1.MemberTLS {
	if t == nil || (t.Client == nil && t.Peer == nil) {
		return nil
	}
	out := &v1alpha1.MemberTLS{}
	if t.Client != nil {
		out.ClientServerSecretRef = t.Client.ServerSecretRef.Name
		if t.Client.OperatorClientSecretRef != nil {
			out.ClientMTLS = true
			out.OperatorClientSecretRef = t.Client.OperatorClientSecretRef.Name
		}
	}
	if t.Peer != nil {
		out.PeerSecretRef = t.Peer.SecretRef.Name
	}
	return out
}

// createMember creates a member; restore is set on a restored cluster's
// seed only. While spec.version is a change etcd refuses from what runs,
// the member keeps the running version (see versions.go).
func (p *pass) createMember(ctx context.Context, bootstrap bool, restore *v1alpha1.MemberRestore) (*v1alpha1.EtcdMember, error) {
	m := newMember(p.ec, bootstrap)
	m.Spec.Restore = restore
	m.Spec.Version = p.versions.forNewMembers(m.Spec.Version)
	if m.Spec.TLS != nil {
		// A new member starts on the Secrets as they are now.
		m.Spec.TLS.SecretsHash = p.tlsSecrets
	}
	if err := p.cl.Client.Create(ctx, m); err != nil {
		return nil, fmt.Errorf("create member: %w", err)
	}
	return m, nil
}

// patchInitialCluster sets spec.initialCluster and the member's full label
// set. The API refuses to change a set initialCluster, so a racing pass
// cannot overwrite it with a different list.
func (p *pass) patchInitialCluster(ctx context.Context, m *v1alpha1.EtcdMember, ic string) error {
	before := m.DeepCopy()
	m.Spec.InitialCluster = ic
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	for k, v := range v1alpha1.MemberLabels(p.ec.Name, m.Name) {
		m.Labels[k] = v
	}
	if err := p.cl.Client.Patch(ctx, m, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("set initialCluster of member %s: %w", m.Name, err)
	}
	return nil
}

func (p *pass) setDormant(ctx context.Context, m *v1alpha1.EtcdMember, dormant bool) error {
	patch := []byte(fmt.Sprintf(`{"spec":{"dormant":%t}}`, dormant))
	if err := p.cl.Client.Patch(ctx, m, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("set dormant=%t on member %s: %w", dormant, m.Name, err)
	}
	return nil
}

// initialCluster builds etcd's --initial-cluster from a MemberList, peer
// URLs verbatim, sorted. A member added but never started has no name yet;
// its name is its peer URL's first DNS label, which is the EtcdMember name.
func initialCluster(members []etcd.Member) string {
	var parts []string
	for _, e := range members {
		for _, u := range e.PeerURLs {
			name := e.Name
			if name == "" {
				name = firstLabel(u)
			}
			parts = append(parts, name+"="+u)
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func firstLabel(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	return strings.SplitN(u.Hostname(), ".", 2)[0]
}

// removalKeepsQuorum reports whether removing one member leaves a ready
// majority among the voters left. Removing a learner never changes quorum.
func removalKeepsQuorum(voters, readyVoters int32, victimVotes, victimReady bool) bool {
	if !victimVotes {
		return true
	}
	left, readyLeft := voters-1, readyVoters
	if victimReady {
		readyLeft--
	}
	return left > 0 && etcd.HasQuorum(int(readyLeft), int(left))
}
