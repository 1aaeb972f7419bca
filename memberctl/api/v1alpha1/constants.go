package v1alpha1

import (
	"k8s.io/apimachinery/pkg/labels"
)

// Label keys and values put on every object the operator creates for a
// cluster (Services, PDB) or a member (PVC, Pod).
const (
	// LabelName is app.kubernetes.io/name; its value is always LabelNameValue.
	LabelName = "app.kubernetes.io/name"
	// LabelNameValue is the value of LabelName.
	LabelNameValue = "etcd"
	// LabelInstance is app.kubernetes.io/instance=<EtcdCluster name>.
	LabelInstance = "app.kubernetes.io/instance"
	// LabelManagedBy is app.kubernetes.io/managed-by; its value is always ManagedByValue.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy.
	ManagedByValue = "etcdfleet"
	// LabelComponent is app.kubernetes.io/component=<EtcdMember name>, on member objects only.
	LabelComponent = "app.kubernetes.io/component"
	// LabelCluster is etcd.etcdfleet.io/cluster=<EtcdCluster name>.
	LabelCluster = GroupName + "/cluster"
	// LabelRole is etcd.etcdfleet.io/role; it is set to RoleVoter on the Pods
	// of voting members (the PDB selects on it) and absent otherwise.
	LabelRole = GroupName + "/role"
	// RoleVoter is the value of LabelRole on voter Pods.
	RoleVoter = "voter"

	// ManagedBySelector is a label selector matching every object the
	// operator creates. Caches for Pods, PVCs, Services and PDBs can be
	// narrowed with it (labels.Parse(ManagedBySelector) or
	// ManagedByLabelSelector()).
	ManagedBySelector = LabelManagedBy + "=" + ManagedByValue
)

// FinalizerMemberCleanup is put on every EtcdMember. The member controller
// removes the member from etcd (MemberRemove) before releasing it.
const FinalizerMemberCleanup = GroupName + "/member-cleanup"

// AnnotationReplaceNow, set on an EtcdMember, asks the member controller to
// replace the member's Pod once, bypassing backoff (but not the shared
// replacement gate). Any new value triggers one more replacement; the value
// last acted on is recorded in status.replacement.replaceNowHandled.
const AnnotationReplaceNow = GroupName + "/replace-now"

// AnnotationTemplateHash, on a member's Pod, is the hash of the part of the
// EtcdMember spec a rolling re-template changes (resources, affinity,
// topologySpreadConstraints, options) that the Pod was built from. The
// member controller restarts a Pod whose hash is not that of its member's
// spec now; the Pod spec itself is immutable.
const AnnotationTemplateHash = GroupName + "/template-hash"

// Defaults applied by the API server (kept in sync with the +kubebuilder:default markers).
const (
	DefaultReplicas                int32 = 3
	DefaultStorageSize                   = "1Gi"
	DefaultProgressDeadlineSeconds int32 = 600
)

// EtcdCluster condition types.
const (
	// ConditionAvailable is True while the cluster serves requests with quorum.
	ConditionAvailable = "Available"
	// ConditionProgressing is True while the cluster is moving towards its spec.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True while some member is unhealthy or quorum is lost.
	ConditionDegraded = "Degraded"
	// ConditionReplacementsExhausted (also an EtcdMember condition) is True
	// on an EtcdCluster while the cap of its crash-loop and pod-loss
	// replacements is reached and no member of it is replaced that way.
)

// EtcdMember condition types.
const (
	// ConditionReady is True when the member's Pod is ready and its etcd member ID is known.
	ConditionReady = "Ready"
	// ConditionReplacementsExhausted is True while the replacement cap for the
	// current window is reached and the member controller no longer replaces the Pod.
	ConditionReplacementsExhausted = "ReplacementsExhausted"
	// ConditionVersionDrifted is True when the running etcd version differs
	// from spec.version. Informational only. It is an EtcdCluster condition
	// too: True while its running members report different versions, or
	// one other than the cluster's spec.version.
	ConditionVersionDrifted = "VersionDrifted"
)

// Version conditions and reasons of the EtcdCluster. VersionDrifted uses
// the member's reasons VersionMismatch and VersionMatched as well.
const (
	// ConditionUpgradeBlocked is True while spec.version differs from what
	// the members run and etcd does not allow that change (the rules are
	// memberctl/upgrade's), or it is a minor downgrade, which needs etcd's
	// downgrade API that etcdfleet does not drive yet. No member is
	// changed, and new members keep the running version meanwhile, so a
	// refused change never mixes versions.
	ConditionUpgradeBlocked = "UpgradeBlocked"
	// ReasonUpgradePathRefused (UpgradeBlocked=True, and a Warning Event
	// UpgradeBlocked): the message names etcd's rule and the next step.
	ReasonUpgradePathRefused = "UpgradePathRefused"
	// ConditionDowngradeEnabled is True while etcd's downgrade API is
	// enabled for a minor downgrade this operator drives (reason
	// DowngradeInProgress): the cluster version is the lower minor, and the
	// members are rolled to it. Removed once etcd ends the downgrade (every
	// member runs the lower minor) or it is cancelled (spec.version no
	// longer asks for it).
	ConditionDowngradeEnabled = "DowngradeEnabled"
	// ReasonDowngradeInProgress (DowngradeEnabled=True).
	ReasonDowngradeInProgress = "DowngradeInProgress"
	// ReasonUpgradePathAllowed (UpgradeBlocked=False): every member runs
	// spec.version, or etcd allows the change from what runs to it.
	ReasonUpgradePathAllowed = "UpgradePathAllowed"
	// ReasonVersionsUnknown (VersionDrifted and UpgradeBlocked Unknown): no
	// running member has reported its etcd version yet.
	ReasonVersionsUnknown = "VersionsUnknown"
)

