package v1alpha1

// FleetName is the only name a Fleet may have (enforced by CEL).
const FleetName = "fleet"

// Limits on the lists in status (enforced by the CRD schema).
const (
	MaxEtcdClusterStates = 50
	MaxWorstClusters     = 10
)

// Condition types of FleetCluster (all five) and Fleet (Ready, Degraded, Paused).
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
	// ConditionAuthorized (FleetCluster only) is False when the workload
	// credentials lack permissions the reconcilers need (reason
	// MissingRights, the message lists them), True when the last check found
	// all of them. It is last known while the cluster is not connected.
	ConditionAuthorized = "Authorized"
	// ConditionConstrained (FleetCluster only) is True when admission in
	// the workload cluster refuses what the credentials must not write
	// (dry runs of objects no etcdfleet builder produces) and they hold no
	// right beyond the expected ones; False with Unconstrained (the
	// cluster is not engaged, unless the manager allows it) or
	// OverPrivileged. Last known while the cluster is not connected.
	ConditionConstrained = "Constrained"
	// ConditionNamespacesGranted (FleetCluster only) is False, reason
	// NamespacesNotGranted, while namespaces outside a namespaced
	// registration hold EtcdClusters, which nothing reconciles: the message
	// lists them. True otherwise, as far as the credential can see.
	ConditionNamespacesGranted = "NamespacesGranted"
	// ConditionCredentialsExpiring (FleetCluster only) is True when less than
	// a fifth of the registration token's lifetime is left, or it expired;
	// absent when the token states no lifetime (JWT iat or nbf, and exp).
	ConditionCredentialsExpiring = "CredentialsExpiring"
)

// Reasons of ConditionCredentialsExpiring.
const (
	ReasonTokenValid    = "TokenValid"
	ReasonTokenExpiring = "TokenExpiring"
	ReasonTokenExpired  = "TokenExpired"
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
	// ReasonDuplicateCluster (Ready=False): another registration Secret,
	// named in the message, owns the same workload cluster (same
	// kube-system Namespace UID): it carries etcdfleet.io/cluster-id for
	// it, or was created first; this one is refused.
	ReasonDuplicateCluster = "DuplicateCluster"
	// ReasonMissingRights (Authorized=False, Ready=False): the workload
	// credentials lack permissions the reconcilers need.
	ReasonMissingRights = "MissingRights"
	// ReasonRightsGranted (Authorized=True).
	ReasonRightsGranted = "RightsGranted"
	// ReasonUnconstrained (Constrained=False, Ready=False unless the
	// manager allows unconstrained clusters): admission admitted a dry run
	// the credentials must not be able to make; the message says which.
	ReasonUnconstrained = "Unconstrained"
	// ReasonOverPrivileged (Constrained=False): the credentials hold
	// rights beyond the expected ones, listed in the message.
	ReasonOverPrivileged = "OverPrivileged"
	// ReasonNamespacesNotGranted (NamespacesGranted=False).
	ReasonNamespacesNotGranted = "NamespacesNotGranted"
	// ReasonNamespacesGranted (NamespacesGranted=True).
	ReasonNamespacesGranted = "NamespacesGranted"
	// ReasonConstrained (Constrained=True).
	ReasonConstrained = "Constrained"
)

// Registration of a workload cluster: a Secret in the manager's namespace
// labelled RegistrationLabel=true, holding a kubeconfig under KubeconfigKey.
// These are the only definitions: etcdfleetctl writes them, the manager
// configures its provider with them, and the chart and docs are tested
// against them.
const (
	// RegistrationLabel set to "true" marks a Secret as a workload
	// cluster's kubeconfig.
	RegistrationLabel = "etcdfleet.io/cluster-kubeconfig"
	// KubeconfigKey is the Secret data key holding the kubeconfig.
	KubeconfigKey = "kubeconfig"
	// PausedAnnotation set to "true" on the Secret pauses destructive
	// actions in that cluster (it stays engaged and watched).
	PausedAnnotation = "etcdfleet.io/paused"
	// ClusterIDAnnotation on the Secret records the identity (kube-system
	// Namespace UID) of the cluster etcdfleetctl registered with it, so that
	// a later register of the same cluster under another name is refused
	// before the manager has engaged the first.
	ClusterIDAnnotation = "etcdfleet.io/cluster-id"
	// DefaultRegistrationNamespace holds the registration Secrets unless
	// configured otherwise. It is not the namespace the manager is
	// installed in: the manager may read every Secret here (RBAC cannot
	// select by label), and the install namespace holds Helm's release
	// Secrets.
	DefaultRegistrationNamespace = "etcdfleet-clusters"
)
