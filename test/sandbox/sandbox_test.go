package sandbox_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
	"github.com/etcdfleet/etcdfleet/test/sandbox/kubelet"
	"github.com/etcdfleet/etcdfleet/test/sandbox/proc"
	"github.com/etcdfleet/etcdfleet/test/sandbox/sandboxdns"
)

// bugWait is how long the reproduction watches terminal Pods not restart.
const bugWait = 2 * time.Minute

var _ = Describe("a hand-written 3-member etcd cluster", Ordered, func() {
	ec := newEtcdCluster("repro", "ec", 3, false)
	var ids map[string]uint64
	var s1 *sandbox.Cluster

	BeforeAll(func() { s1 = fleet.Cluster("s1") })

	It("forms, spread across nodes, and serves keys through the Pod IP and through port-forward", func(ctx SpecContext) {
		ec.create(ctx, s1, "new")
		ec.waitReady(ctx, s1)
		nodes := map[string]bool{}
		for _, m := range ec.members {
			p, err := s1.Clientset.CoreV1().Pods(ec.ns).Get(ctx, m, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			nodes[p.Spec.NodeName] = true
		}
		Expect(nodes).To(HaveLen(3), "members of one instance are spread across nodes")

		direct := ec.directClient(ctx, s1)
		defer direct.Close()
		fwd, closeFwd := ec.forwardedClient(s1)
		defer closeFwd()
		putKeys(ctx, direct, "direct", 100)
		putKeys(ctx, fwd, "forwarded", 100)
		Expect(countKeys(ctx, fwd, "direct")).To(BeEquivalentTo(100))
		Expect(countKeys(ctx, direct, "forwarded")).To(BeEquivalentTo(100))
		ids = memberIDs(ctx, fwd)
		Expect(ids).To(HaveLen(3))

		By("resolving a Service name to the Pods it selects")
		_, err := s1.Clientset.CoreV1().Services(ec.ns).Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "ec-client"},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app.kubernetes.io/instance": ec.name},
				Ports: []corev1.ServicePort{{Port: 2379}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() int {
			return len(sandboxdns.Lookup(filepath.Join(s1.Dir, "hosts"), "ec-client.repro.svc.cluster.local"))
		}).WithTimeout(10 * time.Second).Should(Equal(3))
	}, SpecTimeout(2*time.Minute))

	It("reproduces the bug: after a graceful node shutdown the Pods stay terminal and etcd stays down", func(ctx SpecContext) {
		uids := map[string]types.UID{}
		for _, m := range ec.members {
			p, err := s1.Clientset.CoreV1().Pods(ec.ns).Get(ctx, m, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			uids[m] = p.UID
		}
		Expect(s1.Reboot(ctx, kubelet.RebootOptions{Phase: kubelet.Alternate, Outage: 2 * time.Second})).To(Succeed())

		phases := map[corev1.PodPhase]int{}
		for _, m := range ec.members {
			p, err := s1.Clientset.CoreV1().Pods(ec.ns).Get(ctx, m, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(p.Status.Phase).To(BeElementOf(corev1.PodSucceeded, corev1.PodFailed))
			phases[p.Status.Phase]++
			Expect(p.Status.Reason).To(Equal("Terminated"))
			Expect(p.Status.Message).To(Equal("Pod was terminated in response to imminent node shutdown."))
			Expect(p.Status.Conditions).To(ContainElement(SatisfyAll(
				HaveField("Type", corev1.DisruptionTarget), HaveField("Status", corev1.ConditionTrue),
				HaveField("Reason", "TerminationByKubelet"))))
		}
		Expect(phases).To(HaveLen(2), "the Alternate chooser mixes Succeeded and Failed")

		By(fmt.Sprintf("watching for %s: the nodes come back, but nothing restarts", bugWait))
		Eventually(func() bool {
			for _, n := range s1.Kubelet.NodeNames() {
				node, err := s1.Clientset.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
				if err != nil || node.Status.Conditions[0].Status != corev1.ConditionTrue {
					return false
				}
			}
			return true
		}).WithTimeout(30 * time.Second).Should(BeTrue())
		Consistently(func(g Gomega) {
			for _, m := range ec.members {
				p, err := s1.Clientset.CoreV1().Pods(ec.ns).Get(ctx, m, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(p.UID).To(Equal(uids[m]))
				g.Expect(p.Status.Phase).To(BeElementOf(corev1.PodSucceeded, corev1.PodFailed))
				_, err = s1.Kubelet.PodAddress(ec.ns, m, 2379)
				g.Expect(err).To(HaveOccurred(), "no process runs for a terminal Pod")
			}
		}).WithTimeout(bugWait).WithPolling(2 * time.Second).Should(Succeed())
	}, SpecTimeout(bugWait+time.Minute))

	It("recovers with every key and the same member IDs when the Pods are recreated on the same PVCs", func(ctx SpecContext) {
		pods := s1.Clientset.CoreV1().Pods(ec.ns)
		for _, m := range ec.members {
			Expect(pods.Delete(ctx, m, metav1.DeleteOptions{})).To(Succeed())
		}
		Eventually(func() bool {
			for _, m := range ec.members {
				if _, err := pods.Get(ctx, m, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return false
				}
			}
			return true
		}).WithTimeout(30*time.Second).Should(BeTrue(), "terminal Pods are removed by the kubelet at once")
		ec.create(ctx, s1, "existing")
		ec.waitReady(ctx, s1)
		fwd, closeFwd := ec.forwardedClient(s1)
		defer closeFwd()
		Eventually(func() (int64, error) { return countKeys(ctx, fwd, "direct") }).WithTimeout(20 * time.Second).Should(BeEquivalentTo(100))
		Expect(countKeys(ctx, fwd, "forwarded")).To(BeEquivalentTo(100))
		Expect(memberIDs(ctx, fwd)).To(Equal(ids))
	}, SpecTimeout(2*time.Minute))
})

var _ = Describe("a memory-backed etcd cluster", func() {
	It("loses its data directories in a reboot", func(ctx SpecContext) {
		s2 := fleet.Cluster("s2")
		ec := newEtcdCluster("memory", "mem", 3, true)
		ec.create(ctx, s2, "new")
		ec.waitReady(ctx, s2)
		cli := ec.directClient(ctx, s2)
		putKeys(ctx, cli, "k", 10)
		cli.Close()
		var dirs []string
		for _, m := range ec.members {
			p, err := s2.Clientset.CoreV1().Pods(ec.ns).Get(ctx, m, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			dir := s2.Kubelet.VolumePath(p, "data")
			Expect(filepath.Join(dir, "member")).To(BeADirectory())
			dirs = append(dirs, dir)
		}
		Expect(s2.Reboot(ctx, kubelet.RebootOptions{Phase: kubelet.AllFailed})).To(Succeed())
		for _, d := range dirs {
			Expect(d).NotTo(BeAnExistingFile())
		}
	}, SpecTimeout(2*time.Minute))
})

var _ = Describe("the simulated kubelet", func() {
	It("restarts a crashed etcd with backoff and counts restarts", func(ctx SpecContext) {
		s2 := fleet.Cluster("s2")
		ec := newEtcdCluster("crash", "solo", 1, false)
		ec.create(ctx, s2, "new")
		ec.waitReady(ctx, s2)
		m := ec.members[0]
		Expect(s2.Kubelet.Crash(ec.ns, m)).To(Succeed())
		Eventually(func(g Gomega) {
			p, err := s2.Clientset.CoreV1().Pods(ec.ns).Get(ctx, m, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			cs := p.Status.ContainerStatuses[0]
			g.Expect(cs.RestartCount).To(BeEquivalentTo(1))
			g.Expect(cs.LastTerminationState.Terminated).NotTo(BeNil())
			g.Expect(cs.LastTerminationState.Terminated.ExitCode).To(BeEquivalentTo(137))
			g.Expect(cs.State.Running).NotTo(BeNil())
			g.Expect(e2eutil.PodReady(p)).To(BeTrue())
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	}, SpecTimeout(time.Minute))

	It("kills a container that fails liveness only after the probe's own initial delay, not the compressed one", func(ctx SpecContext) {
		s2 := fleet.Cluster("s2")
		ec := newEtcdCluster("liveness", "live", 1, true)
		p := ec.pod(ec.members[0], "new")
		// A port nothing listens on: the probe fails from the start.
		p.Spec.Containers[0].LivenessProbe = &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(2390)}},
			InitialDelaySeconds: 4, PeriodSeconds: 1, FailureThreshold: 1,
		}
		_, _ = s2.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ec.ns}}, metav1.CreateOptions{})
		_, err := s2.Clientset.CoreV1().Pods(ec.ns).Create(ctx, p, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		restarts := func(g Gomega) int32 {
			got, err := s2.Clientset.CoreV1().Pods(ec.ns).Get(ctx, p.Name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status.ContainerStatuses).To(HaveLen(1))
			g.Expect(got.Status.ContainerStatuses[0].State.Running).NotTo(BeNil())
			return got.Status.ContainerStatuses[0].RestartCount
		}
		Eventually(restarts).WithContext(ctx).WithTimeout(30 * time.Second).Should(BeZero())
		By("not killing it within the initial delay (readiness's cap, 0.5 s, would have)")
		Consistently(restarts).WithContext(ctx).WithTimeout(2 * time.Second).WithPolling(100 * time.Millisecond).Should(BeZero())
		By("killing it once the delay is over")
		Eventually(restarts).WithContext(ctx).WithTimeout(30 * time.Second).Should(BeNumerically(">=", 1))
	}, SpecTimeout(time.Minute))

	It("fails admission on a node told to, with UnexpectedAdmissionError", func(ctx SpecContext) {
		s2 := fleet.Cluster("s2")
		node := s2.Kubelet.NodeNames()[1]
		Expect(s2.Kubelet.FailAdmission(node, true)).To(Succeed())
		defer func() { Expect(s2.Kubelet.FailAdmission(node, false)).To(Succeed()) }()
		ec := newEtcdCluster("admission", "adm", 1, true)
		p := ec.pod(ec.members[0], "new")
		p.Spec.NodeName = node
		_, _ = s2.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ec.ns}}, metav1.CreateOptions{})
		_, err := s2.Clientset.CoreV1().Pods(ec.ns).Create(ctx, p, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			got, err := s2.Clientset.CoreV1().Pods(ec.ns).Get(ctx, p.Name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status.Phase).To(Equal(corev1.PodFailed))
			g.Expect(got.Status.Reason).To(Equal("UnexpectedAdmissionError"))
		}).WithTimeout(20 * time.Second).Should(Succeed())
	}, SpecTimeout(time.Minute))

	It("has a garbage collector: a Pod whose owner is deleted goes away", func(ctx SpecContext) {
		s2 := fleet.Cluster("s2")
		ns := "gc"
		_, _ = s2.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		owner, err := s2.Clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		ec := newEtcdCluster(ns, "owned", 1, true)
		p := ec.pod(ec.members[0], "new")
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}
		_, err = s2.Clientset.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		ec.waitReady(ctx, s2)
		Expect(s2.Clientset.CoreV1().ConfigMaps(ns).Delete(ctx, owner.Name, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() bool {
			_, err := s2.Clientset.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(60 * time.Second).Should(BeTrue())
	}, SpecTimeout(90*time.Second))
})

