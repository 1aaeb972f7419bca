// Package service manages the two Services of an EtcdCluster:
//
//   - <cluster>, headless, which gives every member Pod the DNS name
//     <member>.<cluster>.<ns>.svc that etcd advertises (through the Pod's
//     hostname and subdomain). It publishes not-ready addresses, because
//     members must resolve each other before any of them is ready: a
//     cluster cannot gain quorum if peers only become resolvable once it
//     has quorum.
//   - <cluster>-client, a ClusterIP Service on the client port for clients.
//     It uses the same selector, so it includes learners, as the reference
//     operator does; a member stays a learner only until it is promoted,
//     and readiness keeps members without quorum out of its endpoints.
//
// NewHeadless and NewClient return one Syncer each (Syncers returns
// both, headless first), so that every Syncer in the component packages
// keeps exactly one object.
//
// Both carry a controller ownerRef to the cluster. Sync repairs drift only
// in the fields the operator owns (selector, ports, publishNotReadyAddresses
// and its own label keys) with a merge patch, and writes nothing when they
// already match; annotations, extra labels and fields the apiserver
// allocates are left alone. A Service of either name controlled by another
// owner is refused with component.ErrForeign.
package service
