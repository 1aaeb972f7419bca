package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// MemberTLS is the TLS configuration of one member, derived from the
// cluster's spec.tls when the member is created.
type MemberTLS struct {
	// clientServerSecretRef names the Secret etcd serves clients with; empty: plain HTTP.
	// +optional
	ClientServerSecretRef string `json:"clientServerSecretRef,omitempty"`
	// clientMTLS turns on --client-cert-auth.
	// +optional
	ClientMTLS bool `json:"clientMTLS,omitempty"`
	// operatorClientSecretRef names the client certificate the operator dials with.
	// +optional
	OperatorClientSecretRef string `json:"operatorClientSecretRef,omitempty"`
	// peerSecretRef names the Secret used for peer mTLS; empty: plain HTTP.
	// +optional
	PeerSecretRef string `json:"peerSecretRef,omitempty"`
	// secretsHash is a hash of the data of the Secrets the Pod mounts
	// (clientServerSecretRef and peerSecretRef), as the EtcdCluster
	// reconciler last read them. It is part of the Pod template: when the
	// Secrets' contents change (a certificate renewed, a CA bundle
	// changed), the cluster reconciler sets the new hash one member at a
	// time and each member's Pod is restarted on the Secrets as they are
	// then, since etcd reads its trusted CA files only at start. Empty: not
	// known (a member from before this field, or the Secrets unreadable).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	SecretsHash string `json:"secretsHash,omitempty"`
}

// EtcdMemberSpec is copied from the cluster's status.observed when the
// member is created. The cluster reconciler changes version, resources,
// affinity, topologySpreadConstraints and options to roll the member onto
// a new spec (one member at a time); the member reconciler then restarts
// its Pod.
//
// +kubebuilder:validation:XValidation:rule="has(self.clusterToken) == has(oldSelf.clusterToken) && (!has(self.clusterToken) || self.clusterToken == oldSelf.clusterToken)",message="clusterToken is immutable"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.initialCluster) || size(oldSelf.initialCluster) == 0 || (has(self.initialCluster) && self.initialCluster == oldSelf.initialCluster)",message="initialCluster may not change once set"
type EtcdMemberSpec struct {
	// clusterName is the owning EtcdCluster. Immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterName is immutable"
	ClusterName string `json:"clusterName"`

	// version of etcd the Pod runs. Changed by the EtcdCluster reconciler
	// during a rolling version change; a running Pod of another version is
	// then deleted (through the shared gate) and recreated at this one.
	// +required
	// +kubebuilder:validation:Pattern=`^\d+\.\d+\.\d+$`
	// +kubebuilder:validation:MaxLength=32
	Version string `json:"version"`

	// +optional
	// +kubebuilder:default={}
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

	// bootstrap marks the seed: the single member that starts a new cluster.
	// +optional
	Bootstrap bool `json:"bootstrap,omitempty"`

	// initialCluster is etcd's --initial-cluster. It is empty until the
	// cluster controller patches it in after creating the member (and, for a
	// joining member, adding it to etcd); the Pod is not created before.
	// Once set it may not change.
	// +optional
	InitialCluster string `json:"initialCluster,omitempty"`

	// clusterToken is etcd's --initial-cluster-token. Immutable.
	// +optional
	ClusterToken string `json:"clusterToken,omitempty"`

	// dormant members keep their PVC but run no Pod (the cluster is paused).
	// +optional
	Dormant bool `json:"dormant,omitempty"`

	// +optional
	TLS *MemberTLS `json:"tls,omitempty"`

	// restore is set on a restored cluster's seed only: its Pod's init
	// container writes the data dir from this snapshot. Immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="restore is immutable"
	Restore *MemberRestore `json:"restore,omitempty"`
}

// ReplacementStatus records the Pod replacements of a member, for the cap,
// the exponential backoff and the fleet's accounting.
type ReplacementStatus struct {
	// total counts every replacement ever made.
	// +optional
	Total int32 `json:"total,omitempty"`
	// cappedCount counts the replacements in the current window that count
	// towards the cap (node-shutdown replacements do not).
	// +optional
	CappedCount int32 `json:"cappedCount,omitempty"`
	// windowStart is when the current cap window began.
	// +optional
	WindowStart *metav1.Time `json:"windowStart,omitempty"`
	// consecutive counts replacements since the member was last healthy for
	// long enough; it drives the exponential backoff.
	// +optional
	Consecutive int32 `json:"consecutive,omitempty"`
	// lastTime is when the last replacement was made.
	// +optional
	LastTime *metav1.Time `json:"lastTime,omitempty"`
	// lastReason is the Pod status reason the replaced Pod died with, e.g.
	// Terminated or UnexpectedAdmissionError.
	// +optional
	LastReason string `json:"lastReason,omitempty"`
	// lastPhase is the phase of the replaced Pod.
	// +optional
	LastPhase string `json:"lastPhase,omitempty"`
	// lastPodUID is the UID of the replaced Pod. It is written before the
	// Pod is deleted, so a replacement is never counted twice.
	// +optional
	LastPodUID types.UID `json:"lastPodUID,omitempty"`
	// notBefore: no replacement before this time (backoff).
	// +optional
	NotBefore *metav1.Time `json:"notBefore,omitempty"`
	// healthySince is when the member last became Ready; a long enough
	// healthy period resets consecutive.
	// +optional
	HealthySince *metav1.Time `json:"healthySince,omitempty"`
	// replaceNowHandled is the value of the replace-now annotation last acted on.
	// +optional
	ReplaceNowHandled string `json:"replaceNowHandled,omitempty"`
}

// EtcdMemberStatus is the observed state of a member.
type EtcdMemberStatus struct {
	// memberID is the etcd member ID in hex (%016x); empty until discovered.
	// +optional
	MemberID string `json:"memberID,omitempty"`
	// +optional
	PodName string `json:"podName,omitempty"`
	// podUID is the UID of the current Pod; for a memory-backed member a
	// different UID means the data is gone.
	// +optional
	PodUID types.UID `json:"podUID,omitempty"`
	// +optional
	PVCName string `json:"pvcName,omitempty"`
	// isVoter is written by the cluster controller from MemberList.
	// +optional
	IsVoter bool `json:"isVoter,omitempty"`
	// version is the etcd version the member reports.
	// +optional
	Version string `json:"version,omitempty"`
	// templateHash is the template hash of the Pod that runs (podUID): the
	// hash of the resources, affinity, topologySpreadConstraints and
	// options it was built from (its etcd.etcdfleet.io/template-hash
	// annotation). A Pod from before template hashes gets the hash of the
	// spec it ran under when first seen.
	// +optional
	TemplateHash string `json:"templateHash,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: Ready, ReplacementsExhausted, VersionDrifted.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// replacement records Pod replacements.
	// +optional
	Replacement *ReplacementStatus `json:"replacement,omitempty"`
}

// EtcdMember is one etcd member: a PVC (unless memory-backed) and a Pod.
// Only the cluster controller creates these.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=em,categories=etcdfleet
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Member ID",type=string,JSONPath=`.status.memberID`
// +kubebuilder:printcolumn:name="Voter",type=boolean,JSONPath=`.status.isVoter`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Replacements",type=integer,JSONPath=`.status.replacement.total`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdMember struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec EtcdMemberSpec `json:"spec"`
	// +optional
	Status EtcdMemberStatus `json:"status,omitempty"`
}

// EtcdMemberList is a list of EtcdMember.
//
// +kubebuilder:object:root=true
type EtcdMemberList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdMember `json:"items"`
}
