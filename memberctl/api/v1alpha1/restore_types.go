package v1alpha1

// BootstrapSpec says how a new cluster starts. It is read once, when the
// seed member is created, and may be neither added, removed nor changed.
type BootstrapSpec struct {
	// restore starts the cluster from a stored snapshot instead of empty.
	// +optional
	Restore *RestoreSpec `json:"restore,omitempty"`
}

// RestoreSpec is the snapshot a new cluster is restored from.
type RestoreSpec struct {
	// source of the snapshot.
	// +required
	Source RestoreSource `json:"source"`
}

// RestoreSource is exactly one of snapshotName and location.
// +kubebuilder:validation:XValidation:rule="has(self.snapshotName) != has(self.location)",message="exactly one of snapshotName and location must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.location) || !has(self.location.s3) || (has(self.location.s3.key) && size(self.location.s3.key) > 0 && !self.location.s3.key.endsWith('/'))",message="location.s3.key must name the snapshot object (not a prefix)"
// +kubebuilder:validation:XValidation:rule="!has(self.location) || !has(self.location.pvc) || (has(self.location.pvc.path) && size(self.location.pvc.path) > 0 && !self.location.pvc.path.endsWith('/'))",message="location.pvc.path must name the snapshot file (not a directory)"
type RestoreSource struct {
	// snapshotName is a Complete EtcdSnapshot in the cluster's namespace;
	// its artifact's sha256 is checked on download.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	SnapshotName string `json:"snapshotName,omitempty"`

	// location is a stored snapshot file (an S3 object key or a file on a
	// PVC). No checksum is known, so only etcd's own trailing hash is checked.
	// +optional
	Location *SnapshotLocation `json:"location,omitempty"`
}

// MemberRestore is the resolved restore source of a seed member: where the
// snapshot file is and what it must hash to.
type MemberRestore struct {
	// location of the snapshot file; its key or path is the full one.
	// +required
	Location SnapshotLocation `json:"location"`
	// sha256 of the file in hex; empty when unknown (a bare location).
	// +optional
	SHA256 string `json:"sha256,omitempty"`
	// etag of the S3 object (the EtcdSnapshot's artifact.etag): only the
	// object that still has it is restored. Empty reads whatever the key
	// holds.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[!#-+\--~]*$`
	ETag string `json:"etag,omitempty"`
	// snapshotName is the EtcdSnapshot it came from, if any.
	// +optional
	SnapshotName string `json:"snapshotName,omitempty"`
	// revision the snapshot holds, when known.
	// +optional
	Revision int64 `json:"revision,omitempty"`
}

// RestoredFrom records what a cluster was restored from at bootstrap.
type RestoredFrom struct {
	// uri of the snapshot, s3://<bucket>/<key> or pvc://<claim>/<path>.
	URI string `json:"uri"`
	// snapshotName is the EtcdSnapshot it came from, if any.
	// +optional
	SnapshotName string `json:"snapshotName,omitempty"`
	// revision the snapshot holds, when known.
	// +optional
	Revision int64 `json:"revision,omitempty"`
}
