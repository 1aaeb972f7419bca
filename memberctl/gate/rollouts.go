package gate

import "context"

// Roll is one etcd cluster's planned roll (a version upgrade or a
// re-template) as it asks for its place in the fleet's rollout.
type Roll struct {
	// Cluster is the workload cluster's name in the fleet; empty for a
	// single-cluster operator.
	Cluster string
	// Namespace and EtcdCluster name the etcd cluster that rolls.
	Namespace   string
	EtcdCluster string
	// Done is how many of its Total members run the roll's target: the
	// roll's progress, which a Rollouts may time.
	Done, Total int
	// Started is true when the roll already changed a member: it held a
	// place before (a restarted manager finds it mid-roll), and keeps one
	// whatever the limits say, since half a roll is worse than a late one.
	Started bool
}

// Rollouts bound how many etcd clusters roll at once across the fleet, and
// pause the wave when rolls fail. The cluster reconciler asks at every step
// of a roll: a place, once given, is kept while the roll keeps asking, and
// given back by Leave when the roll is over.
type Rollouts interface {
	// Join asks for r's place. Delay 0: the roll may take its next step.
	// Otherwise the roll must requeue after Delay and ask again, never
	// block; Reason says what it waits for.
	Join(ctx context.Context, r Roll) Decision
	// Leave gives r's place back, if held, and forgets its wait.
	Leave(r Roll)
}

// AllowAllRollouts is the single-cluster default: every roll proceeds.
type AllowAllRollouts struct{}

// Join implements Rollouts.
func (AllowAllRollouts) Join(context.Context, Roll) Decision { return Decision{Cancel: func() {}} }

// Leave implements Rollouts.
func (AllowAllRollouts) Leave(Roll) {}
