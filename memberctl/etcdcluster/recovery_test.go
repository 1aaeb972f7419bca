package etcdcluster

import (
	"context"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdsnapshot"
)

// Restore after total loss, decided by the cluster controller. The
// harness has no Pods, so every member of a memory cluster has "lost its
// Pod"; a spec that wants a member with data creates its Pod.
var _ = Describe("restore after total loss", func() {
	var h *harness
	ctx := context.Background()
	BeforeEach(func() { h = newHarness() })

	// lostMemoryCluster is a formed 3-member memory cluster, optionally
	// opted in, whose etcd then stops answering.
	lostMemoryCluster := func(optIn bool) *v1alpha1.EtcdCluster {
		GinkgoHelper()
		ec := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "ec", Namespace: h.ns},
			Spec: v1alpha1.EtcdClusterSpec{Version: "3.6.16",
				Storage: v1alpha1.StorageSpec{Medium: v1alpha1.StorageMediumMemory, Size: resource.MustParse("64Mi")}}}
		if optIn {
			ec.Spec.Recovery = &v1alpha1.RecoverySpec{RestoreOnTotalLoss: true}
		}
		Expect(k8sClient.Create(ctx, ec)).To(Succeed())
		h.etcd.SetRevision(500)
		h.converge(ec, 3)
		h.etcd.SetFail(errors.New("context deadline exceeded"))
		return ec
	}
	snapshot := func(name, cluster string, phase v1alpha1.SnapshotPhase, completed time.Time, rev int64) *v1alpha1.EtcdSnapshot {
		GinkgoHelper()
		s := &v1alpha1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name},
			Spec: v1alpha1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: cluster},
				Location: v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: "http://s3:8333", Bucket: "backups",
					Key: "prod/", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}}}}
		Expect(k8sClient.Create(ctx, s)).To(Succeed())
		s.Status = v1alpha1.EtcdSnapshotStatus{Phase: phase, CompletedAt: &metav1.Time{Time: completed}}
		if phase == v1alpha1.SnapshotComplete {
			s.Status.Artifact = &v1alpha1.SnapshotArtifact{URI: "s3://backups/prod/" + name + ".db", SizeBytes: 1, SHA256: "ab", Revision: rev}
		}
		Expect(k8sClient.Status().Update(ctx, s)).To(Succeed())
		return s
	}
	// lostPVCCluster is a formed, opted-in 3-member PVC cluster with a
	// Complete snapshot, whose etcd then stops answering.
	lostPVCCluster := func() *v1alpha1.EtcdCluster {
		GinkgoHelper()
		ec := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "ec", Namespace: h.ns},
			Spec: v1alpha1.EtcdClusterSpec{Version: "3.6.16", Storage: v1alpha1.StorageSpec{Size: resource.MustParse("1Gi")},
				Recovery: &v1alpha1.RecoverySpec{RestoreOnTotalLoss: true}}}
		Expect(k8sClient.Create(ctx, ec)).To(Succeed())
		h.etcd.SetRevision(500)
		h.converge(ec, 3)
		h.etcd.SetFail(errors.New("context deadline exceeded"))
		snapshot("snap", "ec", v1alpha1.SnapshotComplete, time.Now().Add(time.Minute), 100)
		return ec
	}
	// checked plays the Job controller and the agent for the checks of
	// snapshots (etcdsnapshot.BuildVerifyJob) the reconciler started: the
	// check of each named snapshot ends, verified when its message is
	// empty, failed with that termination message otherwise.
	checked := func(outcomes map[string]string) {
		GinkgoHelper()
		for name, msg := range outcomes {
			job := &batchv1.Job{}
			Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: h.ns, Name: etcdsnapshot.VerifyJobName(name)}, job)).To(Succeed(),
				"the check of %s was started", name)
			Expect(job.Spec.Template.Spec.Containers[0].Args).To(ContainElement(HavePrefix("--check-sha256=")))
			now := metav1.NewTime(h.now)
			job.Status.StartTime = &now
			if msg == "" {
				job.Status.CompletionTime, job.Status.Succeeded = &now, 1
				job.Status.Conditions = []batchv1.JobCondition{
					{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
					{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now}}
				Expect(k8sClient.Status().Update(ctx, job)).To(Succeed())
				continue
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: job.Name + "-" + string(job.UID)[:8], Labels: job.Spec.Template.Labels},
				Spec: job.Spec.Template.Spec}
			pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}
			Expect(k8sClient.Create(ctx, pod)).To(Succeed())
			pod.Status.Phase = corev1.PodFailed
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: job.Spec.Template.Spec.Containers[0].Name,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Message: msg}}}}
			Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
			job.Status.Failed = 1
			job.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "BackoffLimitExceeded"},
				{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "BackoffLimitExceeded",
					Message: "Job has reached the specified backoff limit"}}
			Expect(k8sClient.Status().Update(ctx, job)).To(Succeed())
		}
	}
	// untouched: no member is being removed and no restore was decided.
	untouched := func(ec *v1alpha1.EtcdCluster) {
		GinkgoHelper()
		Expect(h.get(ec).Status.Recovery).To(BeNil())
		for _, m := range h.members() {
			Expect(m.DeletionTimestamp).To(BeNil(), "nothing is removed before a snapshot verified")
		}
	}
	// finalizeAll plays the member controller: deleted members let go.
	finalizeAll := func() {
		GinkgoHelper()
		for _, m := range h.members() {
			if m.DeletionTimestamp != nil && controllerutil.RemoveFinalizer(&m, v1alpha1.FinalizerMemberCleanup) {
				Expect(k8sClient.Update(ctx, &m)).To(Succeed())
			}
		}
	}

	It("re-bootstraps from the newest Complete snapshot with a new token, removing every lost member first", func() {
		ec := lostMemoryCluster(true)
		old := h.members()
		oldID, oldToken := h.get(ec).Status.ClusterID, h.get(ec).Status.ClusterToken
		base := time.Now().Add(time.Minute) // after the cluster was created
		snapshot("older", "ec", v1alpha1.SnapshotComplete, base, 100)
		want := snapshot("newer", "ec", v1alpha1.SnapshotComplete, base.Add(time.Minute), 300)
		snapshot("failed", "ec", v1alpha1.SnapshotFailed, base.Add(2*time.Minute), 0)
		snapshot("other", "someone-else", v1alpha1.SnapshotComplete, base.Add(3*time.Minute), 400)

		h.reconcile(ec)
		Expect(conditionReason(h.get(ec), v1alpha1.ConditionTotalLoss)).To(Equal(v1alpha1.ReasonVerifyingSnapshot))
		untouched(ec)
		checked(map[string]string{"newer": ""})
		h.reconcile(ec)
		st := h.get(ec).Status
		Expect(st.Recovery).NotTo(BeNil())
		Expect(st.Recovery.Phase).To(Equal(v1alpha1.RecoveryRestoring))
		Expect(st.Recovery.Source.SnapshotName).To(Equal(want.Name))
		Expect(st.Recovery.Source.SHA256).To(Equal("ab"))
		Expect(st.Recovery.PreviousClusterID).To(Equal(oldID))
		Expect(st.Recovery.LostRevisions).To(Equal(int64(200)), "last observed 500, snapshot 300")
		Expect(st.Recovery.ReplacedMembers).To(HaveLen(3))
		Expect(st.ClusterID).To(BeEmpty())
		Expect(st.ClusterToken).NotTo(Equal(oldToken))
		Expect(conditionReason(h.get(ec), v1alpha1.ConditionTotalLoss)).To(Equal(v1alpha1.ReasonRestoringAfterTotalLoss))

		By("the decision stands: a newer snapshot, or a restarted manager, does not change it")
		snapshot("after-decision", "ec", v1alpha1.SnapshotComplete, base.Add(4*time.Minute), 350)
		h.r = &Reconciler{Clusters: h.r.Clusters, Now: h.r.Now}

		By("no seed while a lost member is still there")
		h.reconcile(ec)
		for _, m := range h.members() {
			Expect(m.DeletionTimestamp).NotTo(BeNil(), "only lost members, all being removed: %s", m.Name)
		}
		finalizeAll()
		h.reconcile(ec)
		ms := h.members()
		Expect(ms).To(HaveLen(1))
		seed := ms[0]
		Expect(seed.Spec.Bootstrap).To(BeTrue())
		Expect(seed.Spec.Restore).NotTo(BeNil())
		Expect(seed.Spec.Restore.SnapshotName).To(Equal(want.Name))
		Expect(seed.Spec.ClusterToken).To(Equal(h.get(ec).Status.ClusterToken))
		for _, o := range old {
			Expect(seed.Name).NotTo(Equal(o.Name))
		}

		By("the restored seed forms a new cluster, which grows back to 3")
		h.etcd.Rebootstrap(0xbeef)
		h.converge(ec, 3)
		st = h.get(ec).Status
		Expect(st.Recovery.Phase).To(Equal(v1alpha1.RecoveryRestored))
		Expect(st.Recovery.ClusterID).To(Equal(st.ClusterID))
		Expect(conditionStatus(h.get(ec), v1alpha1.ConditionTotalLoss)).To(Equal(metav1.ConditionFalse))
		Expect(h.events.All()).To(ContainElement(And(ContainSubstring(v1alpha1.ReasonRestoredAfterTotalLoss),
			ContainSubstring("EtcdSnapshot newer"), ContainSubstring("at least 200 revision(s)"))))
	})

	It("counts claims in phase Lost as lost only after a grace period, and not once they bind again", func() {
		ec := lostPVCCluster()
		setPhase := func(phase corev1.PersistentVolumeClaimPhase) {
			GinkgoHelper()
			for _, m := range h.members() {
				pvc := &corev1.PersistentVolumeClaim{}
				key := types.NamespacedName{Namespace: h.ns, Name: etcd.PVCName(m.Name)}
				if err := k8sClient.Get(ctx, key, pvc); apierrors.IsNotFound(err) {
					pvc = &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: key.Name},
						Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
							Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
					Expect(k8sClient.Create(ctx, pvc)).To(Succeed())
				}
				pvc.Status.Phase = phase
				Expect(k8sClient.Status().Update(ctx, pvc)).To(Succeed())
			}
		}
		pending := func() {
			GinkgoHelper()
			c := apimeta.FindStatusCondition(h.get(ec).Status.Conditions, v1alpha1.ConditionTotalLoss)
			Expect(c).NotTo(BeNil())
			Expect(c.Status).To(Equal(metav1.ConditionUnknown))
			Expect(c.Reason).To(Equal(v1alpha1.ReasonClaimsLostPending))
			Expect(h.get(ec).Status.Recovery).To(BeNil())
			for _, m := range h.members() {
				Expect(m.DeletionTimestamp).To(BeNil(), "nothing is removed during the grace period")
			}
		}
		setPhase(corev1.ClaimLost)
		h.reconcile(ec)
		pending()
		Expect(h.events.All()).To(ContainElement(ContainSubstring("Warning " + v1alpha1.ReasonClaimsLostPending)))

		By("the claims binding again within the grace period: no loss")
		h.now = h.now.Add(4 * time.Minute)
		setPhase(corev1.ClaimBound)
		h.reconcile(ec)
		Expect(conditionStatus(h.get(ec), v1alpha1.ConditionTotalLoss)).To(BeEmpty())

		By("Lost again, for the whole grace period: restored")
		setPhase(corev1.ClaimLost)
		h.reconcile(ec)
		pending()
		h.now = h.now.Add(4 * time.Minute)
		h.reconcile(ec)
		pending()
		h.now = h.now.Add(time.Minute + time.Second)
		h.reconcile(ec)
		checked(map[string]string{"snap": ""})
		h.reconcile(ec)
		Expect(h.get(ec).Status.Recovery).NotTo(BeNil())
		Expect(conditionReason(h.get(ec), v1alpha1.ConditionTotalLoss)).To(Equal(v1alpha1.ReasonRestoringAfterTotalLoss))
	})

	It("counts a claim being deleted as lost once no Pod uses it, at once, and not while one does", func() {
		ec := lostPVCCluster()
		const held = "test.etcdfleet.io/pvc-protection" // plays pvc-protection, which envtest lacks
		for _, m := range h.members() {
			pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: etcd.PVCName(m.Name), Finalizers: []string{held}},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
			Expect(k8sClient.Create(ctx, pvc)).To(Succeed())
			Expect(k8sClient.Delete(ctx, pvc)).To(Succeed())
			DeferCleanup(func() {
				cur := &corev1.PersistentVolumeClaim{}
				if k8sClient.Get(context.Background(), client.ObjectKeyFromObject(pvc), cur) == nil {
					cur.Finalizers = nil
					Expect(client.IgnoreNotFound(k8sClient.Update(context.Background(), cur))).To(Succeed())
				}
			})
		}
		survivor := h.members()[0]
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: survivor.Name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "etcd"}}}}
		Expect(k8sClient.Create(ctx, pod)).To(Succeed())
		h.reconcile(ec)
		Expect(h.get(ec).Status.Recovery).To(BeNil(), "a claim being deleted still serves the Pod that uses it")

		Expect(k8sClient.Delete(ctx, pod, client.GracePeriodSeconds(0))).To(Succeed())
		h.reconcile(ec)
		checked(map[string]string{"snap": ""})
		h.reconcile(ec)
		Expect(h.get(ec).Status.Recovery).NotTo(BeNil(), "no grace period: the claims go as soon as no Pod uses them")
		Expect(conditionReason(h.get(ec), v1alpha1.ConditionTotalLoss)).To(Equal(v1alpha1.ReasonRestoringAfterTotalLoss))
	})

	It("checks the snapshot's stored copy first, falls back to the next newest, and with none verified touches nothing", func() {
		ec := lostMemoryCluster(true)
		base := time.Now().Add(time.Minute)
		snapshot("oldest", "ec", v1alpha1.SnapshotComplete, base, 100)
		snapshot("older", "ec", v1alpha1.SnapshotComplete, base.Add(time.Minute), 200)
		snapshot("newest", "ec", v1alpha1.SnapshotComplete, base.Add(2*time.Minute), 300)

		By("the newest one's object was deleted: the next newest is checked")
		h.reconcile(ec)
		checked(map[string]string{"newest": "read back the stored snapshot: The specified key does not exist."})
		h.reconcile(ec)
		Expect(conditionReason(h.get(ec), v1alpha1.ConditionTotalLoss)).To(Equal(v1alpha1.ReasonVerifyingSnapshot))
		untouched(ec)

		By("the next one was overwritten by another upload: none left that verifies but the oldest, which is not checked yet")
		checked(map[string]string{"older": "stored snapshot differs from the one streamed: 10 bytes sha256 00, want 4096 bytes sha256 ab"})
		h.reconcile(ec)
		untouched(ec)

		By("the oldest failing too: NoVerifiedSnapshot, one Warning, nothing removed")
		checked(map[string]string{"oldest": "read back the stored snapshot: connection refused"})
		h.reconcile(ec)
		h.reconcile(ec)
		c := apimeta.FindStatusCondition(h.get(ec).Status.Conditions, v1alpha1.ConditionTotalLoss)
		Expect(c).NotTo(BeNil())
		Expect(c.Reason).To(Equal(v1alpha1.ReasonNoVerifiedSnapshot))
		Expect(c.Message).To(And(ContainSubstring("none of the 3 Complete EtcdSnapshots"),
			ContainSubstring("newest (s3://backups/prod/newest.db): "), ContainSubstring("The specified key does not exist"),
			ContainSubstring("older (s3://backups/prod/older.db): "), ContainSubstring("differs")))
		Expect(callsLike(h.events.All(), "Warning "+v1alpha1.ReasonNoVerifiedSnapshot)).To(HaveLen(1), "one Event")
		untouched(ec)
		Expect(h.get(ec).Status.ClusterID).NotTo(BeEmpty())

		By("once the failed checks are stale, they run again; the oldest now verifies and is restored")
		h.now = h.now.Add(verifyFresh + time.Second)
		h.reconcile(ec) // the stale checks are deleted...
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: h.ns, Name: etcdsnapshot.VerifyJobName("newest")}, &batchv1.Job{})).
				To(WithTransform(apierrors.IsNotFound, BeTrue()))
		}).Should(Succeed())
		h.reconcile(ec) // ...and started again
		checked(map[string]string{"newest": "read back the stored snapshot: The specified key does not exist."})
		h.reconcile(ec) // older's stale check deleted
		h.reconcile(ec) // and started again
		checked(map[string]string{"older": "stored snapshot differs"})
		h.reconcile(ec)
		h.reconcile(ec)
		checked(map[string]string{"oldest": ""})
		h.reconcile(ec)
		st := h.get(ec).Status
		Expect(st.Recovery).NotTo(BeNil())
		Expect(st.Recovery.Source.SnapshotName).To(Equal("oldest"))
		Expect(h.events.All()).To(ContainElement(And(ContainSubstring(v1alpha1.ReasonRestoringAfterTotalLoss),
			ContainSubstring("EtcdSnapshot oldest"), ContainSubstring("Passed over"), ContainSubstring("newest (s3://backups/prod/newest.db)"))))
	})

	It("never restores while one member's Pod may still hold data", func() {
		ec := lostMemoryCluster(true)
		snapshot("snap", "ec", v1alpha1.SnapshotComplete, time.Now().Add(time.Minute), 100)
		survivor := h.members()[1]
		Expect(k8sClient.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: survivor.Name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "etcd"}}}})).To(Succeed())
		for range 3 {
			h.reconcile(ec)
		}
		Expect(h.get(ec).Status.Recovery).To(BeNil())
		Expect(h.get(ec).Status.ClusterID).NotTo(BeEmpty())
		Expect(conditionStatus(h.get(ec), v1alpha1.ConditionTotalLoss)).To(BeEmpty())
		for _, m := range h.members() {
			Expect(m.DeletionTimestamp).To(BeNil())
		}

		By("naming the state: a majority lost for good, with the survivor")
		c := apimeta.FindStatusCondition(h.get(ec).Status.Conditions, v1alpha1.ConditionAvailable)
		Expect(c).NotTo(BeNil())
		Expect(c.Reason).To(Equal(v1alpha1.ReasonMajorityLost))
		Expect(c.Message).To(And(ContainSubstring("2 of 3 members lost their data for good"),
			ContainSubstring("lost its Pod, and its tmpfs with it"), ContainSubstring("surviving: "+survivor.Name)))
		Expect(h.events.All()).To(ContainElement(ContainSubstring(v1alpha1.ReasonMajorityLost)))
	})

	It("does not call a loss of a minority a majority loss", func() {
		ec := lostMemoryCluster(false)
		for _, m := range h.members()[1:] {
			Expect(k8sClient.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: m.Name},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "etcd"}}}})).To(Succeed())
		}
		h.reconcile(ec)
		c := apimeta.FindStatusCondition(h.get(ec).Status.Conditions, v1alpha1.ConditionAvailable)
		Expect(c).NotTo(BeNil())
		Expect(c.Reason).NotTo(Equal(v1alpha1.ReasonMajorityLost))
	})

	It("reports TotalLoss without the opt-in, and NoSnapshot with it but nothing to restore, changing nothing", func() {
		ec := lostMemoryCluster(false)
		snapshot("snap", "ec", v1alpha1.SnapshotComplete, time.Now().Add(time.Minute), 100)
		h.reconcile(ec)
		h.reconcile(ec)
		Expect(conditionReason(h.get(ec), v1alpha1.ConditionTotalLoss)).To(Equal(v1alpha1.ReasonRestoreNotEnabled))
		Expect(h.get(ec).Status.Recovery).To(BeNil())
		Expect(callsLike(h.events.All(), "Warning "+v1alpha1.ReasonRestoreNotEnabled)).To(HaveLen(1), "one Event")

		h2 := newHarness()
		h = h2
		ec = lostMemoryCluster(true)
		h.reconcile(ec)
		Expect(conditionReason(h.get(ec), v1alpha1.ConditionTotalLoss)).To(Equal(v1alpha1.ReasonNoSnapshot))
		Expect(h.get(ec).Status.Recovery).To(BeNil())
		Expect(h.events.All()).To(ContainElement(ContainSubstring("Warning " + v1alpha1.ReasonNoSnapshot)))
		for _, m := range h.members() {
			Expect(m.DeletionTimestamp).To(BeNil())
			Expect(m.Status.MemberID).NotTo(BeEmpty())
		}
	})
})