// EtcdCluster condition reasons.
const (
	// ReasonQuorumHealthy (Available=True, Degraded=False): every voter is ready.
	ReasonQuorumHealthy = "QuorumHealthy"
	// ReasonQuorumAvailable (Available=True): quorum holds but some voter is not ready.
	ReasonQuorumAvailable = "QuorumAvailable"
	// ReasonClusterDiscovered (Available=True): the cluster ID was just latched.
	ReasonClusterDiscovered = "ClusterDiscovered"
	// ReasonQuorumLost (Available=False, Degraded=True): a majority of voters is not ready.
	ReasonQuorumLost = "QuorumLost"
	// ReasonMajorityLost (Available=False, Degraded=True, and a Warning
	// Event): etcd does not answer, a majority of the members provably
	// lost their data and at least one may still hold it. Quorum cannot
	// come back on its own, and total-loss restore does not apply while a
	// member survives; the message names the lost members, how each is
	// known lost, and the survivors with their revision.
	ReasonMajorityLost = "MajorityLost"
	// ReasonClusterUnreachable (Available=False): etcd could not be dialled.
	ReasonClusterUnreachable = "ClusterUnreachable"
	// ReasonBootstrapFailed (Available=False, Progressing=False): terminal.
	ReasonBootstrapFailed = "BootstrapFailed"
	// ReasonDeadlineExceeded (Available=False, Progressing=False): the
	// progress deadline passed; terminal until status.progressDeadline is patched.
	ReasonDeadlineExceeded = "DeadlineExceeded"
	// ReasonPaused: replicas is 0 (cluster) or the member is dormant (member).
	ReasonPaused = "Paused"
	// ReasonInitialSnapshot (Progressing=True): status.observed was latched for the first time.
	ReasonInitialSnapshot = "InitialSnapshot"
	// ReasonSpecChanged (Progressing=True): the spec changed since it was latched.
	ReasonSpecChanged = "SpecChanged"
	// ReasonWaitingForSeed (Progressing=True): the bootstrap member is not ready yet.
	ReasonWaitingForSeed = "WaitingForSeed"
	// ReasonRetryAfterDeadline (Progressing=True): a user reset the progress deadline.
	ReasonRetryAfterDeadline = "RetryAfterDeadline"
	// ReasonReconciled (Progressing=False): the cluster matches its latched spec.
	ReasonReconciled = "Reconciled"
	// ReasonMembersUnhealthy (Degraded=True): some member is not ready.
	ReasonMembersUnhealthy = "MembersUnhealthy"
	// ReasonUpgrading (Progressing=True): the members are being rolled to
	// spec.version one at a time, followers first and the leader last; the
	// message gives the progress ("1/3 members on etcd 3.7.3") and what the
	// roll does or waits for now.
	ReasonUpgrading = "Upgrading"
	// ReasonRolling (Progressing=True): spec.version is unchanged, but the
	// members are rolled one at a time, in the same order, onto the Pod
	// template of the spec (resources, affinity, topologySpreadConstraints,
	// options); the message gives the progress ("1/3 members on the current
	// Pod template") and what the roll does or waits for now.
	ReasonRolling = "Rolling"
)

// The snapshot taken before a roll when spec.backup is set.
const (
	// ConditionPreRollSnapshot says where the EtcdSnapshot taken before the
	// current (or last) roll stands: no member is rolled before it is
	// Complete. Set only on clusters with spec.backup.
	ConditionPreRollSnapshot = "PreRollSnapshot"
	// ReasonSnapshotTaken (PreRollSnapshot=True): the snapshot is Complete
	// and the roll goes ahead.
	ReasonSnapshotTaken = "SnapshotTaken"
	// ReasonTakingSnapshot (PreRollSnapshot=False): the snapshot is being
	// taken; the roll waits.
	ReasonTakingSnapshot = "TakingSnapshot"
	// ReasonSnapshotFailed (PreRollSnapshot=False, and a Warning Event
	// PreRollSnapshotFailed): the snapshot failed and the roll is held.
	// Delete the failed EtcdSnapshot to take another, or remove
	// spec.backup to roll without one.
	ReasonSnapshotFailed = "SnapshotFailed"
)

