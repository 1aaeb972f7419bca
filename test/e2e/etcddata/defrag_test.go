package etcddata_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/e2e/lincheck"
)

// EtcdDefrags on the "pf" cluster: the manager defragments real etcd
// members through port-forward while a linearizability-checked workload
// runs against them.
var _ = Describe("EtcdDefrag", Ordered, func() {
	const cluster, ns, name = "pf", "defrag", "fragmented"
	var c client.Client
	var etcdc *e2eutil.Etcd

	BeforeAll(func(ctx SpecContext) {
		c = clients[cluster]
		sb.Namespace(ctx, cluster, ns)
		Expect(c.Create(ctx, e2eutil.NewEtcdCluster(ns, name, 3, false))).To(Succeed())
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
		etcdc = e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, name)
		DeferCleanup(func() { etcdc.Close() })
	}, NodeTimeout(3*time.Minute))

	create := func(ctx context.Context, defragName string, t v1alpha1.DefragThresholds) {
		GinkgoHelper()
		Expect(c.Create(ctx, &v1alpha1.EtcdDefrag{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: defragName},
			Spec: v1alpha1.EtcdDefragSpec{ClusterRef: corev1.LocalObjectReference{Name: name}, DefragThresholds: t}})).To(Succeed())
	}
	final := func(ctx context.Context, defragName string) *v1alpha1.EtcdDefrag {
		GinkgoHelper()
		d := &v1alpha1.EtcdDefrag{}
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: defragName}, d)).To(Succeed())
			g.Expect(d.Status.Phase.Terminal()).To(BeTrue(), "phase %q, conditions %+v", d.Status.Phase, d.Status.Conditions)
		}).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		return d
	}

	It("defragments every member under a write load, followers first and the leader last, with no request failing", func(ctx SpecContext) {
		By("writing 8 MiB, deleting three quarters of it and compacting, so that most of every database file is free")
		fragment(ctx, etcdc.Client, "bulk", 64, 32, 4096)
		Eventually(func(g Gomega) {
			for _, ep := range etcdc.Endpoints() {
				s, err := etcdc.Status(ctx, ep)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(s.DbSizeInUse*2).To(BeNumerically("<", s.DbSize), "%s: %d of %d bytes in use", ep, s.DbSizeInUse, s.DbSize)
			}
		}).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		By("making the member that sorts first the leader, so that an order by name alone would do it first")
		first := e2eutil.FirstMember(ctx, c, ns, name)
		firstID, err := strconv.ParseUint(e2eutil.MemberIDs(ctx, c, ns, name)[first], 16, 64)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error {
			// MoveLeader must reach the leader; the client picks an
			// endpoint per request, so a retry reaches it.
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if leader, err := leaderOf(cctx, etcdc); err != nil || leader == firstID {
				return err
			}
			_, err := etcdc.MoveLeader(cctx, firstID)
			if err == nil {
				err = errors.New("leadership moved; checking")
			}
			return err
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		leaderBefore := leaderID(ctx, etcdc)
		Expect(leaderBefore).To(Equal(firstID))

		// Faster than the default, so that every member's defragmentation
		// falls between requests of the workload.
		load := lincheck.Start(ctx, lincheck.Target{Config: fleet.Cluster(cluster).Config, Client: c, Namespace: ns, Cluster: name,
			Options: lincheck.Options{Clients: 5, Rate: 100}})
		created := time.Now()
		create(ctx, "all", v1alpha1.DefragThresholds{})
		d := final(ctx, "all")
		finished := time.Now()
		res := load.StopAndCheck()
		during := 0
		for _, op := range res.History.Ops {
			if op.Output.Outcome == lincheck.OK && op.Call.After(created) && op.Return.Before(finished) {
				during++
			}
		}
		Expect(during).To(BeNumerically(">=", 10), "the workload was served while the members were defragmented")

		Expect(d.Status.Phase).To(Equal(v1alpha1.DefragComplete), "conditions %+v", d.Status.Conditions)
		Expect(d.Status.Members).To(HaveLen(3))
		for i, m := range d.Status.Members {
			Expect(m.Outcome).To(Equal(v1alpha1.DefragOutcomeDefragmented), "member %s: %s", m.Member, m.Message)
			Expect(m.DBSizeAfter).To(BeNumerically("<", m.DBSizeBefore), "member %s", m.Member)
			if i > 0 {
				Expect(m.Time.Time).NotTo(BeTemporally("<", d.Status.Members[i-1].Time.Time), "results are in the order the members were done")
			}
		}
		last := d.Status.Members[2]
		Expect([]v1alpha1.DefragRole{d.Status.Members[0].Role, d.Status.Members[1].Role, last.Role}).To(
			Equal([]v1alpha1.DefragRole{v1alpha1.DefragRoleFollower, v1alpha1.DefragRoleFollower, v1alpha1.DefragRoleLeader}))
		if leaderAfter := leaderID(ctx, etcdc); leaderAfter == leaderBefore {
			Expect(last.MemberID).To(Equal(fmt.Sprintf("%016x", leaderBefore)), "the member done last is etcd's leader")
		}
		Expect(d.Status.Defragmented).To(BeEquivalentTo(3))
		Expect(d.Status.ReclaimedBytes).To(BeNumerically(">", 0))

		counts := res.History.Count()
		Expect(counts[lincheck.Failed]).To(BeZero(), "no read failed during the defragmentation")
		Expect(counts[lincheck.Unknown]).To(BeZero(), "no write timed out or failed during the defragmentation")
		Expect(counts[lincheck.OK]).To(BeNumerically(">", 0))
	}, SpecTimeout(4*time.Minute))

	It("skips every member under a high fragmentation threshold", func(ctx SpecContext) {
		create(ctx, "skip", v1alpha1.DefragThresholds{MinFragmentationPercent: ptr.To[int32](99)})
		d := final(ctx, "skip")
		Expect(d.Status.Phase).To(Equal(v1alpha1.DefragComplete), "conditions %+v", d.Status.Conditions)
		Expect(d.Status.Members).To(HaveLen(3))
		for _, m := range d.Status.Members {
			Expect(m.Outcome).To(Equal(v1alpha1.DefragOutcomeSkipped))
			Expect(m.Message).To(ContainSubstring("minFragmentationPercent"))
			Expect(m.DBSizeAfter).To(BeZero())
		}
		Expect(d.Status.Defragmented).To(BeZero())
	}, SpecTimeout(3*time.Minute))

	It("resumes after a restart without redoing the members already recorded", func(ctx SpecContext) {
		sb.StopOperator(cluster)
		DeferCleanup(func() {
			if !sb.OperatorRunning(cluster) {
				sb.StartOperator(cluster)
			}
		})
		create(ctx, "resumed", v1alpha1.DefragThresholds{})
		names := e2eutil.MemberNames(ctx, c, ns, name)
		done := names[len(names)-1]
		d := &v1alpha1.EtcdDefrag{}
		Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "resumed"}, d)).To(Succeed())
		now := metav1.Now()
		d.Status.Phase, d.Status.StartedAt = v1alpha1.DefragRunning, &now
		d.Status.Members = []v1alpha1.DefragMemberResult{{Member: done, Role: v1alpha1.DefragRoleFollower,
			Outcome: v1alpha1.DefragOutcomeSkipped, Message: "recorded before the restart", Time: now}}
		Expect(c.Status().Update(ctx, d)).To(Succeed())

		sb.StartOperator(cluster)
		d = final(ctx, "resumed")
		Expect(d.Status.Phase).To(Equal(v1alpha1.DefragComplete), "conditions %+v", d.Status.Conditions)
		Expect(d.Status.Members).To(HaveLen(len(names)), "one result per member")
		Expect(d.Status.Members[0].Member).To(Equal(done))
		Expect(d.Status.Members[0].Message).To(Equal("recorded before the restart"), "the recorded member was not redone")
		for _, m := range d.Status.Members[1:] {
			Expect(m.Outcome).To(Equal(v1alpha1.DefragOutcomeDefragmented), "member %s: %s", m.Member, m.Message)
		}
	}, SpecTimeout(3*time.Minute))

	It("waits, saying why, while a member is missing, and runs once the cluster is whole", func(ctx SpecContext) {
		ec := &v1alpha1.EtcdCluster{}
		Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ec)).To(Succeed())
		patch := client.MergeFrom(ec.DeepCopy())
		ec.Spec.Replicas = ptr.To[int32](4) // a member short until the fourth joins
		Expect(c.Patch(ctx, ec, patch)).To(Succeed())
		create(ctx, "waits", v1alpha1.DefragThresholds{})
		Eventually(func(g Gomega) {
			d := &v1alpha1.EtcdDefrag{}
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "waits"}, d)).To(Succeed())
			g.Expect(d.Status.Conditions).To(ContainElement(And(
				HaveField("Reason", v1alpha1.ReasonDefragWaiting), HaveField("Status", metav1.ConditionFalse))))
		}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
		d := final(ctx, "waits")
		Expect(d.Status.Phase).To(Equal(v1alpha1.DefragComplete), "conditions %+v", d.Status.Conditions)
		Expect(d.Status.Members).To(HaveLen(4))
		Expect(d.Status.Members[3].Role).To(Equal(v1alpha1.DefragRoleLeader))
	}, SpecTimeout(4*time.Minute))

	It("creates EtcdDefrags on spec.defrag's schedule, the first defragmenting and the next skipping, and keeps historyLimit of them", func(ctx SpecContext) {
		// Fragmented first, under a threshold it passes: a scheduled run
		// does the work, not only a skip.
		fragment(ctx, etcdc.Client, "scheduled", 32, 32, 4096)
		ec := &v1alpha1.EtcdCluster{}
		Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ec)).To(Succeed())
		patch := client.MergeFrom(ec.DeepCopy())
		ec.Spec.Defrag = &v1alpha1.DefragScheduleSpec{Interval: &metav1.Duration{Duration: 5 * time.Second}, HistoryLimit: 1,
			DefragThresholds: v1alpha1.DefragThresholds{MinFragmentationPercent: ptr.To[int32](30)}}
		Expect(c.Patch(ctx, ec, patch)).To(Succeed())
		seen := map[string]bool{}
		defragmented, skipped := false, false
		Eventually(func(g Gomega) {
			var list v1alpha1.EtcdDefragList
			g.Expect(c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelDefragSchedule: "true"})).To(Succeed())
			finished := 0
			for _, d := range list.Items {
				seen[d.Name] = true
				g.Expect(d.Spec.ClusterRef.Name).To(Equal(name))
				g.Expect(metav1.IsControlledBy(&d, ec)).To(BeTrue())
				if d.Status.Phase.Terminal() {
					finished++
					defragmented = defragmented || (d.Status.Defragmented > 0 && d.Status.ReclaimedBytes > 0)
					skipped = skipped || (d.Status.Phase == v1alpha1.DefragComplete && d.Status.Defragmented == 0)
				}
			}
			// Never more: a plain Expect fails the spec at once.
			Expect(finished).To(BeNumerically("<=", 2), "historyLimit 1, plus one just finished and not yet pruned")
			g.Expect(len(seen)).To(BeNumerically(">=", 3), "three scheduled runs")
			g.Expect(defragmented).To(BeTrue(), "a scheduled run defragmented the fragmented members")
			g.Expect(skipped).To(BeTrue(), "a later run found nothing above the threshold")
		}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		patch = client.MergeFrom(ec.DeepCopy())
		ec.Spec.Defrag = nil
		Expect(c.Patch(ctx, ec, patch)).To(Succeed())
	}, SpecTimeout(3*time.Minute))
})

