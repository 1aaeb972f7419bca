package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SnapshotPhase is where an EtcdSnapshot is in its one run.
// +kubebuilder:validation:Enum=Pending;Started;Complete;Failed
type SnapshotPhase string

const (
	// SnapshotPending: accepted, no Job yet.
	SnapshotPending SnapshotPhase = "Pending"
	// SnapshotStarted: the snapshot Job exists and has not finished.
	SnapshotStarted SnapshotPhase = "Started"
	// SnapshotComplete (terminal): the artifact is stored and verified.
	SnapshotComplete SnapshotPhase = "Complete"
	// SnapshotFailed (terminal): the snapshot was not stored; the Ready
	// condition says why. A new EtcdSnapshot is the retry.
	SnapshotFailed SnapshotPhase = "Failed"
)

// Terminal reports whether the phase never changes again.
func (p SnapshotPhase) Terminal() bool { return p == SnapshotComplete || p == SnapshotFailed }

// S3Location is an object in an S3-compatible store.
// +kubebuilder:validation:XValidation:rule="!has(self.caBundleSecretRef) || self.endpoint.startsWith('https://')",message="caBundleSecretRef needs an https:// endpoint"
type S3Location struct {
	// endpoint is the store's URL, "https://s3.eu-west-1.amazonaws.com" or
	// "http://seaweedfs.storage.svc:8333". Buckets are addressed by path
	// except on AWS's own endpoints.
	// +required
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^https?://[^/\s]+/?$`
	Endpoint string `json:"endpoint"`

	// bucket holds the object; it must exist.
	// +required
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	Bucket string `json:"bucket"`

	// key of the object. Empty, or ending in "/", is a prefix: the
	// snapshot's name plus ".db" is appended.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Key string `json:"key,omitempty"`

	// region of the bucket; signing needs one even where the store ignores it.
	// +optional
	// +kubebuilder:default="us-east-1"
	// +kubebuilder:validation:MaxLength=64
	Region string `json:"region,omitempty"`

	// credentialsSecretRef names a Secret in the snapshot's namespace with
	// the keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
	// +required
	CredentialsSecretRef corev1.LocalObjectReference `json:"credentialsSecretRef"`

	// caBundleSecretRef names a key of a Secret in the same namespace whose
	// PEM bundle verifies the store's TLS certificate: a store behind a
	// private CA. When set, only this bundle is trusted, not the system's
	// roots too (like a kubeconfig's certificate-authority-data), so a
	// store is trusted for exactly the CA you name. Needs an https
	// endpoint. The snapshot, check, cleanup and restore agents mount only
	// this key, read-only.
	// +optional
	CABundleSecretRef *SecretKeyRef `json:"caBundleSecretRef,omitempty"`

	// serverSideEncryption asks the store to encrypt each snapshot object
	// it writes (SSE-S3, or SSE-KMS with a key). Reads need no setting:
	// the store decrypts SSE-S3 and SSE-KMS objects itself.
	// +optional
	ServerSideEncryption *ServerSideEncryption `json:"serverSideEncryption,omitempty"`
}

// SecretKeyRef is a key of a Secret in the referring object's namespace.
type SecretKeyRef struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// key in the Secret; "ca.crt" when empty.
	// +optional
	// +kubebuilder:default="ca.crt"
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// DefaultCABundleKey is SecretKeyRef.Key when it is empty.
const DefaultCABundleKey = "ca.crt"

// SSEType is the kind of server-side encryption of snapshot objects.
// +kubebuilder:validation:Enum=SSE-S3;SSE-KMS
type SSEType string

const (
	// SSES3 is encryption with keys the store manages (x-amz-server-side-encryption: AES256).
	SSES3 SSEType = "SSE-S3"
	// SSEKMS is encryption with a KMS key (x-amz-server-side-encryption: aws:kms).
	SSEKMS SSEType = "SSE-KMS"
)

