package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// RecoverySpec says what etcdfleet may do on its own when the cluster's
// data is gone.
type RecoverySpec struct {
	// restoreOnTotalLoss re-bootstraps the cluster from its newest Complete
	// EtcdSnapshot when every member's data is provably gone (every member
	// of a memory cluster lost its tmpfs, or every PVC of a PVC cluster is
	// gone) and no member answers. Everything written after that snapshot
	// is lost. Never done while any member with data survives. Off by
	// default: the cluster then stays down with TotalLoss=True until a
	// person acts.
	// +optional
	RestoreOnTotalLoss bool `json:"restoreOnTotalLoss,omitempty"`

	// nodeLossTimeout is how long a member's Pod may stay terminating past
	// its deletion deadline before its node counts as lost: the kubelet
	// that should finish the Pod is gone (a node that never came back
	// after a power event, evicted by the taint manager). The member is
	// then replaced on another node by a new member with a new ID (and,
	// for PVC members, a new, empty claim; the old claim goes with the old
	// member), only while quorum holds without it, through the shared
	// replacement rate limiter. Default: 5m for memory members, whose data
	// is gone with the node anyway; off for PVC members, since a claim on
	// a node-local volume comes back with its node. "0s" turns it off.
	// +optional
	NodeLossTimeout *metav1.Duration `json:"nodeLossTimeout,omitempty"`

	// quorumLoss says what etcdfleet does when a majority of the members
	// lost their data for good while one or more survive with theirs
	// (Available=False, reason MajorityLost). Manual (the default) names
	// the state and changes nothing: a person decides, and may ask for a
	// recovery once with the annotation
	// etcd.etcdfleet.io/recover-from-survivor. FromSurvivor recovers on its
	// own: the surviving member with the highest raft index, then
	// revision, becomes a new one-member cluster holding its data, and the
	// others join it again as new members. Writes acknowledged by the lost
	// members only are lost; everything the survivor holds is kept. It is
	// refused (QuorumRecovery=False, reason SurvivorRecoveryRefused) while
	// any member that is not provably lost does not answer: it may come
	// back with newer data.
	// +optional
	// +kubebuilder:default=Manual
	QuorumLoss QuorumLossPolicy `json:"quorumLoss,omitempty"`
}

// QuorumLossPolicy is spec.recovery.quorumLoss.
// +kubebuilder:validation:Enum=Manual;FromSurvivor
type QuorumLossPolicy string

const (
	// QuorumLossManual: a lost majority is named, and a person acts.
	QuorumLossManual QuorumLossPolicy = "Manual"
	// QuorumLossFromSurvivor: a lost majority is recovered from the
	// survivor with the newest data.
	QuorumLossFromSurvivor QuorumLossPolicy = "FromSurvivor"
)

// RecoversFromSurvivor reports whether spec.recovery.quorumLoss is
// FromSurvivor.
func (r *RecoverySpec) RecoversFromSurvivor() bool {
	return r != nil && r.QuorumLoss == QuorumLossFromSurvivor
}

// DefaultMemoryNodeLossTimeout is spec.recovery.nodeLossTimeout of
// memory members when unset: the taint manager evicts etcdfleet's Pods 5
// minutes after their node stops answering (their tolerations), and 5
// more minutes without the kubelet finishing the Pod leave no doubt.
const DefaultMemoryNodeLossTimeout = 5 * time.Minute

// NodeLossTimeoutFor returns spec.recovery.nodeLossTimeout for a member on
// medium, with its default; zero means off.
func (r *RecoverySpec) NodeLossTimeoutFor(medium StorageMedium) time.Duration {
	if r != nil && r.NodeLossTimeout != nil {
		return r.NodeLossTimeout.Duration
	}
	if medium == StorageMediumMemory {
		return DefaultMemoryNodeLossTimeout
	}
	return 0
}

// RecoveryPhase is where an automatic restore after total loss is.
// +kubebuilder:validation:Enum=Restoring;Restored
type RecoveryPhase string

const (
	// RecoveryRestoring: decided; the old members are being removed, then
	// a seed restored from the snapshot forms a new cluster.
	RecoveryRestoring RecoveryPhase = "Restoring"
	// RecoveryRestored: the restored seed formed the new cluster.
	RecoveryRestored RecoveryPhase = "Restored"
)

// ObservedRevision is the newest keyspace revision the cluster controller
// saw, and when. It bounds what a restore after total loss loses.
type ObservedRevision struct {
	Revision int64       `json:"revision"`
	At       metav1.Time `json:"at"`
}

// RecoveredMember is a member of the lost cluster, removed by a recovery.
type RecoveredMember struct {
	Name string    `json:"name"`
	UID  types.UID `json:"uid"`
}

