package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// BackupSpec schedules EtcdSnapshots of an EtcdCluster and prunes old ones.
// +kubebuilder:validation:XValidation:rule="has(self.cron) != has(self.interval)",message="exactly one of cron and interval must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.interval) || duration(self.interval) >= duration('10s')",message="interval must be at least 10s"
type BackupSpec struct {
	// cron is a standard five-field schedule ("0 */6 * * *"), in UTC. It
	// is parsed by the controller: a bad one sets BackedUp=False
	// (BackupInvalidSchedule) and a Warning Event, and nothing else.
	// +optional
	// +kubebuilder:validation:MinLength=9
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="!self.contains('TZ=')",message="cron is always in UTC: remove CRON_TZ= or TZ="
	Cron string `json:"cron,omitempty"`

	// interval between snapshots, for example "6h"; at least 10s (short
	// intervals are for tests: a snapshot every few seconds only churns the
	// store). Runs are due at multiples of the interval since the Unix
	// epoch plus an offset inside the interval derived from the cluster's
	// UID (FNV-1a of the UID, modulo the interval, whole seconds), so that
	// clusters created together do not snapshot together, and a cluster's
	// times stay the same across restarts of the manager.
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// location the snapshots are stored at. An S3 key or PVC path is a
	// prefix: each snapshot's name plus ".db" is appended, after
	// "<namespace>/<cluster>/<uid>/" in a bucket, so that clusters sharing
	// a bucket and key never share an object.
	// +required
	Location SnapshotLocation `json:"location"`

	// retention says which scheduled snapshots are kept; the others are
	// deleted, together with their stored objects.
	// +optional
	Retention *BackupRetention `json:"retention,omitempty"`

	// suspend stops new scheduled snapshots; existing ones are kept.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// verify, when set, runs a restore drill on its own schedule: the
	// newest Complete EtcdSnapshot of the cluster is restored into a
	// throwaway etcd inside a Job (etcdutl snapshot restore, then one read
	// of the revision), and the RestoreVerified condition reports the
	// outcome. The running cluster is never touched. Unset, no drill runs.
	// +optional
	Verify *RestoreDrillSpec `json:"verify,omitempty"`
}

// RestoreDrillSpec schedules restore drills. Exactly one of cron and
// interval, parsed like spec.backup's.
// +kubebuilder:validation:XValidation:rule="has(self.cron) != has(self.interval)",message="exactly one of cron and interval must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.interval) || duration(self.interval) >= duration('10s')",message="interval must be at least 10s"
type RestoreDrillSpec struct {
	// cron is a standard five-field schedule ("0 3 * * 0"), in UTC. It is
	// parsed by the controller: a bad one sets RestoreVerified=False
	// (BackupInvalidSchedule) and a Warning Event, and no drill runs.
	// +optional
	// +kubebuilder:validation:MinLength=9
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="!self.contains('TZ=')",message="cron is always in UTC: remove CRON_TZ= or TZ="
	Cron string `json:"cron,omitempty"`

	// interval between drills, for example "24h"; at least 10s. Due times
	// follow the rule of spec.backup.interval (an offset from the
	// cluster's UID).
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`
}

// BackupRetention bounds the scheduled snapshots kept. Snapshots that are
// not Complete never count towards keep, and the newest Complete one is
// never deleted.
// +kubebuilder:validation:XValidation:rule="has(self.keep) || has(self.maxAge)",message="set keep, maxAge or both"
type BackupRetention struct {
	// keep is how many Complete scheduled snapshots are kept, newest first.
	// +optional
	// +kubebuilder:validation:Minimum=1
	Keep *int32 `json:"keep,omitempty"`

	// maxAge deletes scheduled snapshots older than this.
	// +optional
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`
}

