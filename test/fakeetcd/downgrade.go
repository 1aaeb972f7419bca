package fakeetcd

import (
	"context"
	"fmt"

	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

var _ etcd.Downgrader = (*Etcd)(nil)

// Downgrade records "Downgrade <action> <version>" and plays etcd's
// downgrade: Enable sets the target ("<major>.<minor>.0"), which Status then
// reports, and, unless HoldStorage was called, every member's storage
// version to it; Cancel clears the target; Validate checks nothing.
func (f *Etcd) Downgrade(_ context.Context, _ etcd.Target, action etcd.DowngradeAction, version string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Downgrade %s %s", action, version)
	if err := f.leaderErr(); err != nil {
		return err
	}
	switch action {
	case etcd.DowngradeEnable:
		if f.downgrade != "" {
			return fmt.Errorf("etcdserver: cluster has a downgrade job in progress")
		}
		f.downgrade = version + ".0"
		if !f.holdStorage {
			for _, m := range f.members {
				f.storage[m.Name] = f.downgrade
			}
		}
	case etcd.DowngradeCancel:
		if f.downgrade == "" {
			return fmt.Errorf("etcdserver: no inflight downgrade job")
		}
		f.downgrade = ""
	}
	return nil
}

// HoldStorage keeps Enable from changing the members' storage versions,
// as etcd does for a few seconds; SetStorageVersion then sets them.
func (f *Etcd) HoldStorage() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holdStorage = true
}

// SetStorageVersion makes Status of member name report storage version v.
func (f *Etcd) SetStorageVersion(name, v string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.storage[name] = v
}

// DowngradeTarget is the target of the enabled downgrade, "" when none is.
func (f *Etcd) DowngradeTarget() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.downgrade
}
