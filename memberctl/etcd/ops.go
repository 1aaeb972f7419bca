package etcd

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdfleet/etcdfleet/memberctl/etcdaccess"
)

// Timeouts of single calls. Reads are short: a healthy member answers in
// milliseconds even through port-forward, and a reconcile must not stall on
// a dead one. Membership changes wait for a raft round trip and an apply,
// which a loaded cluster can take seconds to do.
const (
	listTimeout   = 5 * time.Second
	statusTimeout = 3 * time.Second
	changeTimeout = 10 * time.Second
)

// Member is one etcd member as MemberList reports it.
type Member struct {
	ID         uint64
	Name       string
	PeerURLs   []string
	ClientURLs []string
	IsLearner  bool
}

// Status is what one member says of itself.
type Status struct {
	MemberID  uint64
	Leader    uint64
	Version   string
	IsLearner bool
	Errors    []string
	// Revision is the keyspace revision the member has applied.
	Revision int64
	// DBSize is the size of the member's database file and DBSizeInUse the
	// part of it that holds data; the rest is what a defragmentation frees.
	DBSize      int64
	DBSizeInUse int64
	// QuotaBytes is the backend quota the member enforces (etcd 3.6+
	// reports it; 0 from an older member).
	QuotaBytes int64
	// RaftAppliedIndex is the last raft entry the member applied.
	RaftAppliedIndex uint64
	// RaftIndex is the last raft entry the member knows committed; of
	// two members without quorum, the one with the higher index saw more
	// of the log.
	RaftIndex uint64
	// Alarms are the cluster's active alarms as this member knows them.
	Alarms []Alarm
	// StorageVersion is the major.minor.0 of the member's storage schema
	// (etcd 3.6+): during a downgrade, the member's own data is ready for
	// the older binary once it equals the target.
	StorageVersion string
	// DowngradeTarget is the cluster version etcd's downgrade is enabled
	// towards ("3.6.0"), "" when none is.
	DowngradeTarget string
}

// Alarm is one active etcd alarm: its type (NOSPACE, CORRUPT) and the
// member that raised it.
type Alarm struct {
	Type     string
	MemberID uint64
}

// Target names an etcd cluster to call and where to reach it.
type Target struct {
	// Key identifies the client in the pool (e.g. "<cluster>/<ns>/<name>").
	Key       string
	Endpoints []string
	TLS       *tls.Config
}

// Interface is what reconcilers call.
type Interface interface {
	MemberList(ctx context.Context, t Target) (clusterID uint64, members []Member, err error)
	AddLearner(ctx context.Context, t Target, peerURL string) (added Member, members []Member, err error)
	Promote(ctx context.Context, t Target, id uint64) error
	Remove(ctx context.Context, t Target, id uint64) error
	// Status asks one endpoint (of t.Endpoints or not) about itself.
	Status(ctx context.Context, t Target, endpoint string) (Status, error)
	// Warm starts connecting to one endpoint that a Status call will
	// soon ask, and returns without waiting for it; best effort.
	Warm(ctx context.Context, t Target, endpoint string)
	// MoveLeader asks the leader, at leaderEndpoint, to hand leadership to
	// the voter to. etcd refuses the call at any other member (ErrNotLeader),
	// so it is sent to that one endpoint, not balanced over t's.
	MoveLeader(ctx context.Context, t Target, leaderEndpoint string, to uint64) error
	// Forget drops the pooled client of a deleted etcd cluster.
	Forget(key string)
}

// Ops implements Interface over a ClientPool.
type Ops struct{ Pool *etcdaccess.ClientPool }

var _ Interface = (*Ops)(nil)

func (o *Ops) client(ctx context.Context, t Target) (*clientv3.Client, error) {
	return o.Pool.Get(ctx, t.Key, t.Endpoints, t.TLS)
}

// borrow is client for a call that dials one endpoint of its own: it
// leaves the pooled channel's endpoints as the cluster-wide calls set them.
func (o *Ops) borrow(ctx context.Context, t Target) (*clientv3.Client, error) {
	return o.Pool.Borrow(ctx, t.Key, t.Endpoints, t.TLS)
}