var _ = Describe("Stop", func() {
	It("leaves no process behind", func(ctx SpecContext) {
		before := map[int]bool{}
		for _, pid := range proc.Children() {
			before[pid] = true
		}
		f, err := sandbox.Start(ctx, sandbox.Options{Clusters: []string{"tiny"}, Nodes: 1})
		Expect(err).NotTo(HaveOccurred())
		c := f.Cluster("tiny")
		ec := newEtcdCluster("stop", "one", 1, true)
		ec.create(ctx, c, "new")
		ec.waitReady(ctx, c)
		// By pid and start time: a pid that exits is reused, and other test
		// packages start processes meanwhile. The suite's shared fleet keeps
		// running and its kubelet may restart a container meanwhile (a
		// crash-looping Pod of an earlier spec): such a process is its, not
		// this fleet's, and Stop must leave it alone.
		started := map[int]uint64{}
		for _, pid := range proc.Children() {
			if t, ok := proc.StartTime(pid); ok && !before[pid] && !strings.HasPrefix(proc.Cwd(pid), fleet.Dir+"/") {
				started[pid] = t
			}
		}
		Expect(len(started)).To(BeNumerically(">=", 4), "apiserver, etcd, controller-manager and the member")
		Expect(f.Stop()).To(Succeed())
		for pid, t := range started {
			now, ok := proc.StartTime(pid)
			Expect(ok && now == t && proc.Running(pid)).To(BeFalse(), "pid %d survived Stop", pid)
		}
		Expect(f.Dir).NotTo(BeADirectory())
	}, SpecTimeout(2*time.Minute))
})