// status.lastObserved, what tells how much a restore after total loss
// loses: refreshed at most once per Options.ObserveRevisionEvery.
var _ = Describe("lastObserved", func() {
	var h *harness
	ctx := context.Background()
	BeforeEach(func() { h = newHarness() })

	optedIn := func() *v1alpha1.EtcdCluster {
		GinkgoHelper()
		ec := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "ec", Namespace: h.ns},
			Spec: v1alpha1.EtcdClusterSpec{Version: "3.6.16", Recovery: &v1alpha1.RecoverySpec{RestoreOnTotalLoss: true},
				Storage: v1alpha1.StorageSpec{Medium: v1alpha1.StorageMediumMemory, Size: resource.MustParse("64Mi")}}}
		Expect(k8sClient.Create(ctx, ec)).To(Succeed())
		h.etcd.SetRevision(500)
		h.converge(ec, 3)
		Expect(h.get(ec).Status.LastObserved.Revision).To(BeEquivalentTo(500))
		h.etcd.SetRevision(600)
		return ec
	}

	It("is not refreshed sooner than observeRevisionEvery by default", func() {
		ec := optedIn()
		h.now = h.now.Add(observeRevisionEvery / 2)
		h.reconcile(ec)
		Expect(h.get(ec).Status.LastObserved.Revision).To(BeEquivalentTo(500))
		h.now = h.now.Add(observeRevisionEvery)
		h.reconcile(ec)
		Expect(h.get(ec).Status.LastObserved.Revision).To(BeEquivalentTo(600))
	})

	It("is refreshed at the pace Options.ObserveRevisionEvery sets", func() {
		h.r.Options.ObserveRevisionEvery = time.Second
		ec := optedIn()
		h.now = h.now.Add(time.Second)
		h.reconcile(ec)
		Expect(h.get(ec).Status.LastObserved.Revision).To(BeEquivalentTo(600))
	})
})