// MemberList implements Interface.
func (o *Ops) MemberList(ctx context.Context, t Target) (uint64, []Member, error) {
	c, err := o.client(ctx, t)
	if err != nil {
		return 0, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	resp, err := c.MemberList(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("member list: %w", err)
	}
	return resp.Header.ClusterId, convert(resp.Members), nil
}

// AddLearner implements Interface.
func (o *Ops) AddLearner(ctx context.Context, t Target, peerURL string) (Member, []Member, error) {
	c, err := o.client(ctx, t)
	if err != nil {
		return Member{}, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, changeTimeout)
	defer cancel()
	resp, err := c.MemberAddAsLearner(ctx, []string{peerURL})
	if err != nil {
		return Member{}, nil, fmt.Errorf("add learner %s: %w", peerURL, err)
	}
	return convert([]*memberpb{resp.Member})[0], convert(resp.Members), nil
}

// Promote implements Interface.
func (o *Ops) Promote(ctx context.Context, t Target, id uint64) error {
	c, err := o.client(ctx, t)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, changeTimeout)
	defer cancel()
	if _, err := c.MemberPromote(ctx, id); err != nil {
		return fmt.Errorf("promote %016x: %w", id, err)
	}
	return nil
}

// Remove implements Interface.
func (o *Ops) Remove(ctx context.Context, t Target, id uint64) error {
	c, err := o.client(ctx, t)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, changeTimeout)
	defer cancel()
	if _, err := c.MemberRemove(ctx, id); err != nil {
		return fmt.Errorf("remove %016x: %w", id, err)
	}
	return nil
}

// Status implements Interface, on the member's kept connection
// (etcdaccess.ClientPool.Member): health looks and version reads ask
// every member often while a cluster heals or rolls.
func (o *Ops) Status(ctx context.Context, t Target, endpoint string) (Status, error) {
	m, err := o.Pool.Member(ctx, t.Key, t.Endpoints, t.TLS, endpoint)
	if err != nil {
		return Status{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	resp, err := etcdserverpb.NewMaintenanceClient(m.Conn).Status(ctx, &etcdserverpb.StatusRequest{}, m.CallOptions()...)
	m.Done(err)
	if err != nil {
		return Status{}, fmt.Errorf("status of %s: %w", endpoint, clientv3.ContextError(ctx, err))
	}
	return Status{MemberID: resp.Header.MemberId, Leader: resp.Leader, Version: resp.Version,
		IsLearner: resp.IsLearner, Errors: resp.Errors, Revision: resp.Header.Revision,
		DBSize: resp.DbSize, DBSizeInUse: resp.DbSizeInUse, QuotaBytes: resp.DbSizeQuota, RaftAppliedIndex: resp.RaftAppliedIndex,
		RaftIndex: resp.RaftIndex, Alarms: alarmsOf(resp.Errors), StorageVersion: resp.StorageVersion,
		DowngradeTarget: downgradeTarget(resp.DowngradeInfo)}, nil
}

// Warm implements Interface: it lends the member's kept connection and
// returns it at once, which starts the dial (the pool wakes a connection it
// lends) and arms its idle close.
func (o *Ops) Warm(ctx context.Context, t Target, endpoint string) {
	if m, err := o.Pool.Member(ctx, t.Key, t.Endpoints, t.TLS, endpoint); err == nil {
		m.Done(nil)
	}
}

// MoveLeader implements Interface. The client's own MoveLeader goes to
// whichever endpoint its balancer picks; Dial pins one endpoint, through
// the pool's dialer and TLS, as Status does.
func (o *Ops) MoveLeader(ctx context.Context, t Target, leaderEndpoint string, to uint64) error {
	c, err := o.borrow(ctx, t)
	if err != nil {
		return err
	}
	conn, err := c.Dial(leaderEndpoint)
	if err != nil {
		return fmt.Errorf("dial leader %s: %w", leaderEndpoint, err)
	}
	defer func() { _ = conn.Close() }()
	// A transfer waits for the transferee to catch up and win an election:
	// a raft round trip or two, like a membership change.
	ctx, cancel := context.WithTimeout(ctx, changeTimeout)
	defer cancel()
	if _, err := etcdserverpb.NewMaintenanceClient(conn).MoveLeader(ctx, &etcdserverpb.MoveLeaderRequest{TargetID: to}); err != nil {
		return fmt.Errorf("move leader from %s to %016x: %w", leaderEndpoint, to, rpctypes.Error(err))
	}
	return nil
}

// Forget implements Interface.
func (o *Ops) Forget(key string) { o.Pool.Forget(key) }
