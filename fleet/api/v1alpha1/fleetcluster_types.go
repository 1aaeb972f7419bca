package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FleetClusterSpec is empty: every input (kubeconfig and options) comes from
// the registration Secret of the same namespace and name.
type FleetClusterSpec struct{}

// EtcdClusterState is the health of one EtcdCluster in a workload cluster.
type EtcdClusterState struct {
	// +required
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// available mirrors the EtcdCluster's Available condition.
	// +optional
	Available bool `json:"available,omitempty"`
	// quorum is true when a majority of voters is ready.
	// +optional
	Quorum bool `json:"quorum,omitempty"`
	// +optional
	ReadyMembers int32 `json:"readyMembers,omitempty"`
	// desiredMembers is the EtcdCluster's spec.replicas.
	// +optional
	DesiredMembers int32 `json:"desiredMembers,omitempty"`
	// reason of the Available condition.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// FleetClusterStatus reports on one workload cluster.
type FleetClusterStatus struct {
	// conditions: Connected, Ready, Degraded, Paused, Authorized, and
	// CredentialsExpiring while the token's lifetime is known.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// clusterID identifies the workload cluster: the UID of its kube-system
	// Namespace, as last read in pre-flight. Two registrations with the same
	// clusterID are one cluster registered twice; only the first is engaged.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	ClusterID string `json:"clusterID,omitempty"`
	// replica is the manager replica that owns this cluster and writes
	// this status: its sharding replica ID. Empty when sharding is off.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Replica string `json:"replica,omitempty"`

	// serverVersion is the workload apiserver's git version.
	// +optional
	ServerVersion string `json:"serverVersion,omitempty"`
	// lastProbeTime is when the workload apiserver was last probed.
	// +optional
	LastProbeTime *metav1.Time `json:"lastProbeTime,omitempty"`
	// tokenExpiresAt is when the registration Secret's bearer token
	// expires, read from its JWT exp claim (without any call to the
	// workload cluster). Absent for tokens without one and for client
	// certificates.
	// +optional
	TokenExpiresAt *metav1.Time `json:"tokenExpiresAt,omitempty"`
	// message explains the most important problem, if any.
	// +optional
	Message string `json:"message,omitempty"`

	// etcdClusters counts the EtcdClusters in the workload cluster.
	// +optional
	EtcdClusters int32 `json:"etcdClusters"`
	// quorateEtcdClusters counts those with quorum.
	// +optional
	QuorateEtcdClusters int32 `json:"quorateEtcdClusters"`
	// membersReady sums readyMembers over the EtcdClusters.
	// +optional
	MembersReady int32 `json:"membersReady"`
	// membersDesired sums spec.replicas over the EtcdClusters.
	// +optional
	MembersDesired int32 `json:"membersDesired"`
	// membersSummary is "<membersReady>/<membersDesired>", for kubectl.
	// +optional
	MembersSummary string `json:"membersSummary,omitempty"`

	// replacementsTotal sums status.replacement.total over the EtcdMembers.
	// +optional
	ReplacementsTotal int64 `json:"replacementsTotal"`
	// lastReplacementTime is the newest status.replacement.lastTime.
	// +optional
	LastReplacementTime *metav1.Time `json:"lastReplacementTime,omitempty"`
	// replacementsWaiting counts replacements of this cluster waiting on the
	// fleet limiter now.
	// +optional
	ReplacementsWaiting int32 `json:"replacementsWaiting"`
	// replacementsThrottled counts every time a replacement of this cluster
	// had to wait for the limiter.
	// +optional
	ReplacementsThrottled int64 `json:"replacementsThrottled"`

	// etcdClustersWithBackup counts the EtcdClusters with a backup
	// schedule (spec.backup).
	// +optional
	EtcdClustersWithBackup int32 `json:"etcdClustersWithBackup"`
	// etcdClustersBehindBackup counts those whose BackedUp condition is
	// False: a scheduled snapshot is due and not complete, or failed.
	// +optional
	EtcdClustersBehindBackup int32 `json:"etcdClustersBehindBackup"`
	// etcdClustersNeverBackedUp counts those with no good backup yet (no
	// status.backup.lastSuccessfulTime).
	// +optional
	EtcdClustersNeverBackedUp int32 `json:"etcdClustersNeverBackedUp"`
	// oldestLastBackupTime is the oldest last good backup
	// (status.backup.lastSuccessfulTime) among the EtcdClusters with a
	// schedule that have one: how far back the least recently backed-up
	// cluster would be restored. A time rather than an age, so the status
	// changes only when a backup completes; kubectl shows its age.
	// +optional
	OldestLastBackupTime *metav1.Time `json:"oldestLastBackupTime,omitempty"`
	// backupSummary is, for kubectl: "never" when an EtcdCluster with a
	// schedule has no good backup yet, "behind" when one is behind its
	// schedule, "ok" when all are on schedule; empty without schedules.
	// +optional
	// +kubebuilder:validation:Enum=never;behind;ok
	BackupSummary string `json:"backupSummary,omitempty"`

	// etcdClustersWithAlarms counts the EtcdClusters with an active etcd
	// alarm (their AlarmActive condition: NOSPACE refuses writes, CORRUPT
	// wants a human).
	// +optional
	EtcdClustersWithAlarms int32 `json:"etcdClustersWithAlarms"`
	// etcdClustersNearQuota counts the EtcdClusters whose database is at
	// 80 % of its quota or more (their NearQuota condition).
	// +optional
	EtcdClustersNearQuota int32 `json:"etcdClustersNearQuota"`

	// etcdClustersRolling counts the EtcdClusters whose roll (a version
	// upgrade or a re-template) holds a place in the fleet's rollout
	// (their InRollout condition is True).
	// +optional
	EtcdClustersRolling int32 `json:"etcdClustersRolling"`
	// etcdClustersWaitingToRoll counts the EtcdClusters whose roll waits
	// for a place (InRollout=False): the wave is full or paused.
	// +optional
	EtcdClustersWaitingToRoll int32 `json:"etcdClustersWaitingToRoll"`
	// etcdClustersRollBlocked counts the EtcdClusters whose spec.version is
	// a change etcd refuses (UpgradeBlocked=True): not rolled.
	// +optional
	EtcdClustersRollBlocked int32 `json:"etcdClustersRollBlocked"`
	// rolloutMessage says, for the first EtcdCluster whose roll waits or is
	// blocked, why: "<namespace>/<name>: <reason>".
	// +optional
	RolloutMessage string `json:"rolloutMessage,omitempty"`

	// etcdClusterStates lists the EtcdClusters, unhealthy ones first.
	// +optional
	// +listType=map
	// +listMapKey=namespace
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=50
	EtcdClusterStates []EtcdClusterState `json:"etcdClusterStates,omitempty"`
}

// FleetCluster reports the health of one registered workload cluster. It
// has the namespace and name of its registration Secret.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=fc,categories=etcdfleet
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Connected",type=string,JSONPath=`.status.conditions[?(@.type=="Connected")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Authorized",type=string,JSONPath=`.status.conditions[?(@.type=="Authorized")].status`,priority=1
// +kubebuilder:printcolumn:name="Paused",type=string,JSONPath=`.status.conditions[?(@.type=="Paused")].status`
// +kubebuilder:printcolumn:name="EtcdClusters",type=integer,JSONPath=`.status.etcdClusters`
// +kubebuilder:printcolumn:name="Quorate",type=integer,JSONPath=`.status.quorateEtcdClusters`
// +kubebuilder:printcolumn:name="Members",type=string,JSONPath=`.status.membersSummary`
// +kubebuilder:printcolumn:name="Replaced",type=integer,JSONPath=`.status.replacementsTotal`
// +kubebuilder:printcolumn:name="Throttled",type=integer,JSONPath=`.status.replacementsThrottled`
// +kubebuilder:printcolumn:name="Backup",type=string,JSONPath=`.status.backupSummary`
// +kubebuilder:printcolumn:name="OldestBackup",type=date,JSONPath=`.status.oldestLastBackupTime`
// +kubebuilder:printcolumn:name="BehindBackup",type=integer,JSONPath=`.status.etcdClustersBehindBackup`
// +kubebuilder:printcolumn:name="Alarms",type=integer,JSONPath=`.status.etcdClustersWithAlarms`,description="EtcdClusters with an active etcd alarm (NOSPACE, CORRUPT)"
// +kubebuilder:printcolumn:name="NearQuota",type=integer,JSONPath=`.status.etcdClustersNearQuota`,priority=1,description="EtcdClusters whose database is at 80% of its quota or more"
// +kubebuilder:printcolumn:name="Rolling",type=integer,JSONPath=`.status.etcdClustersRolling`,priority=1,description="EtcdClusters rolling (upgrade, re-template) with a place in the fleet's rollout"
// +kubebuilder:printcolumn:name="RollWaiting",type=integer,JSONPath=`.status.etcdClustersWaitingToRoll`,priority=1,description="EtcdClusters whose roll waits for a place in the fleet's rollout"
// +kubebuilder:printcolumn:name="Replica",type=string,JSONPath=`.status.replica`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="TokenExpires",type=string,JSONPath=`.status.tokenExpiresAt`,priority=1
type FleetCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec FleetClusterSpec `json:"spec,omitempty"`
	// +optional
	Status FleetClusterStatus `json:"status,omitempty"`
}

// FleetClusterList is a list of FleetCluster.
//
// +kubebuilder:object:root=true
type FleetClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FleetCluster `json:"items"`
}
