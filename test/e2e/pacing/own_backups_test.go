package pacing_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
)

const (
	// templatePrefix is the one prefix every cluster's spec.backup names,
	// as a fleet configured by template does.
	templatePrefix = "template/"
	// ownerKeys holds each cluster's own key, owner/<workload cluster>.
	ownerKeys = "owner/"
	// ownKeep is the retention of the template, below ownRounds so that
	// retention deletes.
	ownKeep = 2
	// ownRounds are the schedule's rounds the spec waits for.
	ownRounds = 3
	// restoredName is the cluster each workload cluster restores into.
	restoredName = "own-restored"
)

var _ = Describe("each cluster's own backups", func() {
	It("keeps ten EtcdClusters of one name on one bucket, prefix and cron apart: after three rounds and retention every kept object holds what its snapshot recorded, and each cluster restores its own keys", func(ctx SpecContext) {
		start := time.Now()
		expectPoliciesBound(ctx)

		By("writing a key of its own into every cluster")
		for _, w := range workloads {
			e := e2eutil.ConnectEtcd(ctx, sb.Cluster(w).Config, wc[w], etcdNS, etcdName)
			Eventually(func() error { _, err := e.Put(ctx, ownerKeys+w, w); return err }).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
			e.Close()
		}

		By("giving every cluster the same spec.backup: one bucket, one prefix, one cron, keep 2")
		setTemplateBackup(ctx, false)
		DeferCleanup(func(ctx SpecContext) {
			setTemplateBackup(ctx, true)
			removeClusters(ctx, restoredName, workloads...)
			removeSnapshots(ctx, templatePrefix)
		})

		By("waiting for three rounds in every cluster, restoring each from its newest once it has two")
		seen := map[string]map[string]v1alpha1.SnapshotArtifact{} // cluster -> snapshot -> its artifact when Complete
		rounds := map[string]map[string]bool{}                    // cluster -> snapshots seen in any phase
		restoredFrom := map[string]string{}                       // cluster -> snapshot it restores
		suspended := map[string]bool{}                            // clusters whose schedule is suspended after ownRounds
		for _, w := range workloads {
			seen[w], rounds[w] = map[string]v1alpha1.SnapshotArtifact{}, map[string]bool{}
		}
		Eventually(func(g Gomega) {
			for _, w := range workloads {
				snaps := snapshotsUnder(ctx, g, w, templatePrefix)
				for _, s := range snaps {
					rounds[w][s.Name] = true
				}
				// No fourth round: it would prune what the restore reads.
				// Each cluster stops on its own: one whose first round fell
				// a minute after the others' would otherwise give them a
				// fourth (CI saw w01's restore source pruned).
				if len(rounds[w]) >= ownRounds && !suspended[w] {
					setTemplateBackup(ctx, true, w)
					suspended[w] = true
				}
				for _, s := range snaps {
					if s.Status.Phase == v1alpha1.SnapshotFailed {
						// Final: waiting longer cannot mend it.
						StopTrying(fmt.Sprintf("%s/%s failed: %+v", w, s.Name, s.Status.Conditions)).Now()
					}
					if s.Status.Phase == v1alpha1.SnapshotComplete && s.Status.Artifact != nil {
						seen[w][s.Name] = *s.Status.Artifact
					}
				}
				// The second round holds the key and is kept by retention
				// (keep 2 of three): restoring now overlaps the third round.
				if _, ok := restoredFrom[w]; !ok && len(seen[w]) >= 2 {
					restoredFrom[w] = newestComplete(snaps)
					restoreFrom(ctx, w, restoredName, restoredFrom[w])
				}
			}
			for _, w := range workloads {
				g.Expect(len(seen[w])).To(BeNumerically(">=", ownRounds), "%s: rounds Complete", w)
			}
		}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		AddReportEntry("three rounds", time.Since(start).Round(time.Second).String())

		By("waiting for retention: two kept per cluster, the older ones and their objects gone")
		kept := map[string][]v1alpha1.EtcdSnapshot{}
		Eventually(func(g Gomega) {
			for _, w := range workloads {
				kept[w] = snapshotsUnder(ctx, g, w, templatePrefix)
				g.Expect(kept[w]).To(HaveLen(ownKeep), "%s: snapshots left by retention", w)
				for _, s := range kept[w] {
					g.Expect(s.Status.Phase).To(Equal(v1alpha1.SnapshotComplete), "%s/%s", w, s.Name)
				}
			}
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		s3c, err := s3.Client()
		Expect(err).NotTo(HaveOccurred())
		for _, w := range workloads {
			for name, art := range seen[w] {
				if slices.ContainsFunc(kept[w], func(s v1alpha1.EtcdSnapshot) bool { return s.Name == name }) {
					continue
				}
				_, err := s3c.StatObject(ctx, bucket, artifactKey(art), minio.StatObjectOptions{})
				Expect(minio.ToErrorResponse(err).Code).To(Equal("NoSuchKey"), "%s: pruned %s's object %s", w, name, art.URI)
			}
		}

		By("checking every kept snapshot's object: its own key, its ETag, exactly the bytes recorded")
		owner := map[string]string{} // object key -> cluster
		names := map[string]int{}    // snapshot name -> clusters that kept it
		for _, w := range workloads {
			ec := &v1alpha1.EtcdCluster{}
			Expect(wc[w].Get(ctx, types.NamespacedName{Namespace: etcdNS, Name: etcdName}, ec)).To(Succeed())
			for _, s := range kept[w] {
				art := s.Status.Artifact
				key := artifactKey(*art)
				Expect(key).To(HavePrefix(templatePrefix+etcdNS+"/"+etcdName+"/"+string(ec.UID)+"/"), "%s/%s", w, s.Name)
				Expect(owner).NotTo(HaveKey(key), "%s/%s has the key of %s's snapshot", w, s.Name, owner[key])
				owner[key] = w
				names[s.Name]++
				expectObject(ctx, Default, *art)
			}
		}
		// The collision the layout exists for: the same snapshot names in
		// every cluster.
		shared := 0
		for _, n := range names {
			if n == len(workloads) {
				shared++
			}
		}
		Expect(shared).To(BeNumerically(">=", 1), "no snapshot name was kept by all ten clusters: %v", names)

		By("checking each restored cluster holds its own key, and no other cluster's")
		for _, w := range workloads {
			expectRestored(ctx, w, restoredName, restoredFrom[w], kept[w])
			expectOwnKeys(ctx, w, restoredName, ownerKeys, w)
		}
		AddReportEntry("own backups spec", time.Since(start).Round(time.Second).String())
	}, SpecTimeout(6*time.Minute))
})

// expectPoliciesBound checks that every workload cluster enforces the
// admission policies register installs (the chart's, too) that decide
// what a snapshot or a restore may name and mount.
func expectPoliciesBound(ctx context.Context) {
	GinkgoHelper()
	for _, w := range workloads {
		for _, name := range []string{"etcdfleet-workload-cluster-references", "etcdfleet-workload-snapshot-references",
			"etcdfleet-workload-pod-secrets", "etcdfleet-workload-jobs"} {
			b, err := sb.Cluster(w).Clientset.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, name, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred(), "%s: binding %s", w, name)
			Expect(b.Spec.ValidationActions).To(ContainElement(admissionregistrationv1.Deny), "%s: binding %s", w, name)
		}
	}
}

// setTemplateBackup gives the clusters (every cluster when none is named)
// the template's spec.backup.
func setTemplateBackup(ctx context.Context, suspend bool, clusters ...string) {
	GinkgoHelper()
	if len(clusters) == 0 {
		clusters = workloads
	}
	setBackupEverywhere(ctx, &v1alpha1.BackupSpec{Cron: "* * * * *", Suspend: suspend,
		Retention: &v1alpha1.BackupRetention{Keep: ptr.To(int32(ownKeep))},
		Location: v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: s3.Endpoint, Bucket: bucket,
			Key: templatePrefix, CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}}}, clusters...)
}

