package gate

import (
	"context"
	"time"
)

// Action is the kind of destructive action a Request asks for.
type Action string

const (
	// TerminalPodDelete deletes a Pod left Succeeded or Failed so it can be
	// recreated on the same PVC with the same member ID.
	TerminalPodDelete Action = "TerminalPodDelete"
	// CrashLoopReplace replaces a member whose etcd container keeps crashing.
	CrashLoopReplace Action = "CrashLoopReplace"
	// PodLossReplace replaces a memory-backed member whose Pod is gone.
	PodLossReplace Action = "PodLossReplace"
	// NodeLossReplace replaces a member whose Pod is stuck terminating on
	// a node whose kubelet is gone.
	NodeLossReplace Action = "NodeLossReplace"
	// TotalLossRestore re-bootstraps an etcd cluster whose every member lost
	// its data from a snapshot; Member is empty.
	TotalLossRestore Action = "TotalLossRestore"
	// SurvivorRecovery re-bootstraps an etcd cluster that lost a majority
	// of its members for good from a snapshot of the survivor with the
	// newest data, removing every old member (the survivor too); Member
	// is the survivor.
	SurvivorRecovery Action = "SurvivorRecovery"
	// VersionRoll restarts a healthy member's Pod at another etcd version
	// (a rolling upgrade): planned, not a heal. A PVC member's Pod is
	// recreated on its claim with its member ID; a memory member is
	// replaced by a new member.
	VersionRoll Action = "VersionRoll"
	// TemplateRoll restarts a healthy member's Pod on a new Pod template
	// (resources, affinity, topology spread, etcd options): planned, not a
	// heal, carried out like a VersionRoll.
	TemplateRoll Action = "TemplateRoll"
	// Defrag defragments one member, which serves nothing while it runs:
	// planned, not a heal.
	Defrag Action = "Defrag"
	// NoSpaceDefrag defragments one member of a cluster that raised
	// NOSPACE and refuses writes until the space is freed: a heal.
	NoSpaceDefrag Action = "NoSpaceDefrag"
)

// Planned reports whether a is maintenance asked for by a user (a roll of
// a version or a template, a defragmentation) rather than a heal of
// something broken. A shared Gate serves heals
// first: a fleet reboot in the middle of an upgrade wave heals every
// cluster before the wave takes another token.
func (a Action) Planned() bool {
	return a == VersionRoll || a == TemplateRoll || a == Defrag
}

// Request identifies one destructive action.
type Request struct {
	// Cluster is the workload cluster's name in the fleet; empty for a
	// single-cluster operator.
	Cluster string
	// Namespace, EtcdCluster and Member name the etcd member.
	Namespace   string
	EtcdCluster string
	Member      string
	Action      Action
	// QuorumLost is true when the member's etcd cluster has no quorum now
	// and this member is among those that give it back: the members
	// already on their way back (granted, or a new Pod starting) are no
	// majority without it. Such requests are served first when tokens are
	// scarce, so that after a fleet reboot every cluster regains quorum
	// before any cluster gets its remaining members.
	QuorumLost bool
	// Quorum is what the asker of a QuorumLost request saw of its etcd
	// cluster; nil when it did not say. A shared gate that grants other
	// members of the same etcd cluster meanwhile counts them too, so that
	// a request stops going first as soon as the grants already made give
	// its cluster a majority back, not only when its asker sees them on
	// its next ask (which may be seconds later).
	Quorum *QuorumView
}

// QuorumView is an etcd cluster's quorum as one member's asker saw it.
type QuorumView struct {
	// Majority is how many voters make a quorum.
	Majority int
	// Counted names the other voters (EtcdMember names) that were up or
	// on their way back.
	Counted []string
}

// Decision answers a Request.
type Decision struct {
	// Delay is zero when the caller may act now. Otherwise the caller must
	// requeue after Delay and ask again; it must not block waiting.
	Delay time.Duration
	// Cancel returns an unused grant, for when the caller was allowed to act
	// but did not (for example, its status write failed). Never nil.
	Cancel func()
	// Reason says, in a sentence a user reads on the waiting object's
	// condition, why the caller waits (which limit or cap holds it);
	// empty when it may act now or when the gate does not say.
	Reason string
}

// Gate is asked before every destructive action.
type Gate interface {
	Reserve(ctx context.Context, r Request) Decision
}

// AllowAll is the default Gate: everything may proceed at once.
type AllowAll struct{}

// Reserve implements Gate.
func (AllowAll) Reserve(context.Context, Request) Decision {
	return Decision{Cancel: func() {}}
}
