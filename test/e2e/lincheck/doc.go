// Package lincheck checks that an etcd cluster stays linearizable through
// a fault: a few clients run Put, Get, compare-and-swap Txn and Delete on
// a small key set while the fault happens and heals, every operation is
// recorded, and the history is checked with porcupine
// (github.com/anishathalye/porcupine) against a model of etcd's KV.
// It catches what reading keys back after the heal cannot: a write
// acknowledged during the heal and then lost, a read that went back in
// time, a revision given twice.
//
// # Usage
//
// In a Ginkgo spec, start the workload before the fault (Start returns
// once the clients took a write) and check it once the spec has seen the
// cluster heal:
//
//	load := lincheck.Start(ctx, lincheck.Target{Config: cfg, Client: c, Namespace: ns, Cluster: name})
//	... inject the fault, wait for the heal ...
//	load.StopAndCheck()
//
// StopAndCheck first lets the clients read every key once more and take a
// write (a write lost in the heal shows only in a later read; a healed
// cluster that serves no read or write within AfterHealTimeout fails the
// spec), then stops them and
// checks. It fails the spec with the first offending operations and
// writes porcupine's HTML visualization into $LINCHECK_DIR (default: the
// system's temporary directory), printing its path. Start registers a
// cleanup that stops the workload if the spec fails before StopAndCheck.
// StartAll and Runnings do the same for several clusters. Outside Ginkgo
// (benchmarks), Dial, Run, Workload.Stop and Check are the plain API.
//
// # Implementation details
//
// The workload (Run) reaches the members through port-forward on the
// cluster's apiserver (e2eutil.DialEtcd) with a short gRPC reconnect
// backoff. One shared rate limiter paces all clients (Options.Rate, default
// 20 ops/s) and Options.MaxOps (default 3000) caps a run, so a history
// stays at a few thousand operations. Values are unique, keys live under a
// prefix of their own per run.
//
// Outcomes: a response is OK. A read that errs is Failed and dropped (it
// constrains nothing). A write that errs is Unknown, never Failed: the
// request may have been applied before the error (timeout, connection lost
// after sending). Porcupine sees an unknown write with its return at the
// end of the history, so it may place it anywhere after its call,
// including after everything else, which is the same as never having
// happened. After an unknown write a client only reads until a read
// succeeds, which keeps unknown writes, the expensive part of the search,
// to about one per client per outage.
//
// The model's state is one key's value and revision (the mod revision
// while it exists, the delete's revision once deleted); after an unknown
// write the revision is only known to exceed the last known one, and the
// next read pins it. A write must get a revision above the key's last
// one; a CAS must compare against the key's current mod revision (0 when
// absent); a CAS that failed also checks the value its else branch read.
//
// # Trade-offs
//
// The model partitions the history by key: each operation touches one key,
// and linearizability is local (a history is linearizable if each key's
// sub-history is), so porcupine checks small independent histories in
// parallel instead of one search over the product of all keys' states.
// What partitioning loses is etcd's one revision counter shared by all
// keys; checkRevisions checks it separately over the whole history: no two
// writes that changed a key got the same revision, and revisions never go
// back in real time (an operation called after another returned sees at
// least its revision, a write gets a greater one). These are necessary
// conditions, not a full check of the global revision order: a revision
// skipped, or two keys' revisions swapped between concurrent operations,
// goes unnoticed.
//
// Reads are linearizable Range requests only; serializable reads, watches,
// leases and multi-key transactions are not exercised. A search that does
// not finish within DefaultCheckTimeout fails the check as inconclusive.
package lincheck
