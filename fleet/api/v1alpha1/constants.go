package v1alpha1

// FleetName is the only name a Fleet may have (enforced by CEL).
const FleetName = "fleet"

// Limits on the lists in status (enforced by the CRD schema).
const (
	MaxEtcdClusterStates = 50
	MaxWorstClusters     = 10
)

// Condition types of FleetCluster (all four) and Fleet (Ready, Degraded, Paused).
const (
	// ConditionConnected is True when the workload cluster's apiserver answered the last probe.
	ConditionConnected = "Connected"
	// ConditionReady is True when the cluster is connected, its controllers
	// are running and every EtcdCluster in it has quorum.
	ConditionReady = "Ready"
	// ConditionDegraded is True when some EtcdCluster lost quorum or has unready members.
	ConditionDegraded = "Degraded"
	// ConditionPaused is True while destructive actions are paused (Fleet spec.paused).
	ConditionPaused = "Paused"
)

// Condition reasons. Controllers may add more; these are the common ones.
const (
	ReasonProbeSucceeded   = "ProbeSucceeded"
	ReasonProbeFailed      = "ProbeFailed"
	ReasonSecretInvalid    = "SecretInvalid"
	ReasonSecretNotFound   = "SecretNotFound"
	ReasonNotConnected     = "NotConnected"
	ReasonAllQuorate       = "AllQuorate"
	ReasonQuorumLost       = "QuorumLost"
	ReasonMembersUnhealthy = "MembersUnhealthy"
	ReasonHealthy          = "Healthy"
	ReasonFleetPaused      = "FleetPaused"
	ReasonNotPaused        = "NotPaused"
)
