package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/limiter"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// table GETs path as a server-side Table, which is what `kubectl get`
// prints, and returns its rows as column name -> cell (printed as kubectl
// would: numbers without decimals).
func table(path string) []map[string]string {
	GinkgoHelper()
	raw, err := clientset.Discovery().RESTClient().Get().AbsPath(path).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		DoRaw(context.Background())
	Expect(err).NotTo(HaveOccurred())
	var t metav1.Table
	Expect(json.Unmarshal(raw, &t)).To(Succeed())
	var rows []map[string]string
	for _, r := range t.Rows {
		row := map[string]string{}
		for i, col := range t.ColumnDefinitions {
			row[col.Name] = fmt.Sprint(r.Cells[i])
		}
		rows = append(rows, row)
	}
	return rows
}

// columns returns the Table's column names, in order.
func columns(path string) []string {
	GinkgoHelper()
	raw, err := clientset.Discovery().RESTClient().Get().AbsPath(path).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		DoRaw(context.Background())
	Expect(err).NotTo(HaveOccurred())
	var t metav1.Table
	Expect(json.Unmarshal(raw, &t)).To(Succeed())
	var names []string
	for _, c := range t.ColumnDefinitions {
		names = append(names, c.Name)
	}
	return names
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func fleetClustersPath(ns string) string {
	return "/apis/fleet.etcdfleet.io/v1alpha1/namespaces/" + ns + "/fleetclusters"
}

// getFC reads a FleetCluster from the apiserver.
func getFC(g Gomega, nn types.NamespacedName) *fleetv1.FleetCluster {
	fc := &fleetv1.FleetCluster{}
	g.Expect(k8sClient.Get(context.Background(), nn, fc)).To(Succeed())
	return fc
}

// getFleet reads the Fleet from the apiserver.
func getFleet(g Gomega) *fleetv1.Fleet {
	f := &fleetv1.Fleet{}
	g.Expect(k8sClient.Get(context.Background(), fleetKey, f)).To(Succeed())
	return f
}

func nnOf(info ClusterInfo) types.NamespacedName {
	return types.NamespacedName{Namespace: info.Namespace, Name: info.Name}
}

var _ = Describe("Writer", func() {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

	It("creates a FleetCluster per registered Secret, owned by it, with what kubectl prints; keeps the last known counts while disconnected", func() {
		ns := testEnv.NewNamespace(ctx, "dashboard-test")
		info := newSecret(ns, "prod-1")
		info.Replica = "manager-0" // the owning replica, as a sharded wiring names it
		key := DefaultClusterKey(info)
		src := newStubSource()
		src.set(info, stubEtcd{
			clusters: []etcdv1.EtcdCluster{healthy("etcd", "a", 3), degraded("etcd", "b", 3, 2)},
			members:  []etcdv1.EtcdMember{member("etcd", "a-0", 2, t0), member("etcd", "b-0", 1, t0.Add(time.Hour))},
		})
		lim := &stubLimiter{s: limiter.Stats{Rate: 2, Burst: 10, TokensAvailable: 10,
			WaitingByCluster: map[string]int{key: 3}, ThrottledByCluster: map[string]uint64{key: 9}}}
		wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		watchCtx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		events, err := wc.Watch(watchCtx, &fleetv1.FleetClusterList{}, client.InNamespace(ns))
		Expect(err).NotTo(HaveOccurred())
		defer events.Stop()
		startWriter(src, lim, Options{MinInterval: 200 * time.Millisecond, Resync: time.Second})

		var added watch.Event
		Eventually(events.ResultChan(), 10*time.Second).Should(Receive(&added))
		Expect(added.Type).To(Equal(watch.Added))
		Expect(added.Object.(*fleetv1.FleetCluster).OwnerReferences).To(Equal([]metav1.OwnerReference{
			{APIVersion: "v1", Kind: "Secret", Name: "prod-1", UID: info.SecretUID},
		}), "created owned by the Secret for garbage collection, neither controller nor blocking")
		var fc *fleetv1.FleetCluster
		Eventually(func(g Gomega) {
			fc = getFC(g, nnOf(info))
			g.Expect(fc.Status.MembersSummary).To(Equal("5/6"))
		}, 10*time.Second).Should(Succeed())
		Expect(fc.OwnerReferences).To(Equal([]metav1.OwnerReference{
			{APIVersion: "v1", Kind: "Secret", Name: "prod-1", UID: info.SecretUID},
		}), "and still owned by it")
		st := fc.Status
		Expect(cond(st.Conditions, fleetv1.ConditionConnected)).To(Equal("True/ProbeSucceeded"))
		Expect(cond(st.Conditions, fleetv1.ConditionReady)).To(Equal("False/MembersUnhealthy"))
		Expect(cond(st.Conditions, fleetv1.ConditionDegraded)).To(Equal("True/MembersUnhealthy"))
		Expect(cond(st.Conditions, fleetv1.ConditionPaused)).To(Equal("False/NotPaused"))
		Expect(st.ServerVersion).To(Equal("v1.36.3"))
		Expect(st.Replica).To(Equal("manager-0"))
		Expect(st.LastProbeTime.Time).To(BeTemporally("~", info.LastProbeTime, time.Second))
		Expect(st.LastReplacementTime.Time).To(BeTemporally("==", t0.Add(time.Hour)))
		Expect([]int64{st.ReplacementsTotal, int64(st.ReplacementsWaiting), st.ReplacementsThrottled}).To(Equal([]int64{3, 3, 9}))
		Expect(st.EtcdClusterStates).To(HaveLen(2))
		Expect(st.EtcdClusterStates[0].Name).To(Equal("b"), "worst first")
		Expect(st.Message).To(ContainSubstring("worst: etcd/b"))

		// Authorized, NearQuota and TokenExpires have priority 1: kubectl
		// shows them with -o wide only.
		Expect(columns(fleetClustersPath(ns))).To(Equal([]string{
			"Name", "Connected", "Ready", "Authorized", "Paused", "EtcdClusters", "Quorate", "Members", "Replaced", "Throttled", "Backup", "OldestBackup", "BehindBackup",
			"Alarms", "NearQuota", "Rolling", "RollWaiting", "Replica", "Age", "TokenExpires"}))
		rows := table(fleetClustersPath(ns))
		Expect(rows).To(HaveLen(1))
		Expect(rows[0]).To(HaveKey("Age"))
		Expect(rows[0]).To(HaveKeyWithValue("TokenExpires", "<nil>"), "no token lifetime known")
		delete(rows[0], "Age")
		delete(rows[0], "TokenExpires")
		Expect(rows[0]).To(Equal(map[string]string{
			"Name": "prod-1", "Connected": "True", "Ready": "False", "Authorized": "True", "Paused": "False",
			"EtcdClusters": "2", "Quorate": "2", "Members": "5/6", "Replaced": "3", "Throttled": "9",
			"Backup": "<nil>", "OldestBackup": "<nil>", "BehindBackup": "0", "Alarms": "0", "NearQuota": "0", "Rolling": "0", "RollWaiting": "0", "Replica": "manager-0",
		}))
		stdout, _, err := testEnv.Environment.ControlPlane.KubeCtl().Run("get", "fleetclusters", "-n", ns)
		Expect(err).NotTo(HaveOccurred())
		out, err := io.ReadAll(stdout)
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("kubectl get fleetclusters -n %s\n%s", ns, out)
		Expect(string(out)).To(MatchRegexp(`NAME\s+CONNECTED\s+READY\s+PAUSED\s+ETCDCLUSTERS\s+QUORATE\s+MEMBERS\s+REPLACED\s+THROTTLED\s+BACKUP\s+OLDESTBACKUP\s+BEHINDBACKUP\s+ALARMS\s+REPLICA\s+AGE`))
		Expect(string(out)).To(MatchRegexp(`prod-1\s+True\s+False\s+False\s+2\s+2\s+5/6\s+3\s+9\s+0\s+0\s+manager-0\s+\d+s`))

		By("disconnecting the cluster: Connected=False with the reason, etcd counts kept")
		src.update(ns, "prod-1", func(c *ClusterInfo) {
			c.Connected, c.Reason, c.Message, c.ServerVersion = false, fleetv1.ReasonProbeFailed, "dial tcp 10.0.0.1:6443: i/o timeout", ""
		})
		src.set(src.Clusters()[0], stubEtcd{err: fmt.Errorf("cluster %s is not engaged", key)})
		Eventually(func(g Gomega) {
			st := getFC(g, nnOf(info)).Status
			g.Expect(cond(st.Conditions, fleetv1.ConditionConnected)).To(Equal("False/ProbeFailed"))
			g.Expect(cond(st.Conditions, fleetv1.ConditionReady)).To(Equal("False/NotConnected"))
			g.Expect(st.Message).To(ContainSubstring("i/o timeout"))
			g.Expect(st.MembersSummary).To(Equal("5/6"))
			g.Expect(st.EtcdClusters).To(Equal(int32(2)))
			g.Expect(st.EtcdClusterStates).To(HaveLen(2))
			g.Expect(st.ServerVersion).To(Equal("v1.36.3"))
		}, 10*time.Second).Should(Succeed(), "noticed without Notify: the cluster's info changed")
		rows = table(fleetClustersPath(ns))
		Expect(rows[0]["Connected"]).To(Equal("False"))
		Expect(rows[0]["Members"]).To(Equal("5/6"))
	})

	It("fixes the owner reference when the Secret was recreated", func() {
		ns := testEnv.NewNamespace(ctx, "dashboard-test")
		info := newSecret(ns, "re")
		Expect(k8sClient.Create(ctx, &fleetv1.FleetCluster{ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: "re",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: "re", UID: "old-uid"}},
		}})).To(Succeed())
		src := newStubSource()
		src.set(info, stubEtcd{clusters: []etcdv1.EtcdCluster{healthy("etcd", "a", 1)}})
		startWriter(src, nil, Options{MinInterval: 200 * time.Millisecond})
		Eventually(func(g Gomega) {
			fc := getFC(g, nnOf(info))
			g.Expect(fc.OwnerReferences).To(Equal([]metav1.OwnerReference{
				{APIVersion: "v1", Kind: "Secret", Name: "re", UID: info.SecretUID}}))
			g.Expect(cond(fc.Status.Conditions, fleetv1.ConditionReady)).To(Equal("True/Healthy"))
		}, 10*time.Second).Should(Succeed())
	})

	It("deletes the FleetCluster of a Secret no longer registered, after OrphanGrace", func() {
		ns := testEnv.NewNamespace(ctx, "dashboard-test")
		keep, drop := newSecret(ns, "keep"), newSecret(ns, "drop")
		src := newStubSource()
		src.set(keep, stubEtcd{})
		src.set(drop, stubEtcd{})
		r := startWriter(src, nil, Options{MinInterval: 100 * time.Millisecond, Resync: 300 * time.Millisecond, OrphanGrace: 1500 * time.Millisecond})
		Eventually(func(g Gomega) {
			for _, i := range []ClusterInfo{keep, drop} {
				g.Expect(cond(getFC(g, nnOf(i)).Status.Conditions, fleetv1.ConditionReady)).To(Equal("True/Healthy"))
			}
		}, 10*time.Second).Should(Succeed())

		src.unregister(drop)
		r.w.Notify(DefaultClusterKey(drop))
		Consistently(func(g Gomega) { getFC(g, nnOf(drop)) }, 700*time.Millisecond).Should(Succeed(), "kept during OrphanGrace")
		Eventually(func() bool {
			err := k8sClient.Get(ctx, nnOf(drop), &fleetv1.FleetCluster{})
			return apierrors.IsNotFound(err)
		}, 30*time.Second).Should(BeTrue(), "deleted once OrphanGrace passed (a wait, not a bound: the unit lane runs at nice 10)")
		Consistently(func(g Gomega) { getFC(g, nnOf(keep)) }, time.Second).Should(Succeed())
	})

	It("writes nothing while nothing changed, not even for probes, until lastProbeTime is ProbeRefresh old", func() {
		ns := testEnv.NewNamespace(ctx, "dashboard-test")
		info := newSecret(ns, "steady")
		src := newStubSource()
		src.set(info, stubEtcd{clusters: []etcdv1.EtcdCluster{healthy("etcd", "a", 3)}})
		src.probeNow = true
		lim := &stubLimiter{s: limiter.Stats{Rate: 2, Burst: 10, TokensAvailable: 10}}
		r := startWriter(src, lim, Options{MinInterval: 100 * time.Millisecond, Resync: 150 * time.Millisecond})

		fc := &fleetv1.FleetCluster{}
		fleet := &fleetv1.Fleet{}
		Eventually(func(g Gomega) {
			fc = getFC(g, nnOf(info))
			g.Expect(fc.Status.MembersSummary).To(Equal("3/3"))
			fleet = getFleet(g)
			g.Expect(fleet.Status.ClustersTotal).To(Equal(int32(1)))
		}, 10*time.Second).Should(Succeed())
		// Let the first writes settle (a slow cache can cost a retry).
		var fcWrites, fleetWrites int
		Eventually(func() bool {
			fcWrites, fleetWrites = r.writes.Writes(fc), r.writes.Writes(fleet)
			time.Sleep(time.Second)
			return r.writes.Writes(fc) == fcWrites && r.writes.Writes(fleet) == fleetWrites
		}, 20*time.Second, time.Millisecond).Should(BeTrue())
		fc, fleet = getFC(Default, nnOf(info)), getFleet(Default)

		Consistently(func(g Gomega) {
			now := getFC(g, nnOf(info))
			g.Expect(now.ResourceVersion).To(Equal(fc.ResourceVersion), "FleetCluster rewritten:\n%s\n%s", jsonOf(fc.Status), jsonOf(now.Status))
			nowFleet := getFleet(g)
			g.Expect(nowFleet.ResourceVersion).To(Equal(fleet.ResourceVersion), "Fleet rewritten:\n%s\n%s", jsonOf(fleet.Status), jsonOf(nowFleet.Status))
		}, 2*time.Second, 100*time.Millisecond).Should(Succeed(), "about 13 resyncs with fresh probe times and no change")
		Expect(r.writes.Writes(fc)).To(Equal(fcWrites), "not even a failed write")
		Expect(r.writes.Writes(fleet)).To(Equal(fleetWrites))

		By("a probe time a minute newer than the stored one is written")
		src.mu.Lock()
		src.probeNow = false
		src.clusters[0].LastProbeTime = time.Now().Add(2 * time.Minute)
		src.mu.Unlock()
		conflicts := r.writes.Conflicts(fc)
		Eventually(func(g Gomega) {
			g.Expect(getFC(g, nnOf(info)).Status.LastProbeTime.Time).To(BeTemporally(">", time.Now().Add(time.Minute)))
		}, 30*time.Second).Should(Succeed())
		// One write lands. Under load the Writer's cache can still hold
		// the old probe time at the next resync; that write is refused
		// for a conflict and is the only kind of extra write allowed. The
		// count is taken when the Writer's call returns, which can be
		// after the Get above already read what it wrote (CI-C).
		landed := func() int { return r.writes.Writes(fc) - (r.writes.Conflicts(fc) - conflicts) }
		Eventually(landed, 10*time.Second, 10*time.Millisecond).Should(Equal(fcWrites + 1))
		Consistently(landed, time.Second, 50*time.Millisecond).Should(Equal(fcWrites+1), "and no second one")
	})

	DescribeTable("coalesces 50 Notify calls within 1s into at most ceil(1s/MinInterval)+1 writes per object, the last with the latest state",
		func(minInterval time.Duration) {
			ns := testEnv.NewNamespace(ctx, "dashboard-test")
			info := newSecret(ns, "busy")
			key := DefaultClusterKey(info)
			src := newStubSource()
			state := func(i int) stubEtcd {
				ready := int32(i%3 + 1) // 1..3 of 3: the status changes on every call
				return stubEtcd{clusters: []etcdv1.EtcdCluster{degraded("etcd", "a", 3, ready)}}
			}
			src.set(info, state(2))
			r := startWriter(src, nil, Options{MinInterval: minInterval, Resync: time.Minute})
			var fc *fleetv1.FleetCluster
			Eventually(func(g Gomega) {
				fc = getFC(g, nnOf(info))
				g.Expect(fc.Status.MembersSummary).To(Equal("3/3"))
				g.Expect(getFleet(g).Status.ClustersTotal).To(Equal(int32(1)))
			}, 10*time.Second).Should(Succeed())
			fleet := getFleet(Default)
			fcBefore, fleetBefore := r.writes.Writes(fc), r.writes.Writes(fleet)

			start := time.Now()
			for i := range 50 {
				src.set(info, state(i))
				r.w.Notify(key)
				time.Sleep(time.Until(start.Add(time.Duration(i+1) * 18 * time.Millisecond)))
			}
			elapsed := max(time.Since(start), time.Second)
			last := fmt.Sprintf("%d/3", 49%3+1)
			Eventually(func(g Gomega) {
				g.Expect(getFC(g, nnOf(info)).Status.MembersSummary).To(Equal(last))
			}, 2*minInterval+5*time.Second).Should(Succeed())
			time.Sleep(2 * minInterval) // nothing is left to write
			limit := int(math.Ceil(float64(elapsed)/float64(minInterval))) + 1
			fcWrites, fleetWrites := r.writes.Writes(fc)-fcBefore, r.writes.Writes(fleet)-fleetBefore
			GinkgoWriter.Printf("MinInterval %v: 50 Notify calls in %v -> %d FleetCluster and %d Fleet writes (limit %d)\n",
				minInterval, elapsed, fcWrites, fleetWrites, limit)
			Expect(fcWrites).To(And(BeNumerically(">=", 1), BeNumerically("<=", limit)))
			Expect(fleetWrites).To(BeNumerically("<=", limit))
		},
		Entry("the default MinInterval (2s)", DefaultMinInterval),
		Entry("MinInterval 300ms", 300*time.Millisecond),
	)

	It("creates the Fleet, aggregates the clusters and the limiter, lists the 10 worst, and follows spec.paused", func() {
		f := &fleetv1.Fleet{ObjectMeta: metav1.ObjectMeta{Name: fleetv1.FleetName}}
		Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, f))).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(k8sClient.Get(ctx, fleetKey, f)) }).Should(BeTrue())
		DeferCleanup(func() {
			Eventually(func(g Gomega) {
				f := getFleet(g)
				f.Spec.Paused = false
				g.Expect(k8sClient.Update(ctx, f)).To(Succeed())
			}).Should(Succeed())
		})

		ns := testEnv.NewNamespace(ctx, "dashboard-test")
		src := newStubSource()
		waiting := map[string]int{}
		add := func(name string, connected bool, e stubEtcd) ClusterInfo {
			info := newSecret(ns, name)
			info.Connected = connected
			if !connected {
				info.Reason = fleetv1.ReasonProbeFailed
			}
			src.set(info, e)
			return info
		}
		lostN := func(n int) stubEtcd {
			var cs []etcdv1.EtcdCluster
			for i := range n {
				cs = append(cs, lost("etcd", fmt.Sprint("e", i), 3, 1))
			}
			return stubEtcd{clusters: cs}
		}
		unready := func(missing int32) stubEtcd {
			return stubEtcd{clusters: []etcdv1.EtcdCluster{degraded("etcd", "e", 5, 5-missing)}}
		}
		ok := stubEtcd{clusters: []etcdv1.EtcdCluster{healthy("etcd", "e", 3)},
			members: []etcdv1.EtcdMember{member("etcd", "e-0", 5, t0)}}
		add("healthy-1", true, ok)
		add("healthy-2", true, ok)
		add("lost-1", true, lostN(1))
		add("lost-3", true, lostN(3))
		add("off-a", false, stubEtcd{})
		add("off-b", false, stubEtcd{})
		add("unknown", true, stubEtcd{err: fmt.Errorf("not engaged")})
		busy := add("unready-1", true, unready(1))
		add("unready-1b", true, unready(1))
		add("unready-1c", true, unready(1))
		add("unready-2", true, unready(2))
		add("unready-3", true, unready(3))
		waiting[DefaultClusterKey(busy)] = 4
		lim := &stubLimiter{s: limiter.Stats{Rate: 0.5, Burst: 20, TokensAvailable: 3.7, Waiting: 4, WaitingByCluster: waiting}}
		r := startWriter(src, lim, Options{MinInterval: 200 * time.Millisecond, Resync: 500 * time.Millisecond})

		Eventually(func(g Gomega) {
			st := getFleet(g).Status
			g.Expect([]int32{st.ClustersTotal, st.ClustersConnected, st.ClustersQuorate, st.ClustersDegraded}).
				To(Equal([]int32{12, 10, 8, 7}), "total, connected, quorate, degraded")
			var worst []string
			for _, w := range st.WorstClusters {
				g.Expect(w.Namespace).To(Equal(ns))
				worst = append(worst, w.Name+":"+w.Reason)
			}
			g.Expect(worst).To(Equal([]string{
				"lost-3:QuorumLost", "lost-1:QuorumLost",
				"off-a:ProbeFailed", "off-b:ProbeFailed",
				"unknown:" + ReasonEtcdUnknown,
				"unready-3:MembersUnhealthy", "unready-2:MembersUnhealthy",
				"unready-1:MembersUnhealthy", "unready-1b:MembersUnhealthy", "unready-1c:MembersUnhealthy",
			}))
			g.Expect(st.Limiter).To(Equal(&fleetv1.LimiterStatus{Rate: "1/2s", Burst: 20, TokensAvailable: 3, Waiting: 4}))
			g.Expect(st.ReplacementsTotal).To(Equal(int64(10)))
			g.Expect(cond(st.Conditions, fleetv1.ConditionReady)).To(Equal("False/QuorumLost"))
			g.Expect(cond(st.Conditions, fleetv1.ConditionDegraded)).To(Equal("True/QuorumLost"))
			g.Expect(cond(st.Conditions, fleetv1.ConditionPaused)).To(Equal("False/NotPaused"))
		}, 15*time.Second).Should(Succeed())
		Expect(getFleet(Default).Spec.Paused).To(BeFalse(), "created unpaused")
		Eventually(func(g Gomega) {
			g.Expect(getFC(g, nnOf(busy)).Status.ReplacementsWaiting).To(Equal(int32(4)))
		}, 5*time.Second).Should(Succeed(), "the Fleet may be written before a FleetCluster's deferred write")

		rows := table("/apis/fleet.etcdfleet.io/v1alpha1/fleets")
		Expect(rows).To(HaveLen(1))
		delete(rows[0], "Age")
		Expect(rows[0]).To(Equal(map[string]string{"Name": "fleet", "Paused": "false", "Clusters": "12",
			"Connected": "10", "Quorate": "8", "Degraded": "7", "Waiting": "4", "Replaced": "10", "BehindBackup": "0", "Alarms": "0", "NearQuota": "0", "Rolling": "0", "RollWaiting": "0"}))

		stdout, _, err := testEnv.Environment.ControlPlane.KubeCtl().Run("get", "fleets")
		Expect(err).NotTo(HaveOccurred())
		out, err := io.ReadAll(stdout)
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("kubectl get fleets\n%s", out)
		Expect(string(out)).To(MatchRegexp(`fleet\s+false\s+12\s+10\s+8\s+7\s+4\s+10\s+0\s+0\s+0\s+\d+s`))

		By("pausing the fleet")
		Expect(r.w.FleetPaused()).To(BeFalse())
		Eventually(func(g Gomega) {
			f := getFleet(g)
			f.Spec.Paused = true
			g.Expect(k8sClient.Update(ctx, f)).To(Succeed())
		}).Should(Succeed())
		Eventually(r.w.FleetPaused, 5*time.Second).Should(BeTrue(), "read from the manager's cache")
		Eventually(func(g Gomega) {
			g.Expect(cond(getFleet(g).Status.Conditions, fleetv1.ConditionPaused)).To(Equal("True/FleetPaused"))
			g.Expect(cond(getFC(g, nnOf(busy)).Status.Conditions, fleetv1.ConditionPaused)).To(Equal("True/FleetPaused"))
		}, 10*time.Second).Should(Succeed())
		// Every row, each written by its own reconcile: the conditions
		// above are the Fleet's and one FleetCluster's (CI-F read the
		// first row 0.4 s after those, before its own write).
		Eventually(func(g Gomega) {
			for _, row := range table(fleetClustersPath(ns)) {
				g.Expect(row["Paused"]).To(Equal("True"), "FleetCluster %s", row["Name"])
			}
		}, 10*time.Second).Should(Succeed())
	})
})
