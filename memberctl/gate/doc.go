// Package gate defines the question memberctl asks before every destructive
// action on an etcd member: deleting a terminal Pod, replacing a
// crash-looping member, or replacing a member whose memory-backed Pod was lost;
// and before planned ones (Action.Planned), such as restarting a member at
// a new etcd version, which a shared Gate serves after every heal.
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
//
// Slots is the second question, asked before a snapshot Job starts: how
// many may run at once and how fast they start. A slot is held while the
// task runs, until Release, or until its Expires if the release is lost.
// AllowAllSlots is the single-cluster default; the fleet implements it
// with limiter.Slots, apart from the Gate's tokens.
package gate
