// Package rotation renews the registered token of a workload cluster
// before it expires, without a human, for registrations that opted in.
//
// # Opting in
//
// Both sides must agree, and neither grants anything by default:
//   - the workload cluster lets the manager's ServiceAccount mint tokens of
//     itself only (etcdfleetctl register --allow-token-rotation, or the
//     workload chart's tokenRotation.enabled; memberctl/workload's
//     TokenRotationObjects), behind an admission policy that admits only
//     tokens bound to a registration Secret, for at most 90 days;
//   - the registration Secret carries EnabledAnnotation (register writes it
//     with the flag), and the manager may update Secrets in the
//     registration namespace (the etcdfleet chart's tokenRotation.enabled).
//
// # Rotating
//
// The Rotator, a leader-elected controller of the registration Secrets
// (with Options.Owns, as the sharded fleet sets it, one on every replica,
// each acting only on the registrations whose cluster it owns),
// reads the registered token's claims (ParseToken: lifetime, ServiceAccount,
// the Secret it is bound to) and asks Policy when it is due: with a third
// of its lifetime left by default, or RotateBeforeAnnotation before expiry,
// never before half of it has passed. When due it asks the workload
// apiserver, with that token, for a token of the same ServiceAccount bound
// to the same Secret, for the same lifetime, and writes it into the
// Secret (optimistic concurrency: a concurrent register wins). The
// provider sees a new kubeconfig and reconnects the cluster with it.
//
// Every outcome shows on the FleetCluster as condition TokenRotation
// (True: Scheduled or Rotated; False: WorkloadForbidden,
// ManagementForbidden, WorkloadRefused, NotRotatable, TokenExpired,
// RotationFailed, each message saying what to do), with an Event when it
// changes and the metrics MetricRotations and MetricFailing.
//
// # Trade-offs
//
// A stolen token of an opted-in registration can extend its own life, in
// 90-day steps, for as long as its registration Secret exists on the
// workload cluster: unregister (which deletes it) still ends it and every
// token minted from it, and so does deleting the ServiceAccount. Without
// the opt-in it dies at its expiry. A token minted when the Secret update
// then fails is never stored; it stays valid until it expires or is
// revoked with the rest, as it is bound to the same Secret. Each rotation
// reconnects the cluster, once per rotation. An expired token cannot
// authenticate the request for its successor, so a cluster whose rotation
// failed for a whole third of the lifetime needs register again.
package rotation
