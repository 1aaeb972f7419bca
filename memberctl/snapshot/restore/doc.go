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
// Drill is a restore drill, run by the verify Job of an EtcdSnapshot
// (etcdfleet-agent snapshot-agent --check-sha256 --drill-dir):
//
//	err := restore.Drill(ctx, agent.Config{S3: s3, CheckSHA256: sum, CheckSize: n, ETag: etag,
//		CheckRevision: rev, DrillDir: "/var/lib/etcdfleet-drill"})
//
// # Implementation details
//
//   - Run and Drill share fetchAndRestore: download with the ETag, size and
//     sha256 checks, then etcdutl's restore. A drill proves exactly what a
//     seed's restore would do.
//   - Drill then starts a throwaway etcd (embed) on the restored data dir,
//     peer and client listeners on 127.0.0.1 at ports the kernel picks
//     (a Pod's network namespace may hold anything), reads its revision
//     with one serializable Get, and requires it to be at least the one
//     recorded before the snapshot was taken. It never dials the cluster,
//     and removes its work dir.
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
// into the manager, which never imports this package). A drill's etcd
// holds the restored keyspace's index in memory, within the verify Job's
// memory limit: a keyspace too large for it fails the drill.
package restore
