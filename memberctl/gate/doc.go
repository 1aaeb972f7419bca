// Package gate defines the question memberctl asks before every destructive
// action on an etcd member: deleting a terminal Pod, replacing a
// crash-looping member, or replacing a member whose memory-backed Pod was lost.
//
// memberctl knows nothing of fleets. The fleet layer implements Gate with one
// rate limiter shared by every workload cluster; a single-cluster operator
// uses AllowAll.
//
// # Usage
//
//	d := g.Reserve(ctx, gate.Request{...})
//	if d.Delay > 0 {
//		return ctrl.Result{RequeueAfter: d.Delay}, nil // never block a worker
//	}
//	if err := act(); err != nil {
//		d.Cancel() // the action did not happen: give the token back
//	}
package gate
