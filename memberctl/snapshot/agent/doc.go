// Package agent is etcdfleet-agent's snapshot-agent: it streams an etcd
// snapshot (Maintenance.Snapshot) to S3-compatible object storage or to a
// file, verifies the stored copy, and reports the result as its
// termination message.
//
// # Setup
//
// memberctl/etcdsnapshot builds the Job that runs it; Args and BindFlags
// are the two sides of its command line, so they cannot drift apart.
//
// # Usage
//
//	res, err := agent.Run(ctx, agent.Config{Endpoints: eps, File: "/snapshot/a.db"})
//
// A successful run writes the Result (size, sha256, revision, S3 ETag) as JSON to
// Config.TerminationMessagePath; a failed one writes the error there.
// ParseResult reads it back. With Config.Delete (--delete), Delete
// removes the stored snapshot instead (the cleanup Job of an EtcdSnapshot
// with deletionPolicy Delete); a snapshot already gone counts as deleted.
// With Config.CheckSHA256 (--check-sha256), Check reads a stored snapshot
// back against what was recorded; with Config.DrillDir (--drill-dir) as
// well, etcdfleet-agent runs memberctl/snapshot/restore.Drill instead (a
// restore drill, which needs etcdutl and etcd's server, kept out of this
// package because the manager imports it): its DrillResult
// (ParseDrillResult) is the termination message.
//
// # Implementation details
//
//   - S3 uses minio-go v7 (Apache-2.0): its PutObject streams a body of
//     unknown length as a multipart upload, holding one part (PartSize) in
//     memory, and aborts the upload on error; BucketLookupAuto uses
//     path-style requests on every non-AWS store. aws-sdk-go-v2 would need
//     its feature/s3/manager for the same streaming upload, endpoint
//     resolver configuration for non-AWS stores, and a larger dependency
//     tree in an image that runs in every workload cluster.
//   - A snapshot never replaces what its key or file already holds: the
//     run fails with ErrObjectExists, whose text ("ObjectExists: ...")
//     starts the termination message. For S3 the key is stat'd first and
//     the upload carries If-None-Match: * (minio-go sends it on the
//     multipart create and complete requests). AWS S3 and MinIO enforce
//     it atomically; SeaweedFS honours it on single-part PUTs only (tested
//     in conditional_test.go), so there two uploads that both start before
//     either completes still race, and the later one wins. The Result
//     carries the object's ETag, and the read-back, Check, Delete and
//     restore act only on the object that still has the recorded ETag
//     (GET If-Match; Delete stats and compares, minio-go having no
//     conditional delete, so a replacement in the moment between the stat
//     and the delete is still deleted). An empty recorded ETag (artifacts
//     from before) acts on whatever the key holds, as before.
//   - Every transfer with object storage is bounded per stage (S3Limits,
//     the --s3-* limit flags, the manager's snapshotAgent.* settings): the
//     connection, TCP and TLS together (dialer); the response's first
//     byte once the request is written; and a throughput floor over a
//     window, measured only while a request's or a response's body moves
//     (meteredTransport, watch), so the time spent reading etcd between
//     parts never counts against the store. A cut transfer fails with a
//     StageError naming the stage and its flag, which becomes the
//     snapshot's JobFailed message. Besides, every read and write on a
//     connection must move a byte within StallTimeout. Without them a
//     tarpit endpoint would hold the run, and its fleet-wide snapshot
//     slot, for the whole run's timeout.
//   - Reaching etcd is bounded too (EtcdLimits, --etcd-dial-timeout and
//     --etcd-first-byte-timeout, the manager's snapshotAgent.etcd*
//     settings): a ready connection (connect: TCP, TLS, and etcd's
//     acceptance of the client certificate, which with TLS 1.3 shows only
//     when etcd answers the HTTP/2 preface), then etcd's first answer to
//     the revision read and to the snapshot stream (firstByte). etcd's
//     client dials lazily and its requests wait for a connection as long
//     as their context allows, so a member that refuses the agent's
//     certificate would otherwise hold the run for its whole timeout. An
//     EtcdStageError names the stage, its flag and grpc's last connection
//     error (the TLS alert).
//   - A file is written to a temporary name, synced and hard-linked into
//     place (link fails on an existing name), so a failed run never leaves
//     half a snapshot under the final name and never replaces a file; a
//     file system without hard links gets a rename after a stat.
//   - The sha256 is computed while streaming. The stored copy is then read
//     back: its size and sha256 must match, and its last 32 bytes must be
//     etcd's own sha256 of the rest, which etcd appends to every snapshot
//     and etcdutl checks when restoring.
//   - The revision is a linearizable read just before the stream starts
//     (the stream itself carries no header), so the snapshot holds at
//     least that revision.
//
// # Trade-offs
//
// Verifying downloads the whole snapshot again: twice the transfer, for
// the certainty that what a restore will read is what etcd sent.
package agent
