package etcd

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// DowngradeAction is one call of etcd's downgrade API (etcd 3.6+).
type DowngradeAction string

const (
	// DowngradeValidate asks whether the cluster may go down to the target
	// minor; it changes nothing.
	DowngradeValidate DowngradeAction = "Validate"
	// DowngradeEnable lowers the cluster version to the target minor: etcd
	// then rewrites each member's storage schema to it, after which members
	// of the target minor may join, and cancels the downgrade by itself once
	// every member runs the target.
	DowngradeEnable DowngradeAction = "Enable"
	// DowngradeCancel stops a downgrade that is enabled: the cluster version
	// goes back to what its members run.
	DowngradeCancel DowngradeAction = "Cancel"
)

// Downgrader drives etcd's downgrade API. Ops implements it; it is apart
// from Interface so that stubs of Interface need not.
type Downgrader interface {
	// Downgrade makes one downgrade call towards version ("3.6" or "3.6.0").
	Downgrade(ctx context.Context, t Target, action DowngradeAction, version string) error
}

var _ Downgrader = (*Ops)(nil)

var downgradeActions = map[DowngradeAction]clientv3.DowngradeAction{
	DowngradeValidate: clientv3.DowngradeValidate,
	DowngradeEnable:   clientv3.DowngradeEnable,
	DowngradeCancel:   clientv3.DowngradeCancel,
}

// Downgrade implements Downgrader.
func (o *Ops) Downgrade(ctx context.Context, t Target, action DowngradeAction, version string) error {
	a, ok := downgradeActions[action]
	if !ok {
		return fmt.Errorf("unknown downgrade action %q", action)
	}
	c, err := o.client(ctx, t)
	if err != nil {
		return err
	}
	// Enable and Cancel are raft proposals, like a membership change.
	ctx, cancel := context.WithTimeout(ctx, changeTimeout)
	defer cancel()
	if _, err := c.Downgrade(ctx, a, version); err != nil {
		return fmt.Errorf("downgrade %s %s: %w", action, version, err)
	}
	return nil
}

// downgradeTarget is d's target when a downgrade is enabled, else "".
func downgradeTarget(d *etcdserverpb.DowngradeInfo) string {
	if d == nil || !d.Enabled {
		return ""
	}
	return d.TargetVersion
}
