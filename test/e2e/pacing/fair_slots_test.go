package pacing_test

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/sandbox/objstore"
)

// fairPrefix is the key prefix of this spec's schedules, which tells its
// snapshots from the other specs'.
const fairPrefix = "fair/"

// startTarpit listens on the sandbox's loopback address (which the
// workload policy admits as an S3 endpoint) and holds every connection
// open, reading what is sent and never answering.
func startTarpit() string {
	GinkgoHelper()
	ln, err := net.Listen("tcp", objstore.IP+":0")
	Expect(err).NotTo(HaveOccurred())
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	DeferCleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// ours lists w's snapshots stored under fairPrefix.
func ours(ctx context.Context, g Gomega, w string) []v1alpha1.EtcdSnapshot {
	var list v1alpha1.EtcdSnapshotList
	g.Expect(wc[w].List(ctx, &list, client.InNamespace(etcdNS))).To(Succeed())
	var out []v1alpha1.EtcdSnapshot
	for _, s := range list.Items {
		if l := s.Spec.Location.S3; l != nil && strings.HasPrefix(l.Key, fairPrefix) {
			out = append(out, s)
		}
	}
	return out
}

var _ = Describe("fair snapshot slots", func() {
	It("fails a cluster whose S3 endpoint stalls fast, naming the stage, holding at most its one slot, while nine others keep their schedule", func(ctx SpecContext) {
		start := time.Now()
		tarpit := startTarpit()
		stalled, healthy := workloads[0], workloads[1:]
		l := &runLog{start: map[string]time.Time{}, end: map[string]time.Time{}}
		wctx, stop := context.WithCancel(context.Background())
		defer stop()
		for _, w := range workloads {
			watchSnapshotPods(wctx, w, l)
		}

		By("giving every EtcdCluster the same schedule, the stalled cluster's on the tarpit, plus one snapshot of its own")
		location := func(w string) v1alpha1.SnapshotLocation {
			ep := s3.Endpoint
			if w == stalled {
				ep = tarpit
			}
			return v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: ep, Bucket: bucket,
				Key: fairPrefix + w + "/", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}}
		}
		setBackup := func(ctx context.Context, suspend bool) {
			for _, w := range workloads {
				ec := &v1alpha1.EtcdCluster{}
				Expect(wc[w].Get(ctx, types.NamespacedName{Namespace: etcdNS, Name: etcdName}, ec)).To(Succeed())
				patch := client.MergeFrom(ec.DeepCopy())
				ec.Spec.Backup = &v1alpha1.BackupSpec{Cron: "* * * * *", Suspend: suspend, Location: location(w)}
				Expect(wc[w].Patch(ctx, ec, patch)).To(Succeed())
			}
		}
		DeferCleanup(func(ctx SpecContext) {
			setBackup(ctx, true)
			// The stalled cluster's snapshots failed; other specs expect
			// none in the namespace.
			Eventually(func(g Gomega) {
				for _, s := range ours(ctx, g, stalled) {
					patch := client.MergeFrom(s.DeepCopy())
					s.Finalizers = nil
					g.Expect(client.IgnoreNotFound(wc[stalled].Patch(ctx, &s, patch))).To(Succeed())
					g.Expect(client.IgnoreNotFound(wc[stalled].Delete(ctx, &s))).To(Succeed())
				}
				g.Expect(ours(ctx, g, stalled)).To(BeEmpty())
			}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		})
		setBackup(ctx, false)
		extra := &v1alpha1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: etcdNS, Name: "fair-extra"},
			Spec: v1alpha1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: etcdName}, Location: location(stalled)}}
		Expect(wc[stalled].Create(ctx, extra)).To(Succeed())

		By("waiting: the nine complete within one period of their schedule, the stalled cluster's snapshots fail on the first byte")
		capSeen := ""
		Eventually(func(g Gomega) {
			for _, s := range ours(ctx, g, stalled) {
				if c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady); c != nil &&
					c.Reason == v1alpha1.ReasonWaitingForSlot && strings.Contains(c.Message, "already holds its 1 snapshot slot") {
					capSeen = c.Message
				}
			}
			for _, w := range healthy {
				done := false
				for _, s := range ours(ctx, g, w) {
					g.Expect(s.Status.Phase).NotTo(Equal(v1alpha1.SnapshotFailed), "%s/%s: %+v", w, s.Name, s.Status.Conditions)
					done = done || s.Status.Phase == v1alpha1.SnapshotComplete
				}
				g.Expect(done).To(BeTrue(), "%s has no Complete scheduled snapshot yet", w)
			}
			failed := 0
			for _, s := range ours(ctx, g, stalled) {
				if s.Status.Phase == v1alpha1.SnapshotFailed {
					c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady)
					g.Expect(c.Message).To(ContainSubstring("s3 first byte"), "%s failed for the wrong reason", s.Name)
					failed++
				}
			}
			g.Expect(failed).To(BeNumerically(">=", 1), "no snapshot of %s failed yet", stalled)
			g.Expect(capSeen).NotTo(BeEmpty(), "no snapshot of %s was seen waiting for its cluster's cap", stalled)
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
		AddReportEntry("stalled cluster's cap wait", capSeen)

		By("checking that each of the nine completed within one period of its creation")
		for _, w := range healthy {
			for _, s := range ours(ctx, Default, w) {
				if s.Status.Phase != v1alpha1.SnapshotComplete {
					continue
				}
				c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady)
				Expect(c.LastTransitionTime.Sub(s.CreationTimestamp.Time)).To(BeNumerically("<", time.Minute),
					"%s/%s took longer than its one-minute period", w, s.Name)
			}
		}

		By("checking the stalled cluster's Warning Event names the stage")
		var evs corev1.EventList
		Expect(wc[stalled].List(ctx, &evs, client.InNamespace(etcdNS))).To(Succeed())
		named := false
		for _, e := range evs.Items {
			named = named || (e.Type == corev1.EventTypeWarning && e.Reason == v1alpha1.ReasonJobFailed &&
				strings.Contains(e.Message, "s3 first byte") && strings.Contains(e.Message, "--s3-first-byte-timeout"))
		}
		Expect(named).To(BeTrue(), "no Warning JobFailed Event naming the first-byte stage in %s", stalled)

		peak := l.peakOf(stalled)
		AddReportEntry("stalled cluster's snapshots running at once, at most", peak)
		Expect(peak).To(Equal(1), "the stalled cluster ran more snapshots at once than its cap")
		AddReportEntry("fair slots spec", time.Since(start).Round(time.Second).String())
	}, SpecTimeout(5*time.Minute))
})

// peakOf is the most snapshot Pods of cluster w seen running at once, the
// ones still running counted until now.
func (l *runLog) peakOf(w string) int {
	sub := &runLog{start: map[string]time.Time{}, end: map[string]time.Time{}}
	l.mu.Lock()
	for k, t := range l.start {
		if strings.HasPrefix(k, w+"/") {
			sub.start[k] = t
			if e, ok := l.end[k]; ok {
				sub.end[k] = e
			}
		}
	}
	l.mu.Unlock()
	p, _ := sub.peak()
	return p
}
