// Package managerproc runs the real etcdfleet-manager binary as child
// processes, for the end-to-end suites and the benchmarks that need
// several managers (replicas, a killed leader, sharding) or its real
// flags.
//
// # Usage
//
//	bin, err := managerproc.Build(ctx, dir)
//	p, err := managerproc.Start(bin, managerproc.Options{Name: "r1", Args: args, Log: sink})
//	defer p.Kill()
//	p.Current()       // the clusters it has engaged now
//	p.Engagements()   // every engagement, ended or not, for overlap checks
//	p.Grants()        // every destructive action its limiter granted
//
// # Implementation details
//
// What the process did is read from its JSON log (controller-runtime's
// zap, the binary's default): "Cluster engaged" and "Cluster
// disengaged..." lines give engagement spans, stamped when the line is
// read (both are logged after the fact, so a span covers the real
// engagement); "Destructive action granted" lines give each grant with
// its limiter wait, stamped by the line's "ts" when the process logs with
// --zap-time-encoding=rfc3339nano (StartArgs adds it), else when read.
// Every process gets Pdeathsig SIGKILL, so none outlives a test binary
// that timed out.
//
// # Trade-offs
//
// Parsing logs couples this package to three log messages; the
// alternative, an API for tests in the binary, would be product code
// that exists for tests only.
package managerproc
