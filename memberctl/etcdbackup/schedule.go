package etcdbackup

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/schedule"
)

// parseSchedule is spec's schedule for the cluster with uid.
func parseSchedule(spec *v1alpha1.BackupSpec, uid types.UID) (schedule.Schedule, error) {
	return schedule.Parse("spec.backup", spec.Cron, spec.Interval, uid)
}

// nameTimeFormat is the due time in a scheduled snapshot's name.
const nameTimeFormat = "20060102150405"

// maxSnapshotName is the EtcdSnapshot CRD's limit on names (its Job is
// <name>-snapshot).
const maxSnapshotName = 52

// snapshotName is <cluster>-<yyyymmddhhmmss of due> (UTC). A cluster name
// too long for that is cut and given a hash of the whole, so that two long
// names sharing a prefix do not collide. The name depends on the due time
// only, so two reconciles racing for one due time create one snapshot.
func snapshotName(cluster string, due time.Time) string {
	suffix := "-" + due.UTC().Format(nameTimeFormat)
	if len(cluster)+len(suffix) <= maxSnapshotName {
		return cluster + suffix
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(cluster))
	tag := fmt.Sprintf("-%06x", h.Sum32()&0xffffff)
	return strings.TrimRight(cluster[:maxSnapshotName-len(suffix)-len(tag)], "-") + tag + suffix
}
