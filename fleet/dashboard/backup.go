package dashboard

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// BackupSummary is the backup state of one workload cluster's EtcdClusters
// that have a schedule (spec.backup); the others are left out.
type BackupSummary struct {
	// Scheduled counts the EtcdClusters with spec.backup.
	Scheduled int32
	// Behind counts those whose BackedUp condition is False
	// (BackupBehindSchedule or BackupFailed).
	Behind int32
	// Never counts those without status.backup.lastSuccessfulTime.
	Never int32
	// OldestLastBackup is the oldest lastSuccessfulTime among the others;
	// nil when none has one.
	OldestLastBackup *metav1.Time
}

// Backup summaries shown in FleetClusterStatus.BackupSummary, worst first.
const (
	BackupNever  = "never"
	BackupBehind = "behind"
	BackupOK     = "ok"
)

// SummarizeBackups reads the backup contract of memberctl's EtcdCluster
// (spec.backup, status.backup.lastSuccessfulTime, the BackedUp condition).
func SummarizeBackups(clusters []etcdv1.EtcdCluster) BackupSummary {
	var b BackupSummary
	for i := range clusters {
		ec := &clusters[i]
		if ec.Spec.Backup == nil {
			continue
		}
		b.Scheduled++
		if apimeta.IsStatusConditionFalse(ec.Status.Conditions, etcdv1.ConditionBackedUp) {
			b.Behind++
		}
		var last *metav1.Time
		if ec.Status.Backup != nil {
			last = ec.Status.Backup.LastSuccessfulTime
		}
		switch {
		case last == nil:
			b.Never++
		case b.OldestLastBackup == nil || last.Before(b.OldestLastBackup):
			t := seconds(last.Time)
			b.OldestLastBackup = &t
		}
	}
	return b
}

// Summary is the one word kubectl shows: never, behind, ok, or "" without
// schedules.
func (b BackupSummary) Summary() string {
	switch {
	case b.Scheduled == 0:
		return ""
	case b.Never > 0:
		return BackupNever
	case b.Behind > 0:
		return BackupBehind
	}
	return BackupOK
}

// applyBackups writes b into a FleetCluster's status.
func applyBackups(st *fleetv1.FleetClusterStatus, b BackupSummary) {
	st.EtcdClustersWithBackup, st.EtcdClustersBehindBackup, st.EtcdClustersNeverBackedUp = b.Scheduled, b.Behind, b.Never
	st.OldestLastBackupTime = b.OldestLastBackup.DeepCopy()
	st.BackupSummary = b.Summary()
}
