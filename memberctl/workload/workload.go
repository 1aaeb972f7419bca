package workload

import (
	"context"
	"fmt"

	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// Cluster is everything a reconciler needs to act in one workload cluster.
type Cluster struct {
	// Name is the cluster's name in the fleet; empty for a single cluster.
	Name string
	// Client reads from the cluster's (label-narrowed) cache and writes to
	// its apiserver.
	Client client.Client
	// Reader reads the apiserver directly, for the few reads that must not
	// be stale.
	Reader   client.Reader
	Recorder record.EventRecorder
	// Etcd reaches the etcd members running in the cluster.
	Etcd etcd.Interface
	// Gate is asked before every destructive action.
	Gate gate.Gate
	// Slots pace snapshot starts: a snapshot Job is created only with a
	// slot, held until the snapshot ends. Nil means no pacing.
	Slots gate.Slots
	// Rollouts pace planned rolls (version upgrades, re-templates) across
	// the fleet: a roll takes its next step only with its place. Nil
	// means no pacing.
	Rollouts gate.Rollouts
	// Paused reports whether destructive actions are suspended in this
	// cluster; nil means never.
	Paused func() bool
	// Context ends when the cluster is disengaged; reconciles in flight for
	// it are cancelled with it. Nil means never.
	Context context.Context
}

// RolloutsOrAllowAll returns c's Rollouts, or gate.AllowAllRollouts.
func (c *Cluster) RolloutsOrAllowAll() gate.Rollouts {
	if c.Rollouts == nil {
		return gate.AllowAllRollouts{}
	}
	return c.Rollouts
}

// IsPaused reports whether destructive actions are suspended.
func (c *Cluster) IsPaused() bool { return c.Paused != nil && c.Paused() }

// Source finds the Cluster a reconcile request belongs to.
type Source interface {
	Cluster(ctx context.Context, name string) (*Cluster, error)
}

// Static is the Source of a single-cluster operator.
type Static struct{ C *Cluster }

// Cluster implements Source.
func (s Static) Cluster(_ context.Context, name string) (*Cluster, error) {
	if name != s.C.Name {
		return nil, fmt.Errorf("unknown cluster %q", name)
	}
	return s.C, nil
}

// Bind returns ctx cancelled also when the cluster is disengaged, so an
// in-flight reconcile for a removed cluster stops at its next API call.
func (c *Cluster) Bind(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if c.Context == nil {
		return ctx, cancel
	}
	stop := context.AfterFunc(c.Context, cancel)
	return ctx, func() { stop(); cancel() }
}