// RecoveryStatus is the last automatic restore after total loss, or
// recovery from a survivor after a lost majority. It is
// written, with the resourceVersion read, before anything is removed, so
// a manager restarted mid-recovery resumes it and never restores twice.
type RecoveryStatus struct {
	// phase is Restoring until the restored seed formed the new cluster.
	Phase RecoveryPhase `json:"phase"`
	// fromSurvivor is the member whose data was restored, for a recovery
	// from a survivor after a lost majority; empty for a restore after
	// total loss.
	// +optional
	FromSurvivor string `json:"fromSurvivor,omitempty"`
	// startedAt is when total loss was decided; completedAt when the new
	// cluster formed.
	StartedAt metav1.Time `json:"startedAt"`
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// previousClusterID is the lost cluster's ID; clusterID the new one.
	// +optional
	PreviousClusterID string `json:"previousClusterID,omitempty"`
	// +optional
	ClusterID string `json:"clusterID,omitempty"`
	// source is the snapshot restored: location, sha256 (checked on
	// download), EtcdSnapshot name and revision.
	Source MemberRestore `json:"source"`
	// uri of the snapshot, s3://<bucket>/<key> or pvc://<claim>/<path>.
	URI string `json:"uri"`
	// snapshotCompletedAt is when the snapshot completed.
	// +optional
	SnapshotCompletedAt *metav1.Time `json:"snapshotCompletedAt,omitempty"`
	// lastObserved is the newest revision seen of the lost cluster.
	// +optional
	LastObserved *ObservedRevision `json:"lastObserved,omitempty"`
	// lostRevisions is lastObserved.revision minus the snapshot's revision:
	// at least this many revisions (writes) are not in the restored data;
	// writes after the last observation are unknown. 0 when not known.
	// +optional
	LostRevisions int64 `json:"lostRevisions,omitempty"`
	// lostWindow is the time from the snapshot to lastObserved.at: at least
	// this much recent history is not in the restored data.
	// +optional
	LostWindow *metav1.Duration `json:"lostWindow,omitempty"`
	// replacedMembers are the members of the lost cluster, removed without
	// telling etcd (there is no etcd left to tell).
	// +optional
	// +listType=atomic
	ReplacedMembers []RecoveredMember `json:"replacedMembers,omitempty"`
}

// Replaced reports whether the member is one the recovery removes.
func (r *RecoveryStatus) Replaced(uid types.UID) bool {
	if r == nil || r.Phase != RecoveryRestoring {
		return false
	}
	for _, m := range r.ReplacedMembers {
		if m.UID == uid {
			return true
		}
	}
	return false
}

// Total loss: the TotalLoss condition of an EtcdCluster and its reasons.
const (
	// ConditionTotalLoss is True while every member's data is provably
	// gone, and False (Restored) once a restore brought the cluster back.
	ConditionTotalLoss = "TotalLoss"
	// ReasonClaimsLostPending (Unknown): every member's data looks gone,
	// but some of the proof is a claim in phase Lost, which counts only
	// once it has lasted the grace period (the condition's
	// lastTransitionTime tells since when).
	ReasonClaimsLostPending = "ClaimsLostPending"
	// ReasonRestoreNotEnabled (True): spec.recovery.restoreOnTotalLoss is
	// off; a person must act.
	ReasonRestoreNotEnabled = "RestoreNotEnabled"
	// ReasonNoSnapshot (True): the opt-in is on but the cluster has no
	// Complete EtcdSnapshot to restore from.
	ReasonNoSnapshot = "NoSnapshot"
	// ReasonVerifyingSnapshot (True): the snapshot to restore is being
	// read back where it is stored (size, sha256) before anything is
	// removed.
	ReasonVerifyingSnapshot = "VerifyingSnapshot"
	// ReasonNoVerifiedSnapshot (True): no Complete EtcdSnapshot of the
	// cluster is stored as it recorded (each object missing or changed);
	// nothing was restored or removed.
	ReasonNoVerifiedSnapshot = "NoVerifiedSnapshot"
	// ReasonRestoringAfterTotalLoss (True): the restore is under way.
	ReasonRestoringAfterTotalLoss = "RestoringAfterTotalLoss"
	// ReasonRestoredAfterTotalLoss (False): the restored cluster formed.
	ReasonRestoredAfterTotalLoss = "RestoredAfterTotalLoss"
)

// AnnotationRecoverFromSurvivor, set on an EtcdCluster, asks once for a
// recovery from a survivor after a lost majority (MajorityLost), whatever
// spec.recovery.quorumLoss says: its value is the EtcdMember to recover
// from, or RecoverFromSurvivorAuto (or "auto-" and any suffix) for the
// survivor with the newest data. The same refusals apply as to quorumLoss
// FromSurvivor. Once a recovery is decided on it, its value is recorded
// in status.recoverFromSurvivorHandled and it asks nothing more: a later
// incident needs another value (auto-2, ...). While the cluster has
// quorum it does nothing.
const AnnotationRecoverFromSurvivor = GroupName + "/recover-from-survivor"

// RecoverFromSurvivorAuto is the AnnotationRecoverFromSurvivor value that
// lets the controller choose the survivor; "auto-" and any suffix does too.
const RecoverFromSurvivorAuto = "auto"

// Recovery from a survivor: the QuorumRecovery condition of an EtcdCluster
// and its reasons.
const (
	// ConditionQuorumRecovery is set while a majority is lost and a
	// recovery from a survivor is asked for (spec.recovery.quorumLoss
	// FromSurvivor, or the annotation): False while it is refused, True
	// while it runs.
	ConditionQuorumRecovery = "QuorumRecovery"
	// ReasonSurvivorRecoveryRefused (False, and a Warning Event): the
	// recovery would risk data that may come back, or cannot be done;
	// the message says why and what to do. Nothing was changed.
	ReasonSurvivorRecoveryRefused = "SurvivorRecoveryRefused"
	// ReasonRecoveringFromSurvivor (True, and a Warning Event): the
	// survivor was chosen; the message names it with its raft index and
	// revision.
	ReasonRecoveringFromSurvivor = "RecoveringFromSurvivor"
	// ReasonRecoveredFromSurvivor (False, and a Normal Event): the
	// survivor's data formed the new cluster; status.recovery says what
	// was restored.
	ReasonRecoveredFromSurvivor = "RecoveredFromSurvivor"
)
