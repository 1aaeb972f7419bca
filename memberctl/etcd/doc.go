// Package etcd is everything the reconcilers need to talk to one etcd
// cluster: the names and URLs of its objects and members, which endpoints
// to dial with which TLS settings, and the small set of etcd calls they
// make (membership list, add as learner, promote, remove, and per-member
// status).
//
// # Usage
//
// Names (PVCName, PeerURL, ClientURL, ...) are derived here in one place so
// the Pod builder, the reconcilers and the etcd client always agree on them.
// Members lists an etcd cluster's EtcdMembers, Select picks the voters to
// dial, and TargetFor turns them into a Target: the etcd cluster and the
// endpoints to dial, usually its voters only (learners refuse membership
// calls). Every call on an Interface carries its own bounded timeout, so a
// partitioned or dead cluster costs a reconcile at most that long and never
// blocks a worker indefinitely.
//
// # Implementation details
//
// Clients come from an etcdaccess.ClientPool: one client per etcd cluster,
// reused across reconciles and re-pointed with SetEndpoints as members come
// and go, instead of a dial per operation.
package etcd
