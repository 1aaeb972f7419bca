package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// StorageMedium selects where a member keeps its data.
// +kubebuilder:validation:Enum="";Memory
type StorageMedium string

const (
	// StorageMediumDefault keeps the data on a PersistentVolumeClaim.
	StorageMediumDefault StorageMedium = ""
	// StorageMediumMemory keeps the data on a memory-backed emptyDir (tmpfs).
	// Such a member loses its data with its Pod and is replaced.
	StorageMediumMemory StorageMedium = "Memory"
)

// AutoCompactionMode is etcd's --auto-compaction-mode.
// +kubebuilder:validation:Enum=periodic;revision
type AutoCompactionMode string

const (
	AutoCompactionPeriodic AutoCompactionMode = "periodic"
	AutoCompactionRevision AutoCompactionMode = "revision"
)

// MemberRole is an etcd member's role as seen in MemberList.
// +kubebuilder:validation:Enum=Voter;Learner
type MemberRole string

const (
	MemberRoleVoter   MemberRole = "Voter"
	MemberRoleLearner MemberRole = "Learner"
)

// StorageSpec describes a member's data volume.
type StorageSpec struct {
	// size of the PVC, or the sizeLimit of the memory-backed emptyDir.
	// +optional
	// +kubebuilder:default="1Gi"
	Size resource.Quantity `json:"size,omitempty"`

	// medium is "" (a PersistentVolumeClaim) or "Memory" (tmpfs). Immutable.
	// +optional
	// +kubebuilder:default=""
	Medium StorageMedium `json:"medium,omitempty"`

	// storageClassName of the PVC; unset uses the default class. Immutable.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// ClientTLSSpec configures TLS on etcd's client port.
type ClientTLSSpec struct {
	// serverSecretRef names a kubernetes.io/tls Secret (with ca.crt) that
	// etcd serves client connections with.
	// +required
	ServerSecretRef corev1.LocalObjectReference `json:"serverSecretRef"`

	// operatorClientSecretRef names the client certificate the operator dials
	// etcd with. Setting it turns on client certificate authentication (mTLS).
	// +optional
	OperatorClientSecretRef *corev1.LocalObjectReference `json:"operatorClientSecretRef,omitempty"`
}

// PeerTLSSpec configures TLS between members. Peer TLS is always mutual.
type PeerTLSSpec struct {
	// secretRef names a kubernetes.io/tls Secret (with ca.crt) used for
	// both the peer server and peer client side.
	// +required
	SecretRef corev1.LocalObjectReference `json:"secretRef"`
}

// TLSSpec configures TLS. It is fixed at creation.
// +kubebuilder:validation:XValidation:rule="!has(self.client) || (has(self.client.serverSecretRef.name) && size(self.client.serverSecretRef.name) > 0)",message="tls.client.serverSecretRef.name must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.client) || !has(self.client.operatorClientSecretRef) || (has(self.client.operatorClientSecretRef.name) && size(self.client.operatorClientSecretRef.name) > 0)",message="tls.client.operatorClientSecretRef.name must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.peer) || (has(self.peer.secretRef.name) && size(self.peer.secretRef.name) > 0)",message="tls.peer.secretRef.name must be set"
type TLSSpec struct {
	// +optional
	Client *ClientTLSSpec `json:"client,omitempty"`
	// +optional
	Peer *PeerTLSSpec `json:"peer,omitempty"`
}

// EtcdOptions is the closed set of etcd flags a user may set.
type EtcdOptions struct {
	// quotaBackendBytes is --quota-backend-bytes; 0 uses etcd's default.
	// +optional
	// +kubebuilder:validation:Minimum=0
	QuotaBackendBytes *int64 `json:"quotaBackendBytes,omitempty"`

	// autoCompactionMode is --auto-compaction-mode.
	// +optional
	AutoCompactionMode AutoCompactionMode `json:"autoCompactionMode,omitempty"`

	// autoCompactionRetention is --auto-compaction-retention: a Go duration
	// such as "1h30m" (periodic) or an integer (hours for periodic, revisions for revision).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^(([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+|[0-9]+)$`
	AutoCompactionRetention string `json:"autoCompactionRetention,omitempty"`

	// snapshotCount is --snapshot-count.
	// +optional
	// +kubebuilder:validation:Minimum=1
	SnapshotCount *int64 `json:"snapshotCount,omitempty"`
}

// EtcdClusterSpec is the desired state of an etcd cluster.
//
// A change of resources, affinity, topologySpreadConstraints or options is
// rolled into the running members like a version change (see version):
// one member at a time, followers first, the leader last after leadership
// moved, each restart through the shared fleet gate after every heal; a
// PVC member keeps its ID, a memory member is replaced by a new one.
// TemplateDrifted is True meanwhile. storage.size applies to members
// created after the change only.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.replicas) && self.replicas == 0 && has(self.storage) && has(self.storage.medium) && self.storage.medium == 'Memory')",message="replicas may not be 0 with storage.medium Memory: a memory-backed cluster cannot be paused"
// +kubebuilder:validation:XValidation:rule="has(self.tls) == has(oldSelf.tls)",message="tls may not be added or removed: every member's peer URLs would change scheme (http, https), which etcd takes only one member at a time by a member update while the others still dial the old scheme; create a new cluster with tls from a snapshot of this one (spec.bootstrap.restore)"
// +kubebuilder:validation:XValidation:rule="has(self.bootstrap) == has(oldSelf.bootstrap)",message="bootstrap may not be added or removed"
type EtcdClusterSpec struct {
	// replicas is the number of voting members. 0 pauses the cluster: the
	// last member goes dormant and keeps its data.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=9
	Replicas *int32 `json:"replicas,omitempty"`

	// version of etcd: one etcdfleet supports, e.g. "3.7.3". The workload
	// admission policy admits etcd's images at these tags only. A change
	// etcd allows from the running versions (a patch, or one minor up from
	// its minimum patch: 3.6.11+ before 3.7) is rolled into the running
	// members one at a time once the cluster is whole and healthy:
	// followers first, the leader last after leadership moves to an
	// upgraded member; a PVC member keeps its ID, a memory member is
	// replaced by a new one. Each restart goes through the shared fleet gate
	// after every heal, and waits while the cluster is paused. A change etcd
	// refuses, or a minor downgrade, rolls nothing: UpgradeBlocked says why.
	// +required
	// +kubebuilder:validation:Enum="3.6.14";"3.6.15";"3.6.16";"3.7.1";"3.7.2";"3.7.3"
	Version string `json:"version"`

	// storage of each member.
	// +optional
	// +kubebuilder:default={}
	// +kubebuilder:validation:XValidation:rule="!has(self.medium) || self.medium != 'Memory' || (has(self.size) && quantity(string(self.size)).isGreaterThan(quantity('0')))",message="storage.size must be greater than 0 when storage.medium is Memory"
	// +kubebuilder:validation:XValidation:rule="(has(self.medium) && self.medium == 'Memory') || !has(self.size) || quantity(string(self.size)).isGreaterThan(quantity('0'))",message="storage.size must be greater than 0"
	// +kubebuilder:validation:XValidation:rule="(has(self.medium) ? self.medium : '') == (has(oldSelf.medium) ? oldSelf.medium : '')",message="storage.medium is immutable"
	// +kubebuilder:validation:XValidation:rule="!has(self.size) || !has(oldSelf.size) || quantity(string(self.size)).compareTo(quantity(string(oldSelf.size))) >= 0",message="storage.size may not shrink"
	// +kubebuilder:validation:XValidation:rule="has(self.storageClassName) == has(oldSelf.storageClassName)",message="storage.storageClassName may not be added or removed"
	// +kubebuilder:validation:XValidation:rule="!has(self.storageClassName) || !has(oldSelf.storageClassName) || self.storageClassName == oldSelf.storageClassName",message="storage.storageClassName is immutable"
	Storage StorageSpec `json:"storage,omitempty"`

	// resources of the etcd container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// affinity of member Pods.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// topologySpreadConstraints of member Pods.
	// +optional
	// +listType=atomic
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// tls of the client and peer ports. Fixed at creation: it may be neither
	// added, removed nor changed (see docs/operations.md, Certificates). A
	// change of the named Secrets' contents (a renewed certificate, a CA
	// bundle) is rolled into the members one at a time.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="tls is immutable: to rotate certificates or a CA, change the contents of the Secrets it names, which rolls the members one at a time"
	TLS *TLSSpec `json:"tls,omitempty"`

	// options are etcd flags.
	// +optional
	Options *EtcdOptions `json:"options,omitempty"`

	// progressDeadlineSeconds bounds bootstrap and each scale step. When it
	// passes, Available and Progressing turn False with DeadlineExceeded.
	// +optional
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	ProgressDeadlineSeconds int32 `json:"progressDeadlineSeconds,omitempty"`

	// bootstrap says how the cluster starts; it applies to the seed member
	// only, once. Fixed at creation.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="bootstrap is immutable"
	Bootstrap *BootstrapSpec `json:"bootstrap,omitempty"`

	// backup schedules snapshots of the cluster and prunes old ones.
	// +optional
	Backup *BackupSpec `json:"backup,omitempty"`

	// recovery allows an automatic restore after total loss and a
	// recovery from a survivor after a lost majority (both opt-in).
	// +optional
	Recovery *RecoverySpec `json:"recovery,omitempty"`

	// defrag schedules EtcdDefrags of the cluster.
	// +optional
	Defrag *DefragScheduleSpec `json:"defrag,omitempty"`
}

// EtcdClusterObservedSpec is the latched copy of the spec that new members
// are templated from.
type EtcdClusterObservedSpec struct {
	Replicas int32  `json:"replicas"`
	Version  string `json:"version"`
	// +optional
	Storage StorageSpec `json:"storage,omitempty"`
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// +optional
	// +listType=atomic
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// +optional
	Options *EtcdOptions `json:"options,omitempty"`
}

// EtcdClusterMemberStatus summarises one member.
type EtcdClusterMemberStatus struct {
	// name of the EtcdMember.
	Name string `json:"name"`
	// id is the etcd member ID in hex (%016x); empty until discovered.
	// +optional
	ID string `json:"id,omitempty"`
	// role in etcd's MemberList.
	// +optional
	Role MemberRole `json:"role,omitempty"`
	// ready mirrors the member's Ready condition.
	// +optional
	Ready bool `json:"ready,omitempty"`
}

// EtcdClusterVersionCount is how many running members report one etcd version.
type EtcdClusterVersionCount struct {
	// version of etcd, as the members report it.
	Version string `json:"version"`
	// members is how many running members report it.
	Members int32 `json:"members"`
}

// EtcdClusterStatus is the observed state of an etcd cluster.
type EtcdClusterStatus struct {
	// readyMembers counts members whose Ready condition is True. The scale
	// subresource reports it as status.replicas.
	// +optional
	ReadyMembers int32 `json:"readyMembers"`

	// replicas counts the EtcdMember objects of the cluster (including a
	// dormant one and members being created or deleted).
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// selector selects the member Pods (ClusterSelector), for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`

	// clusterID is etcd's cluster ID in hex; latched once discovered.
	// +optional
	ClusterID string `json:"clusterID,omitempty"`

	// clusterToken is etcd's --initial-cluster-token, "<ns>-<name>-<uid>"; latched.
	// +optional
	ClusterToken string `json:"clusterToken,omitempty"`

	// restoredFrom is the snapshot the cluster was restored from at
	// bootstrap (spec.bootstrap.restore).
	// +optional
	RestoredFrom *RestoredFrom `json:"restoredFrom,omitempty"`

	// restoreSource is where the seed restores from when
	// spec.bootstrap.restore names an EtcdSnapshot: that snapshot's
	// location with its full key or path, recorded before the seed is
	// created. The workload admission policy admits the seed's mount of
	// the location's Secret or claim because its EtcdCluster names it
	// here: a policy cannot look the EtcdSnapshot up.
	// +optional
	RestoreSource *SnapshotLocation `json:"restoreSource,omitempty"`

	// backup is what spec.backup last did, and the last good backup.
	// +optional
	Backup *BackupStatus `json:"backup,omitempty"`

	// recovery is the last automatic restore after total loss, and
	// lastObserved the newest revision seen (kept with the opt-in only).
	// +optional
	Recovery *RecoveryStatus `json:"recovery,omitempty"`
	// +optional
	LastObserved *ObservedRevision `json:"lastObserved,omitempty"`
	// recoverFromSurvivorHandled is the value of the annotation
	// etcd.etcdfleet.io/recover-from-survivor last acted on: the
	// annotation asks again only with another value. (etcdfleet never
	// writes an EtcdCluster but its status, so it cannot remove the
	// annotation.)
	// +optional
	RecoverFromSurvivorHandled string `json:"recoverFromSurvivorHandled,omitempty"`

	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// members known to the cluster controller.
	// +optional
	// +listType=map
	// +listMapKey=name
	Members []EtcdClusterMemberStatus `json:"members,omitempty"`

	// observed is the spec latched for templating new members.
	// +optional
	Observed *EtcdClusterObservedSpec `json:"observed,omitempty"`

	// versions counts the running members by the etcd version each one
	// reports (EtcdMember status.version, which the member controller reads
	// from etcd, never from a spec), oldest first. spec.version is what new
	// members get; this is what runs. A member that has not reported yet is
	// not counted: the VersionDrifted condition says how many there are.
	// +optional
	// +listType=map
	// +listMapKey=version
	Versions []EtcdClusterVersionCount `json:"versions,omitempty"`

	// updatedMembers counts the running members on the latched spec: they
	// report its version from etcd and run a Pod built from its template
	// (resources, affinity, topologySpreadConstraints, options). Below
	// replicas while a version or template change is rolled.
	// +optional
	UpdatedMembers int32 `json:"updatedMembers"`

	// progressDeadline is when the current step times out. Patch it (for
	// example to a time in the future, or remove it) to retry after DeadlineExceeded.
	// +optional
	ProgressDeadline *metav1.Time `json:"progressDeadline,omitempty"`

	// replacement counts the crash-loop and pod-loss replacements of the
	// cluster's members. Each of them makes a new EtcdMember whose own count
	// starts at zero, so the cap and backoff of those kinds are kept here.
	// +optional
	Replacement *ReplacementStatus `json:"replacement,omitempty"`

	// replacing is the member removal in flight. The member controller
	// writes it, with the resourceVersion it read, before it deletes the
	// member, and the cluster controller clears it once every member is
	// Ready again: while it names one member, no other member of the
	// cluster is removed by a replacement.
	// +optional
	Replacing *ReplacementLease `json:"replacing,omitempty"`

	// health is etcd's own health as the members report it: alarms, the
	// database against its quota, the leader and its changes, members that
	// lag.
	// +optional
	Health *EtcdHealth `json:"health,omitempty"`

	// conditions: Available, Progressing, Degraded, ReplacementsExhausted,
	// TotalLoss, VersionDrifted, UpgradeBlocked, TemplateDrifted,
	// AlarmActive, NearQuota.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ReplacementLease names the one member of an EtcdCluster being removed
// by a replacement.
type ReplacementLease struct {
	// member is the EtcdMember being removed.
	Member string `json:"member"`
	// memberUID is its UID: a new member of the same name does not hold the lease.
	MemberUID types.UID `json:"memberUID"`
	// podUID is the UID of the Pod being replaced.
	// +optional
	PodUID types.UID `json:"podUID,omitempty"`
	// action is the kind of replacement: CrashLoopReplace, PodLossReplace,
	// NodeLossReplace, VersionRoll (a memory member rolled to a new etcd
	// version) or TemplateRoll (a memory member rolled onto a new Pod
	// template).
	Action string `json:"action"`
	// since is when the lease was taken.
	Since metav1.Time `json:"since"`
}

// EtcdCluster is an etcd cluster run by etcdfleet.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=ec,categories=etcdfleet
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.readyMembers,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Running",type=string,JSONPath=`.status.versions[0].version`,description="the oldest etcd version a running member reports"
// +kubebuilder:printcolumn:name="Drifted",type=string,JSONPath=`.status.conditions[?(@.type=="VersionDrifted")].status`,description="True while members run different versions, or one other than spec.version"
// +kubebuilder:printcolumn:name="UpgradeBlocked",type=string,JSONPath=`.status.conditions[?(@.type=="UpgradeBlocked")].status`,priority=1
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updatedMembers`,description="running members on spec.version and the spec's Pod template"
// +kubebuilder:printcolumn:name="TemplateDrifted",type=string,JSONPath=`.status.conditions[?(@.type=="TemplateDrifted")].status`,priority=1,description="True while members run a Pod built from an older template than the spec's"
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyMembers`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].reason`
// +kubebuilder:printcolumn:name="Alarm",type=string,JSONPath=`.status.conditions[?(@.type=="AlarmActive")].reason`,priority=1,description="the active etcd alarm (NoSpaceAlarm, CorruptAlarm) or NoAlarms"
// +kubebuilder:printcolumn:name="Quota%",type=integer,JSONPath=`.status.health.quotaUsedPercent`,priority=1,description="the largest member database as a percentage of the backend quota"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 56 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label of at most 56 characters, so that the member Pods (<name>-xxxxx) and the client Service (<name>-client) get valid names"
type EtcdCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec EtcdClusterSpec `json:"spec"`
	// +optional
	Status EtcdClusterStatus `json:"status,omitempty"`
}

// EtcdClusterList is a list of EtcdCluster.
//
// +kubebuilder:object:root=true
type EtcdClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdCluster `json:"items"`
}