// ServerSideEncryption of the snapshot objects a store writes.
// +kubebuilder:validation:XValidation:rule="self.type != 'SSE-KMS' || (has(self.kmsKeyID) && size(self.kmsKeyID) > 0)",message="serverSideEncryption.kmsKeyID is required for type SSE-KMS"
// +kubebuilder:validation:XValidation:rule="self.type != 'SSE-S3' || !has(self.kmsKeyID)",message="serverSideEncryption.kmsKeyID is only for type SSE-KMS; SSE-S3 uses the store's own keys"
type ServerSideEncryption struct {
	// type is SSE-S3 (the store's keys) or SSE-KMS (kmsKeyID).
	// +required
	Type SSEType `json:"type"`
	// kmsKeyID is the KMS key (ID, ARN or alias) of SSE-KMS.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^[!-~]+$`
	KMSKeyID string `json:"kmsKeyID,omitempty"`
}

// PVCLocation is a file on a PersistentVolumeClaim.
type PVCLocation struct {
	// claimName is the PVC in the snapshot's namespace; it must exist.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClaimName string `json:"claimName"`

	// path of the file inside the claim. Empty, or ending in "/", is a
	// directory: the snapshot's name plus ".db" is appended.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.contains('..')",message="pvc.path must be relative and must not contain '..'"
	Path string `json:"path,omitempty"`
}

// SnapshotLocation is where a snapshot is stored: exactly one of s3 and pvc.
// +kubebuilder:validation:XValidation:rule="has(self.s3) != has(self.pvc)",message="exactly one of s3 and pvc must be set"
type SnapshotLocation struct {
	// +optional
	S3 *S3Location `json:"s3,omitempty"`
	// +optional
	PVC *PVCLocation `json:"pvc,omitempty"`
}

// DeletionPolicy says what happens to the stored snapshot when its
// EtcdSnapshot is deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type DeletionPolicy string

const (
	// DeletionRetain keeps the stored object or file (the default).
	DeletionRetain DeletionPolicy = "Retain"
	// DeletionDelete removes it first, by a cleanup Job, behind the
	// finalizer FinalizerSnapshotCleanup.
	DeletionDelete DeletionPolicy = "Delete"
)

// FinalizerSnapshotCleanup holds an EtcdSnapshot with deletionPolicy
// Delete until its stored object or file is removed.
const FinalizerSnapshotCleanup = GroupName + "/snapshot-cleanup"

// EtcdSnapshotSpec is one snapshot to take. It is immutable.
type EtcdSnapshotSpec struct {
	// clusterRef names the EtcdCluster in the snapshot's namespace.
	// +required
	ClusterRef corev1.LocalObjectReference `json:"clusterRef"`

	// location the snapshot is stored at.
	// +required
	Location SnapshotLocation `json:"location"`

	// deletionPolicy: Retain (default) keeps the stored snapshot when the
	// EtcdSnapshot is deleted; Delete removes it first. Scheduled snapshots
	// (spec.backup) use Delete, so that retention frees the storage; their
	// objects are kept when the deletion comes from deleting the cluster.
	// +optional
	// +kubebuilder:default=Retain
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// memberName takes the snapshot from this EtcdMember of the cluster
	// alone, reading its revision from it without asking for quorum, so
	// that a member of a cluster that lost quorum can still be copied
	// (the recovery from a survivor after a lost majority creates such
	// snapshots). Unset: any member, with a linearizable read of the
	// revision, which needs quorum.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	MemberName string `json:"memberName,omitempty"`
}

// SnapshotArtifact is a stored, verified snapshot.
type SnapshotArtifact struct {
	// uri is s3://<bucket>/<key> or pvc://<claim>/<path>.
	URI string `json:"uri"`
	// sizeBytes of the snapshot file.
	SizeBytes int64 `json:"sizeBytes"`
	// sha256 of the file in hex, computed while streaming it and checked
	// again by reading the stored copy back.
	SHA256 string `json:"sha256"`
	// revision of the keyspace the snapshot holds (at least; etcd takes the
	// snapshot at or after this revision).
	Revision int64 `json:"revision"`
	// etag of the S3 object as the store returned it for this snapshot's
	// upload. Restores, checks and the deletionPolicy Delete cleanup act
	// only on the object that still has it (a replaced object is refused,
	// never read or deleted). Empty for PVC snapshots and for snapshots
	// taken before ETags were recorded, which act on whatever the key holds.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[!#-+\--~]*$`
	ETag string `json:"etag,omitempty"`
}

