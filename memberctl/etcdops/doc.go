// Package etcdops is the small set of etcd calls the reconcilers make:
// membership (list, add as learner, promote, remove) and per-member status.
//
// # Usage
//
// A Target names one etcd cluster and the endpoints to dial, usually its
// voters only (learners refuse membership calls). Every call carries its own
// bounded timeout, so a partitioned or dead cluster costs a reconcile at
// most that long and never blocks a worker indefinitely.
//
// # Implementation details
//
// Clients come from an etcdaccess.ClientPool: one client per etcd cluster,
// reused across reconciles and re-pointed with SetEndpoints as members come
// and go, instead of a dial per operation.
package etcdops
