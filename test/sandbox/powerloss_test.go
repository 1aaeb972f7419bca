package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/datadirguard"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
	"github.com/etcdfleet/etcdfleet/test/sandbox/proc"
)

const agentImage = "ghcr.io/etcdfleet/etcdfleet-manager:dev"

var _ = Describe("a hard power loss", Ordered, func() {
	pvc := newEtcdCluster("powerloss", "pvc", 1, false)
	mem := newEtcdCluster("powerloss", "mem", 1, true)
	var (
		s2      *sandbox.Cluster
		node    string
		before  map[string]*corev1.Pod
		pvcIDs  map[string]uint64
		scratch string
	)
	BeforeAll(func() { s2 = fleet.Cluster("s2"); node = s2.Kubelet.NodeNames()[2] })

	It("kills every process with no grace, writes nothing, empties tmpfs and keeps disk volumes", func(ctx SpecContext) {
		pvcPod := pvc.pod(pvc.members[0], "new")
		pvcPod.Spec.InitContainers = []corev1.Container{{Name: "version", Image: "quay.io/coreos/etcd:v3.7.3", Command: []string{"etcd", "--version"}}}
		memPod := mem.pod(mem.members[0], "new")
		memPod.Spec.Volumes = append(memPod.Spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		memPod.Spec.Containers[0].VolumeMounts = append(memPod.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "scratch", MountPath: "/scratch"})
		createPinned(ctx, s2, node, pvc, pvcPod)
		createPinned(ctx, s2, node, mem, memPod)
		pvc.waitReady(ctx, s2)
		mem.waitReady(ctx, s2)
		for _, ec := range []etcdCluster{pvc, mem} {
			cli := ec.directClient(ctx, s2)
			putKeys(ctx, cli, "k", 20)
			if ec.name == pvc.name {
				pvcIDs = memberIDs(ctx, cli)
			}
			cli.Close()
		}
		before = map[string]*corev1.Pod{}
		for _, ec := range []etcdCluster{pvc, mem} {
			p, err := s2.Clientset.CoreV1().Pods(ec.ns).Get(ctx, ec.members[0], metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			before[ec.name] = p
		}
		scratch = filepath.Join(s2.Kubelet.VolumePath(before[mem.name], "scratch"), "kept")
		Expect(os.WriteFile(scratch, []byte("disk"), 0o644)).To(Succeed())
		memData := s2.Kubelet.VolumePath(before[mem.name], "data")
		Expect(filepath.Join(memData, "member")).To(BeADirectory())

		Expect(s2.Kubelet.PowerLoss(ctx, node, 3*time.Second)).To(Succeed())

		for _, ec := range []etcdCluster{pvc, mem} {
			old := before[ec.name]
			Expect(proc.Running(containerPID(old.Status.ContainerStatuses[0]))).To(BeFalse(), "%s's etcd survived", ec.name)
			log, err := os.ReadFile(filepath.Join(s2.Dir, "kubelet", "pods", ec.ns+"_"+old.Name+"_"+string(old.UID), "logs", "etcd.log"))
			Expect(err).NotTo(HaveOccurred())
			Expect(string(log)).NotTo(ContainSubstring("received signal; shutting down"), "SIGKILL, not SIGTERM")
			now, err := s2.Clientset.CoreV1().Pods(ec.ns).Get(ctx, old.Name, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(now.ResourceVersion).To(Equal(old.ResourceVersion), "the dead kubelet wrote to %s", old.Name)
			Expect(now.Status.Phase).To(Equal(corev1.PodRunning))
		}
		// Nothing says so yet: the controller marks the Node only once its
		// Lease has gone unrenewed for sandbox.NodeMonitorGracePeriod.
		n, err := s2.Clientset.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(n.Status.Conditions[0].Type).To(Equal(corev1.NodeReady))
		Expect(n.Status.Conditions[0].Status).To(Equal(corev1.ConditionTrue))
		Expect(filepath.Join(memData, "member")).NotTo(BeADirectory(), "the tmpfs is empty")
		Expect(scratch).To(BeARegularFile(), "a disk emptyDir survives")
	}, SpecTimeout(2*time.Minute))

	It("boots and restarts the same Pods in a new sandbox: restartCount+1, init containers again", func(ctx SpecContext) {
		// The API shows the Pods Ready all along: wait for the restart itself.
		Eventually(func(g Gomega) {
			for _, ec := range []etcdCluster{pvc, mem} {
				old := before[ec.name]
				p, err := s2.Clientset.CoreV1().Pods(ec.ns).Get(ctx, old.Name, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(p.UID).To(Equal(old.UID))
				cs := p.Status.ContainerStatuses[0]
				g.Expect(cs.RestartCount).To(Equal(old.Status.ContainerStatuses[0].RestartCount+1), ec.name)
				g.Expect(cs.LastTerminationState.Terminated).NotTo(BeNil())
				g.Expect(cs.LastTerminationState.Terminated.Reason).To(Equal("Unknown"))
				g.Expect(cs.LastTerminationState.Terminated.ExitCode).To(BeEquivalentTo(255))
				g.Expect(e2eutil.PodReady(p)).To(BeTrue(), ec.name)
			}
		}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
		p, err := s2.Clientset.CoreV1().Pods(pvc.ns).Get(ctx, pvc.members[0], metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		ic := p.Status.InitContainerStatuses[0]
		Expect(ic.RestartCount).To(BeEquivalentTo(1), "the init container ran again in the new sandbox")
		Expect(ic.State.Terminated).NotTo(BeNil())
		Expect(ic.State.Terminated.Reason).To(Equal("Completed"))

		By("the PVC member resumes with its ID and every key; the tmpfs one came back empty")
		cli := pvc.directClient(ctx, s2)
		defer cli.Close()
		Eventually(func() (int64, error) { return countKeys(ctx, cli, "k") }).WithTimeout(20 * time.Second).Should(BeEquivalentTo(20))
		Expect(memberIDs(ctx, cli)).To(Equal(pvcIDs))
		memCli := mem.directClient(ctx, s2)
		defer memCli.Close()
		Eventually(func() (int64, error) { return countKeys(ctx, memCli, "k") }).WithTimeout(20 * time.Second).Should(BeZero())
		Expect(scratch).To(BeARegularFile())
	}, SpecTimeout(2*time.Minute))
})

var _ = Describe("init containers", func() {
	var s2 *sandbox.Cluster
	BeforeEach(func() { s2 = fleet.Cluster("s2") })

	It("run in order, each to completion, before the containers", func(ctx SpecContext) {
		ec := newEtcdCluster("init-ok", "ok", 1, true)
		p := ec.pod(ec.members[0], "new")
		p.Spec.InitContainers = []corev1.Container{versionContainer("first"), versionContainer("second")}
		createPinned(ctx, s2, "", ec, p)
		ec.waitReady(ctx, s2)
		got := getPod(ctx, s2, ec.ns, p.Name)
		Expect(got.Status.InitContainerStatuses).To(HaveLen(2))
		for _, ic := range got.Status.InitContainerStatuses {
			Expect(ic.State.Terminated).NotTo(BeNil(), ic.Name)
			Expect(ic.State.Terminated.Reason).To(Equal("Completed"))
			Expect(ic.Ready).To(BeTrue())
		}
		Expect(condition(got, corev1.PodInitialized).Status).To(Equal(corev1.ConditionTrue))
	}, SpecTimeout(time.Minute))

	It("retry a failing one with backoff, hold back the rest, and report it as the kubelet does", func(ctx SpecContext) {
		ec := newEtcdCluster("init-fail", "fail", 1, true)
		p := ec.pod(ec.members[0], "new")
		p.Spec.InitContainers = []corev1.Container{brokenGuard(), versionContainer("second")}
		createPinned(ctx, s2, "", ec, p)
		Eventually(func(g Gomega) {
			got := getPod(ctx, s2, ec.ns, p.Name)
			g.Expect(got.Status.Phase).To(Equal(corev1.PodPending))
			init := condition(got, corev1.PodInitialized)
			g.Expect(init.Status).To(Equal(corev1.ConditionFalse))
			g.Expect(init.Reason).To(Equal("ContainersNotInitialized"))
			g.Expect(init.Message).To(ContainSubstring("broken"))
			g.Expect(got.Status.InitContainerStatuses).To(HaveLen(2))
			broken, second := got.Status.InitContainerStatuses[0], got.Status.InitContainerStatuses[1]
			g.Expect(broken.RestartCount).To(BeNumerically(">=", 2))
			t := broken.LastTerminationState.Terminated
			if broken.State.Terminated != nil {
				t = broken.State.Terminated
			}
			g.Expect(t).NotTo(BeNil())
			g.Expect(t.ExitCode).To(BeEquivalentTo(2))
			g.Expect(t.Reason).To(Equal("Error"))
			g.Expect(t.Message).To(ContainSubstring("--data-dir and --marker-dir are required"), "FallbackToLogsOnError reads the log")
			g.Expect(second.State.Waiting).NotTo(BeNil())
			g.Expect(second.State.Waiting.Reason).To(Equal("PodInitializing"))
			g.Expect(got.Status.ContainerStatuses[0].State.Waiting).NotTo(BeNil())
			g.Expect(got.Status.ContainerStatuses[0].State.Waiting.Reason).To(Equal("PodInitializing"))
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	}, SpecTimeout(time.Minute))

	It("fail the Pod when one fails under restartPolicy Never", func(ctx SpecContext) {
		ec := newEtcdCluster("init-never", "never", 1, true)
		p := ec.pod(ec.members[0], "new")
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		p.Spec.InitContainers = []corev1.Container{brokenGuard()}
		createPinned(ctx, s2, "", ec, p)
		Eventually(func(g Gomega) {
			got := getPod(ctx, s2, ec.ns, p.Name)
			g.Expect(got.Status.Phase).To(Equal(corev1.PodFailed))
			ic := got.Status.InitContainerStatuses[0]
			g.Expect(ic.RestartCount).To(BeZero())
			g.Expect(ic.State.Terminated).NotTo(BeNil())
			g.Expect(ic.State.Terminated.ExitCode).To(BeEquivalentTo(2))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	}, SpecTimeout(time.Minute))
})

var _ = Describe("the data-dir guard of a memory member", func() {
	It("passes a crash that keeps the tmpfs and stops etcd after a power loss wiped it", func(ctx SpecContext) {
		s2 := fleet.Cluster("s2")
		node := s2.Kubelet.NodeNames()[1]
		ec := newEtcdCluster("guard", "g", 1, true)
		p := ec.pod(ec.members[0], "new")
		m := &v1alpha1.EtcdMember{Spec: v1alpha1.EtcdMemberSpec{Storage: v1alpha1.StorageSpec{Medium: v1alpha1.StorageMediumMemory}}}
		inits, vols := datadirguard.ForMember(m, datadirguard.Options{Image: agentImage, DataVolume: "data", DataDir: "/var/lib/etcd"})
		p.Spec.InitContainers, p.Spec.Volumes = inits, append(p.Spec.Volumes, vols...)
		createPinned(ctx, s2, node, ec, p)
		ec.waitReady(ctx, s2)
		cli := ec.directClient(ctx, s2)
		putKeys(ctx, cli, "k", 10)
		cli.Close()

		By("a crash restarts etcd in the same sandbox, without the guard, on its data")
		Expect(s2.Kubelet.Crash(ec.ns, p.Name)).To(Succeed())
		Eventually(func(g Gomega) {
			got := getPod(ctx, s2, ec.ns, p.Name)
			g.Expect(got.Status.ContainerStatuses[0].RestartCount).To(BeEquivalentTo(1))
			g.Expect(e2eutil.PodReady(got)).To(BeTrue())
			g.Expect(got.Status.InitContainerStatuses[0].RestartCount).To(BeZero(), "the guard does not run again")
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		cli = ec.directClient(ctx, s2)
		Eventually(func() (int64, error) { return countKeys(ctx, cli, "k") }).WithTimeout(20 * time.Second).Should(BeEquivalentTo(10))
		cli.Close()

		By("a power loss wipes the tmpfs: on boot the guard fails with DataDirLost and etcd never starts")
		Expect(s2.Kubelet.PowerLoss(ctx, node, time.Second)).To(Succeed())
		Eventually(func(g Gomega) {
			got := getPod(ctx, s2, ec.ns, p.Name)
			lost, msg := datadirguard.DataDirLost(got)
			g.Expect(lost).To(BeTrue())
			g.Expect(msg).To(HavePrefix("DataDirLost: "))
			g.Expect(got.Status.Phase).To(Equal(corev1.PodPending))
			g.Expect(condition(got, corev1.PodInitialized).Status).To(Equal(corev1.ConditionFalse))
			etcd := got.Status.ContainerStatuses[0]
			g.Expect(etcd.State.Waiting).NotTo(BeNil())
			g.Expect(etcd.State.Waiting.Reason).To(Equal("PodInitializing"))
			g.Expect(etcd.RestartCount).To(BeEquivalentTo(2))
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	}, SpecTimeout(2*time.Minute))
})

// createPinned creates the namespace, the claims and p, on node if given.
func createPinned(ctx context.Context, c *sandbox.Cluster, node string, ec etcdCluster, p *corev1.Pod) {
	GinkgoHelper()
	cs := c.Clientset.CoreV1()
	_, _ = cs.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ec.ns}}, metav1.CreateOptions{})
	if !ec.memory {
		_, err := cs.PersistentVolumeClaims(ec.ns).Create(ctx, ec.claim(p.Name), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
	p.Spec.NodeName = node
	_, err := cs.Pods(ec.ns).Create(ctx, p, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

func getPod(ctx context.Context, c *sandbox.Cluster, ns, name string) *corev1.Pod {
	GinkgoHelper()
	p, err := c.Clientset.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return p
}

func condition(p *corev1.Pod, t corev1.PodConditionType) corev1.PodCondition {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.PodCondition{}
}

func versionContainer(name string) corev1.Container {
	return corev1.Container{Name: name, Image: "quay.io/coreos/etcd:v3.7.3", Command: []string{"etcd", "--version"}}
}

// brokenGuard is the guard without its flags: it exits 2 with its error on
// stderr only, so the message must come from the log.
func brokenGuard() corev1.Container {
	return corev1.Container{Name: "broken", Image: agentImage, Command: []string{datadirguard.AgentPath, datadirguard.Subcommand},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError}
}

// containerPID reads the sandbox's container ID (sandbox://<pid>).
func containerPID(cs corev1.ContainerStatus) int {
	pid, err := strconv.Atoi(strings.TrimPrefix(cs.ContainerID, "sandbox://"))
	Expect(err).NotTo(HaveOccurred(), cs.ContainerID)
	return pid
}
