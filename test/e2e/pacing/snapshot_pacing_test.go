package pacing_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdsnapshot"
)

// runLog records, per snapshot Pod, when the test saw it appear and when
// it saw it end, on the test's one clock. A Pod is created after its Job,
// which is created only with a slot, and ends before its Job is Complete,
// which is when the slot is released: so the Pods' intervals lie inside
// the slots' and never overlap more than the slots do.
type runLog struct {
	mu    sync.Mutex
	start map[string]time.Time
	end   map[string]time.Time
}

func (l *runLog) observe(cluster string, ev watch.Event) {
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	k := cluster + "/" + p.Name
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, seen := l.start[k]; !seen {
		l.start[k] = now
	}
	ended := ev.Type == watch.Deleted || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	if _, done := l.end[k]; ended && !done {
		l.end[k] = now
	}
}

// peak is the most Pods running at once, and how many Pods never ended.
func (l *runLog) peak() (peak, open int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	type edge struct {
		at time.Time
		d  int
	}
	var edges []edge
	for k, s := range l.start {
		e, ok := l.end[k]
		if !ok {
			open++
			e = time.Now()
		}
		edges = append(edges, edge{s, 1}, edge{e, -1})
	}
	// Ends before starts at the same instant: touching is not overlapping.
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.d - b.d
	})
	n := 0
	for _, e := range edges {
		n += e.d
		peak = max(peak, n)
	}
	return peak, open
}

// watchSnapshotPods records the snapshot Pods of cluster w until ctx ends.
func watchSnapshotPods(ctx context.Context, w string, l *runLog) {
	GinkgoHelper()
	wi, err := sb.Cluster(w).Clientset.CoreV1().Pods(etcdNS).Watch(ctx, metav1.ListOptions{LabelSelector: etcdsnapshot.LabelSnapshot})
	Expect(err).NotTo(HaveOccurred())
	go func() {
		defer GinkgoRecover()
		defer wi.Stop()
		for ev := range wi.ResultChan() {
			l.observe(w, ev)
		}
	}()
}

// watchWaiting watches every cluster's EtcdSnapshots (named name, or all
// when name is empty) until ctx ends, and returns how many clusters had
// one whose status said WaitingForSlot. A watch sees every status write,
// where a poll can miss a short wait.
func watchWaiting(ctx context.Context, name string) func() int {
	GinkgoHelper()
	var mu sync.Mutex
	waited := map[string]bool{}
	for _, w := range workloads {
		opts := []client.ListOption{client.InNamespace(etcdNS)}
		if name != "" {
			opts = append(opts, client.MatchingFields{"metadata.name": name})
		}
		wi, err := wc[w].Watch(ctx, &v1alpha1.EtcdSnapshotList{}, opts...)
		Expect(err).NotTo(HaveOccurred())
		go func() {
			defer GinkgoRecover()
			defer wi.Stop()
			for ev := range wi.ResultChan() {
				s, ok := ev.Object.(*v1alpha1.EtcdSnapshot)
				if !ok {
					continue
				}
				if c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady); c != nil && c.Reason == v1alpha1.ReasonWaitingForSlot {
					mu.Lock()
					waited[w] = true
					mu.Unlock()
				}
			}
		}()
	}
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(waited)
	}
}

