package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FleetSpec holds the fleet-wide switches.
type FleetSpec struct {
	// paused stops every destructive action (Pod replacement, member
	// removal) in every workload cluster. Status keeps being reported.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// LimiterStatus is a snapshot of the fleet's shared replacement token bucket.
type LimiterStatus struct {
	// rate is the refill rate, e.g. "2/s" or "1/30s".
	// +optional
	Rate string `json:"rate,omitempty"`
	// burst is the bucket size.
	// +optional
	Burst int32 `json:"burst"`
	// tokensAvailable is the number of whole tokens in the bucket (floored).
	// +optional
	TokensAvailable int32 `json:"tokensAvailable"`
	// waiting counts replacements waiting for a token now.
	// +optional
	Waiting int32 `json:"waiting"`
}

// FleetClusterRef names a FleetCluster and why it is listed.
type FleetClusterRef struct {
	// +required
	Name string `json:"name"`
	// +required
	Namespace string `json:"namespace"`
	// +optional
	Reason string `json:"reason,omitempty"`
}

// ReplicaShare is one manager replica and the clusters it owns.
type ReplicaShare struct {
	// name is the replica's sharding ID.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// clusters counts the FleetClusters whose status.replica names it.
	// +optional
	Clusters int32 `json:"clusters"`
}

// FleetStatus aggregates the FleetClusters.
type FleetStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	ClustersTotal int32 `json:"clustersTotal"`
	// +optional
	ClustersConnected int32 `json:"clustersConnected"`
	// clustersQuorate counts clusters whose every EtcdCluster has quorum.
	// +optional
	ClustersQuorate int32 `json:"clustersQuorate"`
	// +optional
	ClustersDegraded int32 `json:"clustersDegraded"`
	// +optional
	Limiter *LimiterStatus `json:"limiter,omitempty"`
	// replacementsTotal sums the FleetClusters' replacementsTotal.
	// +optional
	ReplacementsTotal int64 `json:"replacementsTotal"`
	// clustersBehindBackupSchedule counts the clusters with at least one
	// EtcdCluster behind its backup schedule (etcdClustersBehindBackup).
	// +optional
	ClustersBehindBackupSchedule int32 `json:"clustersBehindBackupSchedule"`
	// clustersWithAlarms counts the clusters with at least one EtcdCluster
	// with an active etcd alarm (etcdClustersWithAlarms).
	// +optional
	ClustersWithAlarms int32 `json:"clustersWithAlarms"`
	// clustersNearQuota counts the clusters with at least one EtcdCluster
	// near its database quota (etcdClustersNearQuota).
	// +optional
	ClustersNearQuota int32 `json:"clustersNearQuota"`
	// clustersRolling counts the clusters with an EtcdCluster rolling
	// with a place in the fleet's rollout (etcdClustersRolling): at most
	// the manager's rollout.maxConcurrentClusters.
	// +optional
	ClustersRolling int32 `json:"clustersRolling"`
	// clustersWaitingToRoll counts the clusters with an EtcdCluster whose
	// roll waits for a place (etcdClustersWaitingToRoll), and
	// clustersRollBlocked those with a refused upgrade
	// (etcdClustersRollBlocked).
	// +optional
	ClustersWaitingToRoll int32 `json:"clustersWaitingToRoll"`
	// +optional
	ClustersRollBlocked int32 `json:"clustersRollBlocked"`
	// rolloutMessage is the first waiting or blocked cluster's
	// rolloutMessage, prefixed with its name: why the wave does not move.
	// +optional
	RolloutMessage string `json:"rolloutMessage,omitempty"`
	// replicas lists, with sharding on, every replica that owns clusters
	// and how many, by name; clustersUnowned counts the registered clusters
	// no replica has reported owning yet.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	Replicas []ReplicaShare `json:"replicas,omitempty"`
	// +optional
	ClustersUnowned int32 `json:"clustersUnowned,omitempty"`
	// worstClusters lists the least healthy clusters, worst first.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	WorstClusters []FleetClusterRef `json:"worstClusters,omitempty"`
	// conditions: Ready, Degraded, Paused.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Fleet is the cluster-scoped singleton (named "fleet") that pauses the
// fleet and reports on it.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=etcdfleet
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'fleet'",message="the Fleet is a singleton and must be named 'fleet'"
// +kubebuilder:printcolumn:name="Paused",type=boolean,JSONPath=`.spec.paused`
// +kubebuilder:printcolumn:name="Clusters",type=integer,JSONPath=`.status.clustersTotal`
// +kubebuilder:printcolumn:name="Connected",type=integer,JSONPath=`.status.clustersConnected`
// +kubebuilder:printcolumn:name="Quorate",type=integer,JSONPath=`.status.clustersQuorate`
// +kubebuilder:printcolumn:name="Degraded",type=integer,JSONPath=`.status.clustersDegraded`
// +kubebuilder:printcolumn:name="Waiting",type=integer,JSONPath=`.status.limiter.waiting`
// +kubebuilder:printcolumn:name="Replaced",type=integer,JSONPath=`.status.replacementsTotal`
// +kubebuilder:printcolumn:name="BehindBackup",type=integer,JSONPath=`.status.clustersBehindBackupSchedule`
// +kubebuilder:printcolumn:name="Alarms",type=integer,JSONPath=`.status.clustersWithAlarms`,description="clusters with an EtcdCluster whose etcd raised an alarm"
// +kubebuilder:printcolumn:name="NearQuota",type=integer,JSONPath=`.status.clustersNearQuota`,priority=1,description="clusters with an EtcdCluster near its database quota"
// +kubebuilder:printcolumn:name="Rolling",type=integer,JSONPath=`.status.clustersRolling`,description="clusters with an EtcdCluster rolling (upgrade, re-template) in the fleet's rollout"
// +kubebuilder:printcolumn:name="RollWaiting",type=integer,JSONPath=`.status.clustersWaitingToRoll`,priority=1,description="clusters with an EtcdCluster whose roll waits for a place"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Fleet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec FleetSpec `json:"spec,omitempty"`
	// +optional
	Status FleetStatus `json:"status,omitempty"`
}

// FleetList is a list of Fleet.
//
// +kubebuilder:object:root=true
type FleetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Fleet `json:"items"`
}
