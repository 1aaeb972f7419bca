package etcdsnapshot

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
	"github.com/etcdfleet/etcdfleet/test/envtestenv"
)

// The decisions of the reconciler against a real kube-apiserver (envtest,
// no Job controller and no kubelet: Jobs never run here; the sandbox e2e
// runs them). Reconcile is called directly.

var (
	env *envtestenv.Env
	r   *Reconciler
)

func TestSnapshots(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "memberctl/etcdsnapshot (envtest)")
}

var _ = BeforeSuite(func() {
	var err error
	env, err = envtestenv.Start(envtestenv.WorkloadCRDs, v1alpha1.AddToScheme)
	Expect(err).NotTo(HaveOccurred())
	cl := &workload.Cluster{Client: env.Client, Reader: env.Client, Recorder: record.NewFakeRecorder(100)}
	r = &Reconciler{Clusters: workload.Static{C: cl}, Options: DefaultOptions()}
})

var _ = AfterSuite(func() { Expect(env.Stop()).To(Succeed()) })

func newSnapshot(ns string) *v1alpha1.EtcdSnapshot {
	return &v1alpha1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s"},
		Spec: v1alpha1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "main"},
			Location: v1alpha1.SnapshotLocation{PVC: &v1alpha1.PVCLocation{ClaimName: "backups"}}}}
}

// reconcileOnce runs one Reconcile and returns the snapshot as stored.
func reconcileOnce(ctx context.Context, s *v1alpha1.EtcdSnapshot) *v1alpha1.EtcdSnapshot {
	GinkgoHelper()
	_, err := r.Reconcile(ctx, "", client.ObjectKeyFromObject(s))
	Expect(err).NotTo(HaveOccurred())
	got := &v1alpha1.EtcdSnapshot{}
	Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(s), got)).To(Succeed())
	return got
}

func readyReason(s *v1alpha1.EtcdSnapshot) string {
	c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady)
	if c == nil {
		return ""
	}
	return c.Reason
}

// runningCluster creates EtcdCluster main and one EtcdMember of it with a
// Pod name, as the member controller leaves it.
func runningCluster(ctx context.Context, ns string) {
	GinkgoHelper()
	Expect(env.Client.Create(ctx, &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"},
		Spec: v1alpha1.EtcdClusterSpec{Version: "3.6.16", Storage: v1alpha1.StorageSpec{Size: resource.MustParse("1Gi")}}})).To(Succeed())
	m := &v1alpha1.EtcdMember{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main-a",
		Labels: map[string]string{v1alpha1.LabelCluster: "main"}},
		Spec: v1alpha1.EtcdMemberSpec{ClusterName: "main", Version: "3.6.16",
			Storage: v1alpha1.StorageSpec{Size: resource.MustParse("1Gi")}}}
	Expect(env.Client.Create(ctx, m)).To(Succeed())
	m.Status.PodName, m.Status.IsVoter = "main-a", true
	Expect(env.Client.Status().Update(ctx, m)).To(Succeed())
}

