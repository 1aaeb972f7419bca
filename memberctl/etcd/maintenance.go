package etcd

import (
	"context"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefragmentTimeout bounds one Defragment call. etcd rewrites the live part
// of the member's database into a new file and blocks the member meanwhile;
// at the disk speeds etcd asks for that is some seconds per GiB, and etcd's
// default quota is 2 GiB. The bound stays under the manager's default
// reconcile timeout (a minute), which would cut the call anyway, so that the
// outcome is recorded by the reconcile that made it. A call that times out
// has not necessarily failed: etcd finishes the rewrite regardless.
const DefragmentTimeout = 45 * time.Second

// Maintainer makes the maintenance calls that block one member while they
// run. Ops implements it; it is apart from Interface so that stubs of
// Interface need not.
type Maintainer interface {
	// Defragment rewrites the database of the member at endpoint.
	Defragment(ctx context.Context, t Target, endpoint string) error
	// DisarmNoSpace clears the cluster's NOSPACE alarms and returns how
	// many it cleared. etcd refuses writes while one is raised, even once a
	// defragmentation has brought the database back under its quota; if it
	// is still over, the next write raises the alarm again.
	DisarmNoSpace(ctx context.Context, t Target) (int, error)
}

var _ Maintainer = (*Ops)(nil)

// Defragment implements Maintainer.
func (o *Ops) Defragment(ctx context.Context, t Target, endpoint string) error {
	c, err := o.borrow(ctx, t)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, DefragmentTimeout)
	defer cancel()
	if _, err := c.Defragment(ctx, endpoint); err != nil {
		return fmt.Errorf("defragment %s: %w", endpoint, err)
	}
	return nil
}

// DisarmNoSpace implements Maintainer. Each alarm is disarmed by member,
// as listed: disarming "every alarm" would also clear a CORRUPT one,
// which must stay until someone has looked at the member.
func (o *Ops) DisarmNoSpace(ctx context.Context, t Target) (int, error) {
	c, err := o.client(ctx, t)
	if err != nil {
		return 0, err
	}
	// A disarm is a raft proposal, like a membership change.
	ctx, cancel := context.WithTimeout(ctx, changeTimeout)
	defer cancel()
	resp, err := c.AlarmList(ctx)
	if err != nil {
		return 0, fmt.Errorf("alarm list: %w", err)
	}
	n := 0
	for _, a := range resp.Alarms {
		if a.Alarm != etcdserverpb.AlarmType_NOSPACE {
			continue
		}
		if _, err := c.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: a.MemberID, Alarm: a.Alarm}); err != nil {
			return n, fmt.Errorf("disarm the NOSPACE alarm of member %016x: %w", a.MemberID, err)
		}
		n++
	}
	return n, nil
}
