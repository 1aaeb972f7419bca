// Package fakeetcd is etcd as memberctl's reconcilers see it, in memory:
// an etcd.Interface whose member list AddLearner, Promote and Remove
// change as etcd would, with per-member health and injectable failures,
// recording every membership call. The envtest suites of memberctl/etcdcluster and
// memberctl/etcdmember use it to test the reconcilers' decisions; the
// sandbox e2e suites run real etcd.
//
// # Usage
//
//	f := fakeetcd.New()
//	cl := &workload.Cluster{..., Etcd: f}
//	id, err := f.Start("ec-0", peerURL) // the first member bootstraps the cluster
//	f.SetDown("ec-0", true)             // its Status now fails
//	f.SetFail(errors.New("connection refused")) // every call fails
//
// # Implementation details
//
// Status answers for the member whose name is the first label of the
// endpoint's host (http://<member>.<cluster>.<ns>.svc:2379, as
// etcd.MemberClientURL builds it), when it is listed and not down; it
// reports the member's ID, the leader (the first voter, until MoveLeader
// moves it), version 3.6.16 (SetVersion changes it per member) and the
// revision set by SetRevision. The cluster ID starts as 0xc1a5, member IDs count up
// from 0x101.
package fakeetcd

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// Version is the etcd version Status reports.
const Version = "3.6.16"

// Etcd is one fake etcd cluster; it implements etcd.Interface. The zero
// value is not usable: call New.
type Etcd struct {
	mu        sync.Mutex
	clusterID uint64
	nextID    uint64
	members   []etcd.Member
	down      map[string]bool
	// fail, when set, is returned by every call.
	fail error
	// noQuorum, when set, is returned by every call that needs a leader
	// (SetNoQuorum).
	noQuorum error
	// promoteErrs are returned by the next Promote calls, in order.
	promoteErrs []error
	calls       []string
	forgotten   []string
	// listBudgets is, per MemberList call, the time its ctx had left
	// (NoDeadline without one).
	listBudgets []time.Duration
	// versions overrides Version by member name (SetVersion).
	versions map[string]string
	// statusBudgets is, per member name, the time each Status call's ctx
	// had left (NoDeadline without one); its length counts the calls.
	statusBudgets map[string][]time.Duration
	// warmed counts Warm calls by endpoint.
	warmed map[string]int
	// revision is the keyspace revision Status reports.
	revision int64
	// leader is the leader's member ID; 0 means the first voter listed.
	leader uint64
	// health overrides Status's health fields by member name (SetHealth).
	health map[string]etcd.Status
	// downgrade is the enabled downgrade's target, storage the members'
	// storage versions (downgrade.go).
	downgrade   string
	storage     map[string]string
	holdStorage bool
}

var _ etcd.Interface = (*Etcd)(nil)

// New returns an empty cluster with cluster ID 0xc1a5.
func New() *Etcd {
	return &Etcd{clusterID: 0xc1a5, nextID: 0x100, down: map[string]bool{}, statusBudgets: map[string][]time.Duration{}, versions: map[string]string{},
		storage: map[string]string{}}
}

// SetHealth makes Status of member name report st's leader, database
// sizes, quota, applied and raft index and alarms (its ID, version and revision
// stay the fake's own).
func (f *Etcd) SetHealth(name string, st etcd.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.health == nil {
		f.health = map[string]etcd.Status{}
	}
	f.health[name] = st
}

// StatusAsked returns how many Status calls named member name so far.
func (f *Etcd) StatusAsked(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.statusBudgets[name])
}

// Warm implements etcd.Interface: it only counts the call (Warmed).
func (f *Etcd) Warm(_ context.Context, _ etcd.Target, endpoint string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.warmed == nil {
		f.warmed = map[string]int{}
	}
	f.warmed[endpoint]++
}

// Warmed returns how often Warm was called for endpoint.
func (f *Etcd) Warmed(endpoint string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.warmed[endpoint]
}

func (f *Etcd) record(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

// Calls returns the MemberList, AddLearner, Promote, Remove and MoveLeader
// calls made so far, e.g. "AddLearner http://...".
func (f *Etcd) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// Forgotten returns the target keys Forget was called with, in order.
func (f *Etcd) Forgotten() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.forgotten...)
}