var _ = Describe("EtcdSnapshot reconciler", func() {
	It("waits Pending while the cluster is missing, then starts one Job", func(ctx SpecContext) {
		ns := env.NewNamespace(ctx, "snap-test")
		s := newSnapshot(ns)
		Expect(env.Client.Create(ctx, s)).To(Succeed())
		got := reconcileOnce(ctx, s)
		Expect(got.Status.Phase).To(Equal(v1alpha1.SnapshotPending))
		Expect(readyReason(got)).To(Equal(v1alpha1.ReasonClusterNotFound))

		runningCluster(ctx, ns)
		got = reconcileOnce(ctx, s)
		Expect(got.Status.Phase).To(Equal(v1alpha1.SnapshotStarted))
		Expect(readyReason(got)).To(Equal(v1alpha1.ReasonJobCreated))
		job := &batchv1.Job{}
		Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: JobName("s")}, job)).To(Succeed())
		Expect(metav1.IsControlledBy(job, got)).To(BeTrue())
		Expect(job.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--file=/snapshot/s.db"))
		Expect(job.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--endpoints=http://main-a.main." + ns + ".svc:2379"))
	})

	It("fails for good with SnapshotJobLost when its Job vanishes while Started", func(ctx SpecContext) {
		ns := env.NewNamespace(ctx, "snap-test")
		s := newSnapshot(ns)
		Expect(env.Client.Create(ctx, s)).To(Succeed())
		s.Status.Phase = v1alpha1.SnapshotStarted
		Expect(env.Client.Status().Update(ctx, s)).To(Succeed())
		got := reconcileOnce(ctx, s)
		Expect(got.Status.Phase).To(Equal(v1alpha1.SnapshotFailed))
		Expect(readyReason(got)).To(Equal(v1alpha1.ReasonSnapshotJobLost))

		// Sticky: with the cluster there now, nothing is started again.
		runningCluster(ctx, ns)
		got = reconcileOnce(ctx, s)
		Expect(got.Status.Phase).To(Equal(v1alpha1.SnapshotFailed))
		err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: JobName("s")}, &batchv1.Job{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no Job after a final phase: %v", err)
	})

	It("does not take a Job its cache has not seen yet for a lost one", func(ctx SpecContext) {
		ns := env.NewNamespace(ctx, "snap-test")
		runningCluster(ctx, ns)
		s := newSnapshot(ns)
		Expect(env.Client.Create(ctx, s)).To(Succeed())
		reconcileOnce(ctx, s) // Started, with its Job on the apiserver

		// The cache lags: its Jobs are not there yet, the apiserver's are.
		lagging := interceptor.NewClient(env.Client, interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, ok := obj.(*batchv1.Job); ok {
					return apierrors.NewNotFound(batchv1.Resource("jobs"), key.Name)
				}
				return c.Get(ctx, key, obj, opts...)
			}})
		cl := &workload.Cluster{Client: lagging, Reader: env.Client, Recorder: record.NewFakeRecorder(100)}
		lag := &Reconciler{Clusters: workload.Static{C: cl}, Options: DefaultOptions()}
		res, err := lag.Reconcile(ctx, "", client.ObjectKeyFromObject(s))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.RequeueAfter).To(BeNumerically(">", 0), "looks again once the cache caught up")
		got := &v1alpha1.EtcdSnapshot{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(s), got)).To(Succeed())
		Expect(got.Status.Phase).To(Equal(v1alpha1.SnapshotStarted))
	})

	It("records the artifact from the succeeded Pod's termination message", func(ctx SpecContext) {
		ns := env.NewNamespace(ctx, "snap-test")
		runningCluster(ctx, ns)
		s := newSnapshot(ns)
		s.Spec.DeletionPolicy = v1alpha1.DeletionDelete
		Expect(env.Client.Create(ctx, s)).To(Succeed())
		reconcileOnce(ctx, s)
		job := &batchv1.Job{}
		Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: JobName("s")}, job)).To(Succeed())

		endJob(ctx, job, corev1.PodSucceeded, `{"sizeBytes":4096,"sha256":"ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12","revision":77,"etag":"9b2cf535f27731c974343645a3985328-1"}`)

		got := reconcileOnce(ctx, s)
		Expect(got.Status.Phase).To(Equal(v1alpha1.SnapshotComplete))
		Expect(got.Status.Artifact).To(Equal(&v1alpha1.SnapshotArtifact{URI: "pvc://backups/s.db", SizeBytes: 4096, SHA256: "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12", Revision: 77,
			ETag: "9b2cf535f27731c974343645a3985328-1"}))
		Expect(readyReason(got)).To(Equal(v1alpha1.ReasonSnapshotStored))

		// deletionPolicy Delete: the cleanup Job removes only the object
		// with the recorded ETag, and so does a check before a restore.
		Expect(BuildVerifyJob(got, DefaultOptions()).Spec.Template.Spec.Containers[0].Args).To(ContainElement("--etag=9b2cf535f27731c974343645a3985328-1"))
		Expect(env.Client.Delete(ctx, got)).To(Succeed())
		reconcileOnce(ctx, got)
		cleanup := &batchv1.Job{}
		Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: CleanupJobName("s")}, cleanup)).To(Succeed())
		Expect(cleanup.Spec.Template.Spec.Containers[0].Args).To(ContainElements("--delete", "--etag=9b2cf535f27731c974343645a3985328-1"))
	})

	It("fails with ObjectExists, naming the key, when the agent found its location taken", func(ctx SpecContext) {
		ns := env.NewNamespace(ctx, "snap-test")
		runningCluster(ctx, ns)
		s := newSnapshot(ns)
		Expect(env.Client.Create(ctx, s)).To(Succeed())
		reconcileOnce(ctx, s)
		job := &batchv1.Job{}
		Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: JobName("s")}, job)).To(Succeed())
		endJob(ctx, job, corev1.PodFailed, "ObjectExists: /snapshot/s.db already exists; a snapshot never replaces one")
		got := reconcileOnce(ctx, s)
		Expect(got.Status.Phase).To(Equal(v1alpha1.SnapshotFailed))
		Expect(readyReason(got)).To(Equal(v1alpha1.ReasonObjectExists))
		Expect(meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady).Message).To(ContainSubstring("/snapshot/s.db already exists"))
	})

	It("refuses a snapshot whose location is another live snapshot's, and starts none", func(ctx SpecContext) {
		ns := env.NewNamespace(ctx, "snap-test")
		runningCluster(ctx, ns)
		first := newSnapshot(ns)
		Expect(env.Client.Create(ctx, first)).To(Succeed())
		Expect(reconcileOnce(ctx, first).Status.Phase).To(Equal(v1alpha1.SnapshotStarted))

		// pvc://backups/s.db again, by an explicit path.
		dup := newSnapshot(ns)
		dup.Name, dup.Spec.Location.PVC.Path = "t", "s.db"
		Expect(env.Client.Create(ctx, dup)).To(Succeed())
		got := reconcileOnce(ctx, dup)
		Expect(got.Status.Phase).To(Equal(v1alpha1.SnapshotFailed))
		Expect(readyReason(got)).To(Equal(v1alpha1.ReasonDuplicateLocation))
		Expect(meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady).Message).To(ContainSubstring("EtcdSnapshot s already stores to pvc://backups/s.db"))
		err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: JobName("t")}, &batchv1.Job{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no Job for a refused snapshot: %v", err)

		// Another location is free; so is a location whose snapshot failed.
		other := newSnapshot(ns)
		other.Name, other.Spec.Location.PVC.Path = "u", "daily/"
		Expect(env.Client.Create(ctx, other)).To(Succeed())
		Expect(reconcileOnce(ctx, other).Status.Phase).To(Equal(v1alpha1.SnapshotStarted))
		again := newSnapshot(ns)
		again.Name, again.Spec.Location.PVC.Path = "v", "t.db" // t's location; t failed
		Expect(env.Client.Create(ctx, again)).To(Succeed())
		Expect(reconcileOnce(ctx, again).Status.Phase).To(Equal(v1alpha1.SnapshotStarted))
	})
})

// endJob makes job end as the Job controller and the kubelet leave it: a
// Pod in phase with the agent's termination message msg, and the Job's
// final condition.
func endJob(ctx context.Context, job *batchv1.Job, phase corev1.PodPhase, msg string) {
	GinkgoHelper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name + "-x", Labels: job.Spec.Template.Labels},
		Spec: job.Spec.Template.Spec}
	pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}
	Expect(env.Client.Create(ctx, pod)).To(Succeed())
	pod.Status.Phase = phase
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: containerID, State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{Message: msg}}}}
	Expect(env.Client.Status().Update(ctx, pod)).To(Succeed())
	now := metav1.Now()
	job.Status.StartTime = &now
	if phase == corev1.PodSucceeded {
		job.Status.CompletionTime, job.Status.Succeeded = &now, 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now}}
	} else {
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "BackoffLimitExceeded"},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "BackoffLimitExceeded"}}
	}
	Expect(env.Client.Status().Update(ctx, job)).To(Succeed())
}
