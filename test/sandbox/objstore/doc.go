// Package objstore runs real S3-compatible object storage for tests:
// SeaweedFS (Apache-2.0; MinIO's server is AGPL), built from the Go module
// proxy by test/tools/seaweedfs.sh and cached outside the repo.
//
// # Setup
//
//	s, err := objstore.Start(ctx, t.TempDir())
//	defer s.Stop()
//	err = s.MakeBucket(ctx, "backups")
//
// The binary is $SEAWEEDFS_BINARY, or the script's cached build (the first
// build takes many minutes on 2 cores; later ones are a cache hit).
//
// # Usage
//
// Give the code under test Endpoint, AccessKey and SecretKey (one admin
// identity); use Client for assertions (objects, ETags, deletes).
//
// # Implementation details
//
// One `weed server -filer -s3` process runs the master, a volume server,
// the filer and the S3 gateway, the lightest of weed's layouts that serves
// S3 (`weed mini` adds an admin UI, WebDAV and maintenance workers). SSE-S3
// is on: weed gets a fixed secret in WEED_S3_SSE_KEY (its setting
// s3.sse.key; EnvSSEKey), so an upload with x-amz-server-side-encryption:
// AES256 is stored encrypted and a HEAD or GET of it reports AES256, as on
// AWS; uploads without the header stay unencrypted. SSE-KMS is not
// configured (no KMS), and weed refuses such uploads. Every
// port, gRPC ones included, is a free loopback port chosen at start, so
// several servers can run at once; telemetry is off. The process dies with
// the test binary (package proc).
//
// Start returns once the gateway answers reads (~3 s) and writes one
// object in the background (warmUp): weed holds its first write ~8.5 s
// (the master's first volume allocation waits a heartbeat pulse, and the
// filer's write locks wait for its registration with the master), once per
// process. A caller that sets up etcd meanwhile finds writes ready. Each
// bucket (a weed collection) grows one volume at a time, not weed's 7, so
// that the 16 volumes a server may hold serve many buckets: tests that
// share one server take a bucket each.
//
// # Trade-offs
//
// Free ports are chosen by listening and closing, so another process could
// take one before weed binds it; Start then fails with weed's log rather
// than retrying.
package objstore
