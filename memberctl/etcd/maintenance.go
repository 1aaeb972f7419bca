package etcd

import (
	"context"
	"fmt"
	"time"
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
}

var _ Maintainer = (*Ops)(nil)

// Defragment implements Maintainer.
func (o *Ops) Defragment(ctx context.Context, t Target, endpoint string) error {
	c, err := o.client(ctx, t)
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