// ClusterID is the cluster ID MemberList reports.
func (f *Etcd) ClusterID() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.clusterID
}

// SetNoQuorum makes the calls that need a leader (MemberList,
// AddLearner, Promote, Remove, MoveLeader) fail with err, while Status
// still answers for each member that is not down, as a member without
// quorum does; nil ends that.
func (f *Etcd) SetNoQuorum(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noQuorum = err
}

// leaderErr is the error of a call that needs a leader.
func (f *Etcd) leaderErr() error {
	if f.fail != nil {
		return f.fail
	}
	return f.noQuorum
}

// SetFail makes every call fail with err; nil ends that.
func (f *Etcd) SetFail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = err
}

// SetDown marks the named member down (its Status fails) or up again.
func (f *Etcd) SetDown(name string, down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down[name] = down
}

// SetVersion makes Status report version for member name, as after the
// member was restarted on another etcd version.
func (f *Etcd) SetVersion(name, version string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.versions[name] = version
}

// SetRevision sets the keyspace revision Status reports.
func (f *Etcd) SetRevision(rev int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revision = rev
}

// SetPromoteErrs makes the next Promote calls return errs, one each, in
// order, before Promote succeeds again.
func (f *Etcd) SetPromoteErrs(errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.promoteErrs = append([]error(nil), errs...)
}

// Add lists a voter that is already a member, with the next member ID,
// and returns that ID.
func (f *Etcd) Add(name, peerURL string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	f.members = append(f.members, etcd.Member{ID: f.nextID, Name: name, PeerURLs: []string{peerURL}})
	return f.nextID
}

// AddMember lists m as given, e.g. someone else's member with its own ID.
func (f *Etcd) AddMember(m etcd.Member) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.members = append(f.members, m)
}

// KeepFirst drops every member but the first n from the list, as a
// membership changed behind the reconcilers' back.
func (f *Etcd) KeepFirst(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.members = f.members[:n]
}

// Rebootstrap replaces the cluster with a new, empty one of the given
// cluster ID, as a restore from a snapshot forms, and ends SetFail.
func (f *Etcd) Rebootstrap(clusterID uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.members, f.clusterID, f.fail = nil, clusterID, nil
}

// Start is what a member's etcd does when its Pod starts: the first one
// bootstraps a single-voter cluster, later ones take their name in the
// list, where AddLearner put their peer URL. It returns the member ID, or
// an error for a member that was never added to a formed cluster.
func (f *Etcd) Start(name, peerURL string) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.members {
		if f.members[i].PeerURLs[0] == peerURL {
			f.members[i].Name = name
			return f.members[i].ID, nil
		}
	}
	if len(f.members) > 0 {
		return 0, fmt.Errorf("member %s started without being added (the cluster has %d members)", name, len(f.members))
	}
	f.nextID++
	f.members = append(f.members, etcd.Member{ID: f.nextID, Name: name, PeerURLs: []string{peerURL}})
	return f.nextID, nil
}

// list is a deep copy of the member list; f.mu is held.
func (f *Etcd) list() []etcd.Member {
	out := make([]etcd.Member, len(f.members))
	for i, m := range f.members {
		m.PeerURLs = append([]string(nil), m.PeerURLs...)
		out[i] = m
	}
	return out
}

// NoDeadline is the budget ListBudgets reports for a call whose ctx had
// no deadline.
const NoDeadline = time.Duration(-1)

// ListBudgets returns, per MemberList call so far, how long its ctx had
// left when it was made: how long the caller would have waited on an
// etcd that does not answer.
func (f *Etcd) ListBudgets() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.listBudgets...)
}

// StatusBudgets returns, per Status call to member name so far, how long
// its ctx had left when it was made (as ListBudgets).
func (f *Etcd) StatusBudgets(name string) []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.statusBudgets[name]...)
}

// budgetOf is how long ctx has left; NoDeadline without a deadline.
func budgetOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d)
	}
	return NoDeadline
}

// MemberList returns the cluster ID and a copy of the member list.
func (f *Etcd) MemberList(ctx context.Context, t etcd.Target) (uint64, []etcd.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("MemberList %d", len(t.Endpoints))
	f.listBudgets = append(f.listBudgets, budgetOf(ctx))
	if err := f.leaderErr(); err != nil {
		return 0, nil, err
	}
	return f.clusterID, f.list(), nil
}