// BackupStatus is what the backup schedule last did.
type BackupStatus struct {
	// lastScheduleTime is when the newest scheduled snapshot was created.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// nextScheduleTime is when the next one is due.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`

	// lastSuccessfulTime is when the newest Complete snapshot of the cluster
	// (scheduled or not) completed: the cluster's last good backup.
	// +optional
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`

	// lastSnapshotName is that snapshot's EtcdSnapshot.
	// +optional
	LastSnapshotName string `json:"lastSnapshotName,omitempty"`

	// lastSizeBytes and lastRevision are from its artifact.
	// +optional
	LastSizeBytes int64 `json:"lastSizeBytes,omitempty"`
	// +optional
	LastRevision int64 `json:"lastRevision,omitempty"`

	// lastDuration is how long it took from Job creation to Complete.
	// +optional
	LastDuration *metav1.Duration `json:"lastDuration,omitempty"`

	// verify is what the restore drill (spec.backup.verify) last did.
	// +optional
	Verify *RestoreDrillStatus `json:"verify,omitempty"`
}

// RestoreDrillStatus is the restore drill's schedule and its last outcome;
// the RestoreVerified condition says whether that outcome was good.
type RestoreDrillStatus struct {
	// lastScheduleTime is the due time of the newest drill.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// nextScheduleTime is when the next one is due.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`

	// snapshotName is the EtcdSnapshot the newest drill restores, and
	// snapshotUID the object it was when chosen: a snapshot replaced under
	// the same name is not what the drill set out to prove.
	// +optional
	SnapshotName string `json:"snapshotName,omitempty"`
	// +optional
	SnapshotUID types.UID `json:"snapshotUID,omitempty"`

	// completionTime is when the newest drill ended; unset while it runs.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// revision is what the throwaway etcd served in the last good drill,
	// and duration how long that drill took (download, checks, restore,
	// start, read).
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
}

// ConditionBackedUp (EtcdCluster, only with spec.backup) is True while the
// newest scheduled snapshot that is due has completed.
const ConditionBackedUp = "BackedUp"

// BackedUp condition reasons.
const (
	// ReasonBackupOnSchedule (BackedUp=True).
	ReasonBackupOnSchedule = "BackupOnSchedule"
	// ReasonBackupBehindSchedule (BackedUp=False): a scheduled snapshot is
	// due and has not completed (not started, running too long, or paced).
	ReasonBackupBehindSchedule = "BackupBehindSchedule"
	// ReasonBackupFailed (BackedUp=False): the newest scheduled snapshot failed.
	ReasonBackupFailed = "BackupFailed"
	// ReasonBackupInvalidSchedule (BackedUp=False): spec.backup.cron does
	// not parse; no snapshot is scheduled until it is fixed.
	ReasonBackupInvalidSchedule = "BackupInvalidSchedule"
	// ReasonBackupSuspended (BackedUp=False): spec.backup.suspend is true.
	ReasonBackupSuspended = "BackupSuspended"
)

// ConditionRestoreVerified (EtcdCluster, only with spec.backup.verify) is
// True while the newest restore drill restored its snapshot.
const ConditionRestoreVerified = "RestoreVerified"

// RestoreVerified condition reasons (and BackupInvalidSchedule for a
// spec.backup.verify.cron that does not parse).
const (
	// ReasonRestoreDrillPassed (True): the snapshot restored into a
	// throwaway etcd, which served at least its recorded revision.
	ReasonRestoreDrillPassed = "RestoreDrillPassed"
	// ReasonRestoreDrillFailed (False): the drill's Job failed: the stored
	// copy is gone, replaced, corrupt, or did not restore or serve.
	ReasonRestoreDrillFailed = "RestoreDrillFailed"
	// ReasonRestoreDrillSnapshotGone (False): the EtcdSnapshot the drill
	// chose was deleted or replaced before the drill ended.
	ReasonRestoreDrillSnapshotGone = "RestoreDrillSnapshotGone"
	// ReasonRestoreDrillNoSnapshot (False): at the drill's due time the
	// cluster had no Complete EtcdSnapshot to restore.
	ReasonRestoreDrillNoSnapshot = "RestoreDrillNoSnapshot"
	// ReasonRestoreDrillBlocked (False): a Job of the drill's name that the
	// snapshot does not control is in the way.
	ReasonRestoreDrillBlocked = "RestoreDrillBlocked"
	// ReasonRestoreDrillRunning (Unknown): the first drill runs.
	ReasonRestoreDrillRunning = "RestoreDrillRunning"
)

// Labels and annotations of scheduled EtcdSnapshots.
const (
	// LabelScheduled is "true" on the EtcdSnapshots spec.backup created;
	// only they are pruned by retention.
	LabelScheduled = GroupName + "/scheduled"
	// AnnotationScheduledAt is the due time (RFC 3339, UTC) a scheduled
	// snapshot was created for.
	AnnotationScheduledAt = GroupName + "/scheduled-at"
)