// fragment writes batches of keys (each batch one Txn of perBatch values of
// size bytes), every fourth batch under prefix/live and the others under
// prefix/dead, deletes the dead ones and compacts at the delete's
// revision: the space they took is free, between live pages, in every
// member's database file, and a defragmentation has live data to copy.
func fragment(ctx context.Context, cli *clientv3.Client, prefix string, batches, perBatch, size int) {
	GinkgoHelper()
	value := strings.Repeat("x", size)
	dead := 0
	for b := range batches {
		dir := prefix + "/live"
		if b%4 != 0 {
			dir, dead = prefix+"/dead", dead+1
		}
		ops := make([]clientv3.Op, 0, perBatch)
		for i := range perBatch {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("%s/%04d/%04d", dir, b, i), value))
		}
		Eventually(func() error {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			_, err := cli.Txn(cctx).Then(ops...).Commit()
			return err
		}).WithTimeout(30 * time.Second).Should(Succeed())
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	del, err := cli.Delete(cctx, prefix+"/dead/", clientv3.WithPrefix())
	Expect(err).NotTo(HaveOccurred())
	Expect(del.Deleted).To(BeEquivalentTo(dead * perBatch))
	_, err = cli.Compact(cctx, del.Header.Revision, clientv3.WithCompactPhysical())
	Expect(err).NotTo(HaveOccurred())
}

// leaderID is the leader every member names.
func leaderID(ctx context.Context, e *e2eutil.Etcd) uint64 {
	GinkgoHelper()
	leader, err := leaderOf(ctx, e)
	Expect(err).NotTo(HaveOccurred())
	return leader
}

func leaderOf(ctx context.Context, e *e2eutil.Etcd) (uint64, error) {
	var leader uint64
	for _, ep := range e.Endpoints() {
		s, err := e.Status(ctx, ep)
		if err != nil {
			return 0, err
		}
		if leader != 0 && leader != s.Leader {
			return 0, fmt.Errorf("members disagree on the leader: %016x, %016x", leader, s.Leader)
		}
		leader = s.Leader
	}
	return leader, nil
}
