package etcd

import (
	"fmt"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// Ports every member listens on.
const (
	ClientPort  = 2379
	PeerPort    = 2380
	MetricsPort = 2381
)

// PVCName is the data claim of a member.
func PVCName(member string) string { return "data-" + member }

// HeadlessService is the Service giving members their DNS names.
func HeadlessService(cluster string) string { return cluster }

// ClientService is the Service clients use.
func ClientService(cluster string) string { return cluster + "-client" }

// Host is a member's DNS name: <member>.<headless svc>.<ns>.svc.
func Host(namespace, cluster, member string) string {
	return fmt.Sprintf("%s.%s.%s.svc", member, HeadlessService(cluster), namespace)
}

// PeerURL is the URL peers reach a member at.
func PeerURL(namespace, cluster, member string, tls bool) string {
	return fmt.Sprintf("%s://%s:%d", scheme(tls), Host(namespace, cluster, member), PeerPort)
}

// ClientURL is the URL clients (and the operator) reach a member at.
func ClientURL(namespace, cluster, member string, tls bool) string {
	return fmt.Sprintf("%s://%s:%d", scheme(tls), Host(namespace, cluster, member), ClientPort)
}

// MemberPeerURL is PeerURL for an EtcdMember.
func MemberPeerURL(m *v1alpha1.EtcdMember) string {
	return PeerURL(m.Namespace, m.Spec.ClusterName, m.Name, PeerTLS(m))
}

// MemberClientURL is ClientURL for an EtcdMember.
func MemberClientURL(m *v1alpha1.EtcdMember) string {
	return ClientURL(m.Namespace, m.Spec.ClusterName, m.Name, ClientTLS(m))
}

// ClientTLS reports whether the member serves clients over TLS.
func ClientTLS(m *v1alpha1.EtcdMember) bool {
	return m.Spec.TLS != nil && m.Spec.TLS.ClientServerSecretRef != ""
}

// PeerTLS reports whether the member talks to peers over TLS.
func PeerTLS(m *v1alpha1.EtcdMember) bool {
	return m.Spec.TLS != nil && m.Spec.TLS.PeerSecretRef != ""
}

// TargetKey is the etcd client pool key of a cluster's etcd cluster.
func TargetKey(fleetCluster, namespace, cluster string) string {
	return fleetCluster + "/" + namespace + "/" + cluster
}

func scheme(tls bool) string {
	if tls {
		return "https"
	}
	return "http"
}