// EtcdSnapshotStatus is the observed state of an EtcdSnapshot.
type EtcdSnapshotStatus struct {
	// phase is Pending, Started, Complete or Failed; the last two are final.
	// +optional
	Phase SnapshotPhase `json:"phase,omitempty"`

	// jobName is the snapshot Job in the snapshot's namespace.
	// +optional
	JobName string `json:"jobName,omitempty"`

	// startedAt is when the Job was created; completedAt when the phase
	// became final.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`

	// artifact is set on Complete.
	// +optional
	Artifact *SnapshotArtifact `json:"artifact,omitempty"`

	// conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdSnapshot is a one-shot snapshot of an EtcdCluster, taken by a Job in
// the cluster's namespace and stored in S3 or on a PVC.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=esnap,categories=etcdfleet
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.status.artifact.sizeBytes`
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.artifact.revision`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 52",message="metadata.name must be at most 52 characters, so that its Job (<name>-snapshot) gets a valid name"
type EtcdSnapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable"
	Spec EtcdSnapshotSpec `json:"spec"`
	// +optional
	Status EtcdSnapshotStatus `json:"status,omitempty"`
}

// EtcdSnapshotList is a list of EtcdSnapshot.
//
// +kubebuilder:object:root=true
type EtcdSnapshotList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdSnapshot `json:"items"`
}

// EtcdSnapshot condition reasons (of ConditionReady).
const (
	// ReasonJobCreated (Ready=False): the Job was created.
	ReasonJobCreated = "JobCreated"
	// ReasonJobRunning (Ready=False): the Job's Pod runs.
	ReasonJobRunning = "JobRunning"
	// ReasonJobFailed (Ready=False, Failed): the Job failed; the message
	// carries the agent's error.
	ReasonJobFailed = "JobFailed"
	// ReasonSnapshotJobLost (Ready=False, Failed): the Job vanished before
	// it reported; the snapshot is never retried.
	ReasonSnapshotJobLost = "SnapshotJobLost"
	// ReasonClusterNotFound (Ready=False): the EtcdCluster does not exist
	// (yet); the snapshot stays Pending.
	ReasonClusterNotFound = "ClusterNotFound"
	// ReasonWaitingForSlot (Ready=False): the snapshot waits for a start
	// slot (the fleet paces snapshot starts); it stays Pending.
	ReasonWaitingForSlot = "WaitingForSlot"
	// ReasonHeldWhilePaused (Ready=False): destructive and heavy work is
	// paused in the workload cluster (its registration, or the whole
	// fleet); the snapshot stays Pending and starts once the pause ends.
	ReasonHeldWhilePaused = "HeldWhilePaused"
	// ReasonInvalidLocation (Ready=False, Failed): the location cannot be
	// used (a missing Secret key, for example).
	ReasonInvalidLocation = "InvalidLocation"
	// ReasonObjectExists (Ready=False, Failed): the snapshot's key or file
	// already held an object, which a snapshot never replaces.
	ReasonObjectExists = "ObjectExists"
	// ReasonDuplicateLocation (Ready=False, Failed): another live
	// EtcdSnapshot of the namespace stores to the same location.
	ReasonDuplicateLocation = "DuplicateLocation"
	// ReasonSnapshotStored (Ready=True, Complete).
	ReasonSnapshotStored = "SnapshotStored"
)

// ConditionCleanedUp (EtcdSnapshot being deleted, deletionPolicy Delete)
// says whether the stored snapshot was removed.
const ConditionCleanedUp = "CleanedUp"

// CleanedUp condition reasons.
const (
	// ReasonCleanupRunning (CleanedUp=False): the cleanup Job runs.
	ReasonCleanupRunning = "CleanupRunning"
	// ReasonCleanupFailed (CleanedUp=False): the cleanup Job failed; it is
	// retried with backoff, and the message carries the agent's error.
	ReasonCleanupFailed = "CleanupFailed"
	// ReasonStoredSnapshotKept: the cluster that scheduled the snapshot is
	// being deleted, so its stored snapshot is kept (an Event says so).
	ReasonStoredSnapshotKept = "StoredSnapshotKept"
	// ReasonStoredSnapshotDeleted: the cleanup Job removed it.
	ReasonStoredSnapshotDeleted = "StoredSnapshotDeleted"
)
