package etcdbackup

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdsnapshot"
)

// TestScheduledKeyLayout pins the object key of a scheduled snapshot to
// the layout docs/operations.md gives:
// <key>/<namespace>/<cluster>/<uid>/<snapshot>.db, one "/" after the key
// whether it ends in one or not, and none without a key.
func TestScheduledKeyLayout(t *testing.T) {
	due := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	for key, want := range map[string]string{
		"apps":  "apps/team/main/0f8a7c9e-1b2d-4e5f-8a9b-0c1d2e3f4a5b/main-20261202030000.db",
		"apps/": "apps/team/main/0f8a7c9e-1b2d-4e5f-8a9b-0c1d2e3f4a5b/main-20261202030000.db",
		"":      "team/main/0f8a7c9e-1b2d-4e5f-8a9b-0c1d2e3f4a5b/main-20261202030000.db",
	} {
		ec := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "main", UID: "0f8a7c9e-1b2d-4e5f-8a9b-0c1d2e3f4a5b"},
			Spec: v1alpha1.EtcdClusterSpec{Backup: &v1alpha1.BackupSpec{Location: v1alpha1.SnapshotLocation{
				S3: &v1alpha1.S3Location{Bucket: "fleet", Key: key}}}}}
		s := &v1alpha1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: snapshotName(ec.Name, due)},
			Spec: v1alpha1.EtcdSnapshotSpec{Location: Location(ec)}}
		if got := etcdsnapshot.ObjectKey(s); got != want {
			t.Errorf("key %q: object %q, want %q", key, got, want)
		}
	}
}
