// Package restore is etcdfleet-agent's restore-agent: it writes a new
// member's data directory from a stored snapshot, so that the member
// starts a new cluster (a new cluster ID) holding every key of the
// snapshot.
//
// # Setup
//
// It is meant to run as an init container of a restored cluster's seed
// member, from etcdfleet's image; etcd's images have no shell, and
// etcdutl's restore is linked in as a library (go.etcd.io/etcd/etcdutl/v3),
// at the version of the etcd client this module uses.
//
// # Usage
//
//	err := restore.Run(ctx, restore.Config{File: "/restore/a.db", SHA256: sum, DataDir: "/var/lib/etcd",
//		Name: m, PeerURLs: []string{peer}, InitialCluster: m + "=" + peer, InitialClusterToken: token})
//
// # Implementation details
//
//   - A data dir that already holds a member is left alone
//     (ErrAlreadyRestored): a restarted Pod keeps what it wrote since.
//   - The snapshot is downloaded into a work dir inside the data dir (the only writable
//     place under a read-only root filesystem) and its sha256
//     checked against the artifact's before anything is written; etcdutl
//     then checks etcd's own trailing hash. The restore is written into the
//     work dir and its member directory moved in, so a failed restore
//     leaves no half-written member.
//
// # Trade-offs
//
// Linking etcdutl brings etcd's server packages into etcdfleet-agent (not
// into the manager, which never imports this package).
package restore
