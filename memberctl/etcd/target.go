package etcd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// Members lists the EtcdMembers of an etcd cluster, oldest first.
func Members(ctx context.Context, c client.Reader, namespace, cluster string) ([]v1alpha1.EtcdMember, error) {
	var list v1alpha1.EtcdMemberList
	if err := c.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{v1alpha1.LabelCluster: cluster}); err != nil {
		return nil, err
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	return list.Items, nil
}

// Select picks the members to dial: voters that have a Pod and are not
// being deleted, except the one named; if there are none, every such member
// (a fresh seed is the only voter before its first write of isVoter).
func Select(members []v1alpha1.EtcdMember, except string) []v1alpha1.EtcdMember {
	var voters, all []v1alpha1.EtcdMember
	for _, m := range members {
		if m.Name == except || m.DeletionTimestamp != nil || m.Status.PodName == "" {
			continue
		}
		all = append(all, m)
		if m.Status.IsVoter {
			voters = append(voters, m)
		}
	}
	if len(voters) > 0 {
		return voters
	}
	return all
}

// TargetFor builds the etcd target of the given members.
func TargetFor(ctx context.Context, c client.Reader, fleetCluster string, members []v1alpha1.EtcdMember) (Target, error) {
	if len(members) == 0 {
		return Target{}, fmt.Errorf("no member to dial")
	}
	first := &members[0]
	t := Target{Key: TargetKey(fleetCluster, first.Namespace, first.Spec.ClusterName)}
	for i := range members {
		t.Endpoints = append(t.Endpoints, MemberClientURL(&members[i]))
	}
	var err error
	t.TLS, err = ClientTLSConfig(ctx, c, first)
	return t, err
}

// ClientTLSConfig builds the operator's TLS config for a member's client port:
// the server Secret's ca.crt as roots, plus the operator client Secret's
// key pair when mTLS is on. Nil when the member serves plain HTTP.
func ClientTLSConfig(ctx context.Context, c client.Reader, m *v1alpha1.EtcdMember) (*tls.Config, error) {
	if !ClientTLS(m) {
		return nil, nil
	}
	server, err := secret(ctx, c, m.Namespace, m.Spec.TLS.ClientServerSecretRef)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(server.Data["ca.crt"]) {
		return nil, fmt.Errorf("secret %s/%s has no usable ca.crt", m.Namespace, server.Name)
	}
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if m.Spec.TLS.ClientMTLS && m.Spec.TLS.OperatorClientSecretRef != "" {
		op, err := secret(ctx, c, m.Namespace, m.Spec.TLS.OperatorClientSecretRef)
		if err != nil {
			return nil, err
		}
		pair, err := tls.X509KeyPair(op.Data["tls.crt"], op.Data["tls.key"])
		if err != nil {
			return nil, fmt.Errorf("secret %s/%s: %w", m.Namespace, op.Name, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

func secret(ctx context.Context, c client.Reader, ns, name string) (*corev1.Secret, error) {
	var s corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &s); err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", ns, name, err)
	}
	return &s, nil
}
