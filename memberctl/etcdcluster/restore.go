package etcdcluster

import (
	"context"
	"fmt"
	"path"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdsnapshot"
)

// requeueRestoreSource: how often a cluster waiting for its restore
// snapshot looks again; a snapshot Job takes seconds to minutes.
const requeueRestoreSource = 5 * time.Second

// seedRestore resolves spec.bootstrap.restore into the seed's restore
// source. ok is false while the named EtcdSnapshot is missing or not
// Complete; the Progressing condition then says why, and the seed waits.
func (p *pass) seedRestore(ctx context.Context) (r *v1alpha1.MemberRestore, ok bool, err error) {
	if r := p.ec.Status.Recovery; r != nil && r.Phase == v1alpha1.RecoveryRestoring {
		return r.Source.DeepCopy(), true, nil // decided in status: never re-resolved
	}
	b := p.ec.Spec.Bootstrap
	if b == nil || b.Restore == nil {
		return nil, true, nil
	}
	src := b.Restore.Source
	if src.Location != nil {
		return &v1alpha1.MemberRestore{Location: *src.Location.DeepCopy()}, true, nil
	}
	var snap v1alpha1.EtcdSnapshot
	err = p.cl.Client.Get(ctx, client.ObjectKey{Namespace: p.ec.Namespace, Name: src.SnapshotName}, &snap)
	switch {
	case apierrors.IsNotFound(err):
		p.waitForRestoreSource(fmt.Sprintf("EtcdSnapshot %s does not exist", src.SnapshotName))
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("get EtcdSnapshot %s: %w", src.SnapshotName, err)
	case snap.Status.Phase == v1alpha1.SnapshotFailed:
		p.waitForRestoreSource(fmt.Sprintf("EtcdSnapshot %s failed; recreate the cluster with another source", snap.Name))
		return nil, false, nil
	case snap.Status.Phase != v1alpha1.SnapshotComplete || snap.Status.Artifact == nil:
		p.waitForRestoreSource(fmt.Sprintf("EtcdSnapshot %s is %q, not Complete yet", snap.Name, snap.Status.Phase))
		return nil, false, nil
	}
	return fromSnapshot(&snap), true, nil
}

// fromSnapshot is the restore source of a Complete EtcdSnapshot: its
// location with the full key or path it was stored under.
func fromSnapshot(s *v1alpha1.EtcdSnapshot) *v1alpha1.MemberRestore {
	loc := *s.Spec.Location.DeepCopy()
	if loc.S3 != nil {
		loc.S3.Key = etcdsnapshot.ObjectKey(s)
	} else {
		loc.PVC.Path = path.Clean(etcdsnapshot.FilePath(s))
	}
	return &v1alpha1.MemberRestore{Location: loc, SHA256: s.Status.Artifact.SHA256, ETag: s.Status.Artifact.ETag,
		SnapshotName: s.Name, Revision: s.Status.Artifact.Revision}
}

// recordRestoreSource notes in status.restoreSource the location that a
// seed restoring from an EtcdSnapshot (spec.bootstrap.restore.source
// .snapshotName) mounts, before the seed exists: the workload admission
// policy admits that Secret or claim only when the seed's EtcdCluster
// names it, and cannot see the EtcdSnapshot. It reports whether the status
// changed. A location named in the spec, and a restore after total loss
// (from spec.backup's location), need no record.
func (p *pass) recordRestoreSource(r *v1alpha1.MemberRestore) bool {
	if r == nil || r.SnapshotName == "" || p.ec.Spec.Bootstrap == nil || p.ec.Spec.Bootstrap.Restore == nil ||
		p.ec.Spec.Bootstrap.Restore.Source.SnapshotName == "" {
		return false
	}
	if cur := p.ec.Status.RestoreSource; cur != nil && equality.Semantic.DeepEqual(*cur, r.Location) {
		return false
	}
	p.ec.Status.RestoreSource = r.Location.DeepCopy()
	return true
}

func (p *pass) waitForRestoreSource(msg string) {
	p.setCondition(v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonWaitingForRestoreSource, msg)
}

// recordRestore notes in the status, and in an Event, what the cluster was
// restored from, once its seed has formed it.
func (p *pass) recordRestore(seed *v1alpha1.EtcdMember) {
	if rec := p.ec.Status.Recovery; rec != nil && rec.Phase == v1alpha1.RecoveryRestoring {
		p.finishRecovery()
		return
	}
	r := seed.Spec.Restore
	if r == nil || p.ec.Status.RestoredFrom != nil {
		return
	}
	from := &v1alpha1.RestoredFrom{URI: restoreURI(r.Location), SnapshotName: r.SnapshotName, Revision: r.Revision}
	p.ec.Status.RestoredFrom = from
	what := from.URI
	if from.SnapshotName != "" {
		what = fmt.Sprintf("EtcdSnapshot %s (%s, revision %d)", from.SnapshotName, from.URI, from.Revision)
	}
	p.event(corev1.EventTypeNormal, v1alpha1.ReasonRestored, "Restored from %s as new etcd cluster %s", what, p.ec.Status.ClusterID)
}

// restoreURI names a stored snapshot the way EtcdSnapshot artifacts do.
func restoreURI(l v1alpha1.SnapshotLocation) string {
	if l.S3 != nil {
		return "s3://" + l.S3.Bucket + "/" + l.S3.Key
	}
	return "pvc://" + l.PVC.ClaimName + "/" + l.PVC.Path
}