// setBackupEverywhere sets spec.backup of the EtcdCluster in the clusters
// at once.
func setBackupEverywhere(ctx context.Context, b *v1alpha1.BackupSpec, clusters ...string) {
	GinkgoHelper()
	var wg sync.WaitGroup
	for _, w := range clusters {
		wg.Go(func() {
			defer GinkgoRecover()
			ec := &v1alpha1.EtcdCluster{}
			Expect(wc[w].Get(ctx, types.NamespacedName{Namespace: etcdNS, Name: etcdName}, ec)).To(Succeed())
			patch := client.MergeFrom(ec.DeepCopy())
			ec.Spec.Backup = b.DeepCopy()
			Expect(wc[w].Patch(ctx, ec, patch)).To(Succeed())
		})
	}
	wg.Wait()
}

// snapshotsUnder lists w's snapshots of the EtcdCluster stored under prefix.
func snapshotsUnder(ctx context.Context, g Gomega, w, prefix string) []v1alpha1.EtcdSnapshot {
	var list v1alpha1.EtcdSnapshotList
	g.Expect(wc[w].List(ctx, &list, client.InNamespace(etcdNS))).To(Succeed())
	var out []v1alpha1.EtcdSnapshot
	for _, s := range list.Items {
		if l := s.Spec.Location.S3; l != nil && s.Spec.ClusterRef.Name == etcdName && strings.HasPrefix(l.Key, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// newestComplete is the name of the newest Complete snapshot (scheduled
// names sort by their due time).
func newestComplete(snaps []v1alpha1.EtcdSnapshot) string {
	newest := ""
	for _, s := range snaps {
		if s.Status.Phase == v1alpha1.SnapshotComplete && s.Name > newest {
			newest = s.Name
		}
	}
	return newest
}

// artifactKey is the object key of an S3 artifact (s3://<bucket>/<key>).
func artifactKey(a v1alpha1.SnapshotArtifact) string {
	return strings.TrimPrefix(a.URI, "s3://"+bucket+"/")
}

// expectObject checks that the object a snapshot recorded is there with
// its ETag and holds exactly the bytes recorded: its size and sha256.
func expectObject(ctx context.Context, g Gomega, a v1alpha1.SnapshotArtifact) minio.ObjectInfo {
	GinkgoHelper()
	c, err := s3.Client()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.ETag).NotTo(BeEmpty(), "%s: no ETag recorded", a.URI)
	opts := minio.GetObjectOptions{}
	g.Expect(opts.SetMatchETag(a.ETag)).To(Succeed())
	obj, err := c.GetObject(ctx, bucket, artifactKey(a), opts)
	g.Expect(err).NotTo(HaveOccurred())
	defer obj.Close()
	h := sha256.New()
	n, err := io.Copy(h, obj)
	g.Expect(err).NotTo(HaveOccurred(), "%s with ETag %s", a.URI, a.ETag)
	g.Expect(n).To(Equal(a.SizeBytes), "%s: size", a.URI)
	g.Expect(hex.EncodeToString(h.Sum(nil))).To(Equal(a.SHA256), "%s: sha256", a.URI)
	info, err := obj.Stat()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.ETag).To(Equal(a.ETag), "%s", a.URI)
	return info
}

// restoreFrom creates EtcdCluster name in w, restored from w's snapshot
// snap (by snapshotName: the policies admit the seed's Secret from the
// cluster's status.restoreSource).
func restoreFrom(ctx context.Context, w, name, snap string) {
	GinkgoHelper()
	ec := e2eutil.NewEtcdCluster(etcdNS, name, 1, false)
	ec.Spec.Bootstrap = &v1alpha1.BootstrapSpec{Restore: &v1alpha1.RestoreSpec{Source: v1alpha1.RestoreSource{SnapshotName: snap}}}
	Expect(wc[w].Create(ctx, ec)).To(Succeed(), "%s: restore from %s", w, snap)
}

// expectRestored waits for w's cluster name to be Available and checks it
// says it was restored from w's snapshot snap, one of kept.
func expectRestored(ctx context.Context, w, name, snap string, kept []v1alpha1.EtcdSnapshot) {
	GinkgoHelper()
	e2eutil.WaitAvailable(ctx, wc[w], etcdNS, name, 2*time.Minute)
	i := slices.IndexFunc(kept, func(s v1alpha1.EtcdSnapshot) bool { return s.Name == snap })
	Expect(i).NotTo(Equal(-1), "%s restored from %s, which retention did not keep", w, snap)
	got := &v1alpha1.EtcdCluster{}
	Expect(wc[w].Get(ctx, types.NamespacedName{Namespace: etcdNS, Name: name}, got)).To(Succeed())
	Expect(got.Status.RestoredFrom).To(Equal(&v1alpha1.RestoredFrom{URI: kept[i].Status.Artifact.URI,
		SnapshotName: snap, Revision: kept[i].Status.Artifact.Revision}), "%s", w)
}

// expectOwnKeys checks that w's cluster name holds, under prefix, exactly
// the key prefix+owner with value owner.
func expectOwnKeys(ctx context.Context, w, name, prefix, owner string) {
	GinkgoHelper()
	e := e2eutil.ConnectEtcd(ctx, sb.Cluster(w).Config, wc[w], etcdNS, name)
	defer e.Close()
	Eventually(func(g Gomega) {
		resp, err := e.Get(ctx, prefix, clientv3.WithPrefix())
		g.Expect(err).NotTo(HaveOccurred())
		var got []string
		for _, kv := range resp.Kvs {
			got = append(got, fmt.Sprintf("%s=%s", kv.Key, kv.Value))
		}
		g.Expect(got).To(Equal([]string{prefix + owner + "=" + owner}), "%s/%s", w, name)
	}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
}

// removeSnapshots deletes every cluster's snapshots under prefix without
// their cleanup (the objects stay; the bucket is the suite's), so that
// other specs find no Complete scheduled snapshot of this one's.
func removeSnapshots(ctx context.Context, prefix string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		for _, w := range workloads {
			for _, s := range snapshotsUnder(ctx, g, w, prefix) {
				patch := client.MergeFrom(s.DeepCopy())
				s.Finalizers = nil
				g.Expect(client.IgnoreNotFound(wc[w].Patch(ctx, &s, patch))).To(Succeed())
				g.Expect(client.IgnoreNotFound(wc[w].Delete(ctx, &s))).To(Succeed())
			}
			g.Expect(snapshotsUnder(ctx, g, w, prefix)).To(BeEmpty())
		}
	}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
}

// removeClusters deletes EtcdCluster name in the clusters and waits until
// it is gone, its members with it.
func removeClusters(ctx context.Context, name string, clusters ...string) {
	GinkgoHelper()
	for _, w := range clusters {
		ec := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: etcdNS, Name: name}}
		Expect(client.IgnoreNotFound(wc[w].Delete(ctx, ec))).To(Succeed())
	}
	Eventually(func(g Gomega) {
		for _, w := range clusters {
			err := wc[w].Get(ctx, types.NamespacedName{Namespace: etcdNS, Name: name}, &v1alpha1.EtcdCluster{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s: %s still there (%v)", w, name, err)
		}
	}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
}