// AddLearner lists a learner with the next member ID and no name yet.
func (f *Etcd) AddLearner(_ context.Context, _ etcd.Target, peerURL string) (etcd.Member, []etcd.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("AddLearner %s", peerURL)
	if err := f.leaderErr(); err != nil {
		return etcd.Member{}, nil, err
	}
	f.nextID++
	m := etcd.Member{ID: f.nextID, PeerURLs: []string{peerURL}, IsLearner: true}
	f.members = append(f.members, m)
	return m, f.list(), nil
}

// Promote makes the learner id a voter, unless SetPromoteErrs queued an
// error for this call.
func (f *Etcd) Promote(_ context.Context, _ etcd.Target, id uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Promote %016x", id)
	if err := f.leaderErr(); err != nil {
		return err
	}
	if len(f.promoteErrs) > 0 {
		err := f.promoteErrs[0]
		f.promoteErrs = f.promoteErrs[1:]
		return err
	}
	for i := range f.members {
		if f.members[i].ID == id {
			f.members[i].IsLearner = false
			return nil
		}
	}
	return fmt.Errorf("member %016x not found", id)
}

// Remove drops member id from the list. An unknown id fails with etcd's
// "etcdserver: member not found", which the member finalizer treats as
// already removed.
func (f *Etcd) Remove(_ context.Context, _ etcd.Target, id uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Remove %016x", id)
	if err := f.leaderErr(); err != nil {
		return err
	}
	for i := range f.members {
		if f.members[i].ID == id {
			f.members = append(f.members[:i], f.members[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("etcdserver: member not found (%016x)", id)
}

// Status answers for a listed member that is not down (see the package
// documentation for how the endpoint names it).
func (f *Etcd) Status(ctx context.Context, _ etcd.Target, endpoint string) (etcd.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return etcd.Status{}, f.fail
	}
	name := memberName(endpoint)
	f.statusBudgets[name] = append(f.statusBudgets[name], budgetOf(ctx))
	for _, m := range f.members {
		if m.Name == name && !f.down[name] {
			v := Version
			if o, ok := f.versions[name]; ok {
				v = o
			}
			st := f.health[name]
			st.MemberID, st.Version, st.Revision = m.ID, v, f.revision
			st.StorageVersion, st.DowngradeTarget = f.storage[name], f.downgrade
			if st.Leader == 0 {
				st.Leader = f.leaderLocked()
			}
			return st, nil
		}
	}
	return etcd.Status{}, fmt.Errorf("status of %s: connection refused", endpoint)
}

// Leader returns the leader's member ID: the one MoveLeader moved it to
// while that one is listed, else the first voter; 0 with no voter.
func (f *Etcd) Leader() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leaderLocked()
}

func (f *Etcd) leaderLocked() uint64 {
	first := uint64(0)
	for _, m := range f.members {
		if m.IsLearner {
			continue
		}
		if m.ID == f.leader {
			return m.ID
		}
		if first == 0 {
			first = m.ID
		}
	}
	return first
}

// MoveLeader moves leadership to voter to, as etcd does, and only when
// asked at the leader's endpoint (etcd answers ErrNotLeader elsewhere).
func (f *Etcd) MoveLeader(_ context.Context, _ etcd.Target, leaderEndpoint string, to uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("MoveLeader %016x", to)
	if err := f.leaderErr(); err != nil {
		return err
	}
	name := memberName(leaderEndpoint)
	lead := f.leaderLocked()
	asked := false
	for _, m := range f.members {
		if m.ID == lead && m.Name == name && !f.down[name] {
			asked = true
		}
	}
	if !asked {
		return fmt.Errorf("move leader: etcdserver: not leader (asked %s)", leaderEndpoint)
	}
	for _, m := range f.members {
		if m.ID == to && !m.IsLearner {
			f.leader = to
			return nil
		}
	}
	return fmt.Errorf("move leader: etcdserver: bad leader transferee (%016x)", to)
}

func memberName(endpoint string) string {
	return strings.SplitN(strings.TrimPrefix(endpoint, "http://"), ".", 2)[0]
}

// Forget records key (see Forgotten).
func (f *Etcd) Forget(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forgotten = append(f.forgotten, key)
}