var _ = Describe("snapshot pacing", func() {
	It("never runs more than snapshots.maxConcurrent snapshots at once when ten clusters snapshot at the same moment, and completes them all", func(ctx SpecContext) {
		l := &runLog{start: map[string]time.Time{}, end: map[string]time.Time{}}
		wctx, stop := context.WithCancel(context.Background())
		defer stop()
		for _, w := range workloads {
			watchSnapshotPods(wctx, w, l)
		}

		slow := startSlowS3()
		waited := watchWaiting(wctx, "now")

		By("creating an EtcdSnapshot in every cluster at once")
		var wg sync.WaitGroup
		for _, w := range workloads {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				snap := &v1alpha1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: etcdNS, Name: "now"},
					Spec: v1alpha1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: etcdName},
						Location: v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: slow, Bucket: bucket,
							Key: w + "/", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}}}}
				Expect(wc[w].Create(ctx, snap)).To(Succeed())
			}()
		}
		wg.Wait()

		By("waiting for every snapshot to complete")
		Eventually(func(g Gomega) {
			var pending []string
			for _, w := range workloads {
				s := &v1alpha1.EtcdSnapshot{}
				g.Expect(wc[w].Get(ctx, types.NamespacedName{Namespace: etcdNS, Name: "now"}, s)).To(Succeed())
				g.Expect(s.Status.Phase).NotTo(Equal(v1alpha1.SnapshotFailed), "%s: %+v", w, s.Status.Conditions)
				if s.Status.Phase != v1alpha1.SnapshotComplete {
					pending = append(pending, fmt.Sprintf("%s: %s %+v", w, s.Status.Phase, s.Status.Conditions))
				}
			}
			g.Expect(pending).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())

		expectPaced(l, waited())
	}, SpecTimeout(6*time.Minute))

	It("never runs more than snapshots.maxConcurrent snapshots at once when ten clusters get the same backup schedule", func(ctx SpecContext) {
		l := &runLog{start: map[string]time.Time{}, end: map[string]time.Time{}}
		wctx, stop := context.WithCancel(context.Background())
		defer stop()
		for _, w := range workloads {
			watchSnapshotPods(wctx, w, l)
		}

		slow := startSlowS3()
		waited := watchWaiting(wctx, "")

		By("giving every EtcdCluster the same cron schedule at once")
		// The clusters are older than a minute, so the newest due time has
		// passed: every schedule creates its snapshot at once, all ten at
		// the same moment, and again at every minute after.
		setBackup := func(ctx context.Context, suspend bool) {
			var wg sync.WaitGroup
			for _, w := range workloads {
				wg.Add(1)
				go func() {
					defer GinkgoRecover()
					defer wg.Done()
					ec := &v1alpha1.EtcdCluster{}
					Expect(wc[w].Get(ctx, types.NamespacedName{Namespace: etcdNS, Name: etcdName}, ec)).To(Succeed())
					patch := client.MergeFrom(ec.DeepCopy())
					ec.Spec.Backup = &v1alpha1.BackupSpec{Cron: "* * * * *", Suspend: suspend,
						Location: v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: slow, Bucket: bucket,
							Key: w + "/scheduled/", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}}}
					Expect(wc[w].Patch(ctx, ec, patch)).To(Succeed())
				}()
			}
			wg.Wait()
		}
		// Scheduled snapshots an earlier spec left (own backups, whose
		// template schedules the same EtcdClusters; Ginkgo shuffles the
		// top-level containers) do not count: with them the wait below
		// passed at once and the check saw one snapshot run.
		earlier := map[string]map[string]bool{}
		for _, w := range workloads {
			var list v1alpha1.EtcdSnapshotList
			Expect(wc[w].List(ctx, &list, client.InNamespace(etcdNS), client.MatchingLabels{v1alpha1.LabelScheduled: "true"})).To(Succeed())
			earlier[w] = map[string]bool{}
			for _, s := range list.Items {
				earlier[w][s.Name] = true
			}
		}
		setBackup(ctx, false)
		// The spec's context is cancelled by the time cleanups run.
		DeferCleanup(func(ctx SpecContext) { setBackup(ctx, true) })

		By("waiting for every cluster's first scheduled snapshot to complete")
		Eventually(func(g Gomega) {
			var pending []string
			for _, w := range workloads {
				var list v1alpha1.EtcdSnapshotList
				g.Expect(wc[w].List(ctx, &list, client.InNamespace(etcdNS), client.MatchingLabels{v1alpha1.LabelScheduled: "true"})).To(Succeed())
				done := false
				for _, s := range list.Items {
					if earlier[w][s.Name] {
						continue
					}
					g.Expect(s.Status.Phase).NotTo(Equal(v1alpha1.SnapshotFailed), "%s/%s: %+v", w, s.Name, s.Status.Conditions)
					done = done || s.Status.Phase == v1alpha1.SnapshotComplete
				}
				if !done {
					pending = append(pending, fmt.Sprintf("%s: %d scheduled, none Complete", w, len(list.Items)))
				}
			}
			g.Expect(pending).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
		setBackup(ctx, true)
		expectPaced(l, waited())
	}, SpecTimeout(6*time.Minute))
})

// expectPaced checks, once every snapshot Pod the watches saw has ended,
// that no more than maxConcurrent ran at once, that every cluster ran one,
// and that the limit was reached (some snapshot waited for a slot), so
// that the check is not passed by a fleet that never paced anything.
func expectPaced(l *runLog, waited int) {
	GinkgoHelper()
	Eventually(func() int { _, open := l.peak(); return open }).WithTimeout(2*time.Minute).Should(BeZero(),
		"every snapshot Pod the watches saw has ended")
	peak, _ := l.peak()
	AddReportEntry("snapshots running at once, at most", peak)
	Expect(len(l.start)).To(BeNumerically(">=", workloadCount), "a snapshot Pod per cluster")
	Expect(peak).To(BeNumerically("<=", maxConcurrent), "the fleet ran more snapshots at once than snapshots.maxConcurrent")
	// The limit was reached if some snapshot's status said it waited for
	// a slot, or if maxConcurrent ran at once; a run that stayed under the
	// limit throughout proves nothing and fails. (Scheduled asks can
	// spread over more than the slow endpoint's hold, so that none waits:
	// CI once saw that, which is why either suffices.)
	Expect(waited > 0 || peak == maxConcurrent).To(BeTrue(),
		"no snapshot waited for a slot and at most %d of %d ran at once: the limit was never reached", peak, maxConcurrent)
}