// The place of an EtcdCluster's roll in the fleet's rollout wave.
const (
	// ConditionInRollout is set while a roll (an upgrade or a re-template)
	// is under way and removed when it ends: True once the roll holds one
	// of the fleet's rollout places (a fleet manager lets
	// rollout.maxConcurrentClusters workload clusters roll at once),
	// False while it waits for one. A roll that holds its place keeps it
	// across manager restarts.
	ConditionInRollout = "InRollout"
	// ReasonPlaceHeld (InRollout=True): the roll holds its place and goes
	// on, one member at a time.
	ReasonPlaceHeld = "PlaceHeld"
	// ReasonWaitingForPlace (InRollout=False): the roll has not started;
	// the message says what it waits for: a free place, its turn, or a
	// wave paused by failed rolls elsewhere in the fleet.
	ReasonWaitingForPlace = "WaitingForPlace"
)

// Template conditions and reasons of the EtcdCluster.
const (
	// ConditionTemplateDrifted is True while some running member runs a Pod
	// built from another template than the spec's (resources, affinity,
	// topologySpreadConstraints, options): a re-template still to roll.
	ConditionTemplateDrifted = "TemplateDrifted"
	// ReasonTemplateMismatch (TemplateDrifted=True): the message counts the
	// members on an old template and names what differs.
	ReasonTemplateMismatch = "TemplateMismatch"
	// ReasonTemplateMatched (TemplateDrifted=False).
	ReasonTemplateMatched = "TemplateMatched"
	// ReasonTemplatesUnknown (TemplateDrifted=Unknown): some running
	// member has not reported the template of its Pod yet.
	ReasonTemplatesUnknown = "TemplatesUnknown"
)

// EtcdMember condition reasons.
const (
	// ReasonPodReady (Ready=True).
	ReasonPodReady = "PodReady"
	// ReasonPodNotReady (Ready=False); the message carries the Pod phase.
	ReasonPodNotReady = "PodNotReady"
	// ReasonDiscoveringMemberID (Ready=False): the Pod runs but the etcd member ID is not known yet.
	ReasonDiscoveringMemberID = "DiscoveringMemberID"
	// ReasonPodReplacing (Ready=False): the Pod is being deleted so that a new one replaces it.
	ReasonPodReplacing = "PodReplacing"
	// ReasonWaitingForPod (Ready=False): no Pod exists yet (created, waiting for
	// spec.initialCluster, backing off, or waiting on the replacement gate).
	ReasonWaitingForPod = "WaitingForPod"
	// ReasonCapReached (ReplacementsExhausted=True).
	ReasonCapReached = "CapReached"
	// ReasonCapReset (ReplacementsExhausted=False): a new window began.
	ReasonCapReset = "CapReset"
	// ReasonVersionMismatch (VersionDrifted=True).
	ReasonVersionMismatch = "VersionMismatch"
	// ReasonVersionMatched (VersionDrifted=False).
	ReasonVersionMatched = "VersionMatched"
)

// ClusterLabels returns the labels of the objects belonging to an
// EtcdCluster as a whole (Services, PDB). Each call returns a new map.
func ClusterLabels(cluster string) map[string]string {
	return map[string]string{
		LabelName:      LabelNameValue,
		LabelInstance:  cluster,
		LabelManagedBy: ManagedByValue,
		LabelCluster:   cluster,
	}
}

// MemberLabels returns ClusterLabels plus LabelComponent=<member>, for the
// PVC and Pod of one member. LabelRole is not included: it follows isVoter.
func MemberLabels(cluster, member string) map[string]string {
	l := ClusterLabels(cluster)
	l[LabelComponent] = member
	return l
}

// ClusterSelector returns the label selector string of an EtcdCluster's
// members (status.selector, used by the scale subresource).
func ClusterSelector(cluster string) string {
	return LabelCluster + "=" + cluster
}

// ManagedByLabelSelector returns ManagedBySelector as a labels.Selector.
func ManagedByLabelSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedByValue})
}

// MaxClusterNameLength is the longest EtcdCluster name (the CRD enforces
// it): its client Service is named <name>-client and its member Pods
// <name>-xxxxx, and both must be DNS-1035 labels of at most 63 characters.
const MaxClusterNameLength = 63 - len("-client")

// MaxReplicas is the largest spec.replicas the CRD admits: raft's write
// latency grows with every voter, and etcd recommends 3, 5 or 7.
const MaxReplicas = 9

// Restore-at-bootstrap reasons of the EtcdCluster.
const (
	// ReasonWaitingForRestoreSource (Progressing=True): spec.bootstrap.restore
	// names an EtcdSnapshot that does not exist or is not Complete yet; the
	// seed is not created before. A Failed snapshot is reported the same
	// way: the message says so, and the cluster must be recreated.
	ReasonWaitingForRestoreSource = "WaitingForRestoreSource"
	// ReasonRestored (Event): the seed formed a new cluster from a snapshot.
	ReasonRestored = "Restored"
)
