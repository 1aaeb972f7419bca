package fleetdemo

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
	"github.com/etcdfleet/etcdfleet/test/sandbox/objstore"
)

const (
	// backupBucket holds every demo cluster's snapshots, one prefix per
	// workload cluster.
	backupBucket = "etcd-backups"
	// backupSecret is the S3 credentials Secret in each workload cluster.
	backupSecret = "backup-s3"
	// backupInterval is short so that the first backup of every cluster
	// lands within the demo; each cluster's runs sit at their own offset
	// inside it.
	backupInterval = 30 * time.Second
	// backupTimeout is one interval for the first due time, the fleet's
	// paced starts of every EtcdCluster, and the Jobs themselves.
	backupTimeout = 3 * time.Minute
)

// backUp starts a real S3 store (SeaweedFS on loopback), gives every demo
// EtcdCluster a backup schedule to it and waits for each one's first good
// backup. The returned func stops the store.
func (d *driver) backUp(ctx context.Context) (func(), error) {
	fmt.Fprintf(d.out, "\n==> backing up every EtcdCluster to S3 (SeaweedFS) every %s, keeping 3\n", backupInterval)
	start := time.Now()
	s3, err := objstore.Start(ctx, filepath.Join(d.f.Dir, "objstore"))
	if err != nil {
		return nil, err
	}
	if err := s3.MakeBucket(ctx, backupBucket); err != nil {
		s3.Stop()
		return nil, err
	}
	for _, w := range d.workloads {
		if err := d.scheduleBackups(ctx, w.Name, s3); err != nil {
			s3.Stop()
			return nil, err
		}
	}
	if err := d.waitBackups(ctx); err != nil {
		s3.Stop()
		return nil, err
	}
	fmt.Fprintf(d.out, "    every EtcdCluster backed up in %s\n", time.Since(start).Round(time.Second))
	return s3.Stop, nil
}

// scheduleBackups writes the credentials Secret and spec.backup of every
// EtcdCluster of one workload cluster.
func (d *driver) scheduleBackups(ctx context.Context, w string, s3 *objstore.Server) error {
	c := d.clients[w]
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: etcdNamespace, Name: backupSecret},
		StringData: map[string]string{agent.AccessKeyIDKey: s3.AccessKey, agent.SecretAccessKeyKey: s3.SecretKey}}
	if err := c.Create(ctx, secret); err != nil {
		return fmt.Errorf("%s: backup credentials: %w", w, err)
	}
	keep := int32(3)
	for i := 0; i < d.o.EtcdClustersPer; i++ {
		ec := &etcdv1.EtcdCluster{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: etcdNamespace, Name: d.etcdName(i)}, ec); err != nil {
			return err
		}
		patch := client.MergeFrom(ec.DeepCopy())
		ec.Spec.Backup = &etcdv1.BackupSpec{
			Interval: &metav1.Duration{Duration: backupInterval},
			Location: etcdv1.SnapshotLocation{S3: &etcdv1.S3Location{Endpoint: s3.Endpoint, Bucket: backupBucket,
				Key: w + "/", CredentialsSecretRef: corev1.LocalObjectReference{Name: backupSecret}}},
			Retention: &etcdv1.BackupRetention{Keep: &keep},
		}
		if err := c.Patch(ctx, ec, patch); err != nil {
			return fmt.Errorf("%s/%s: spec.backup: %w", w, ec.Name, err)
		}
	}
	return nil
}

// waitBackups waits until every EtcdCluster reports a last good backup,
// then prints it.
func (d *driver) waitBackups(ctx context.Context) error {
	var lines []string
	err := wait.PollUntilContextTimeout(ctx, time.Second, backupTimeout, true, func(ctx context.Context) (bool, error) {
		lines = lines[:0]
		for _, w := range d.workloads {
			for i := 0; i < d.o.EtcdClustersPer; i++ {
				ec := &etcdv1.EtcdCluster{}
				if err := d.clients[w.Name].Get(ctx, types.NamespacedName{Namespace: etcdNamespace, Name: d.etcdName(i)}, ec); err != nil {
					return false, nil
				}
				b := ec.Status.Backup
				if b == nil || b.LastSuccessfulTime == nil {
					return false, nil
				}
				lines = append(lines, fmt.Sprintf("    %s/%s: %s, %d bytes at revision %d, took %s", w.Name, ec.Name,
					b.LastSnapshotName, b.LastSizeBytes, b.LastRevision, durationOf(b.LastDuration)))
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for every EtcdCluster's first backup: %w", err)
	}
	for _, l := range lines {
		fmt.Fprintln(d.out, l)
	}
	return nil
}

func durationOf(d *metav1.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.Duration.Round(100 * time.Millisecond)
}

// waitDashboardBackups gives the dashboard (it writes each object at most
// every 2 s) the time to show every cluster's last good backup, so that
// the table printed next has them (none "never"); it gives up quietly
// after 15 s.
func (d *driver) waitDashboardBackups(ctx context.Context) {
	mgmt := d.fleet.Manager.GetLocalManager().GetClient()
	_ = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, w := range d.workloads {
			fc := &fleetv1.FleetCluster{}
			if err := mgmt.Get(ctx, types.NamespacedName{Namespace: Namespace, Name: w.Name}, fc); err != nil ||
				fc.Status.EtcdClustersNeverBackedUp != 0 || fc.Status.EtcdClustersBehindBackup != 0 {
				return false, nil
			}
		}
		return true, nil
	})
}
