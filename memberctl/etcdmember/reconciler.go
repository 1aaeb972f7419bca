package etcdmember

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pod"
	"github.com/etcdfleet/etcdfleet/memberctl/datadirguard"
	"github.com/etcdfleet/etcdfleet/memberctl/replacement"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// Options tune the reconciler. Defaults live in DefaultOptions.
type Options struct {
	Policy replacement.Policy
	Pod    pod.BuildOptions
	// CrashLoopRestarts is the restart count from which a not-ready etcd
	// container counts as stuck.
	CrashLoopRestarts int32
	// Resync re-reads a healthy member this often to notice etcd-side
	// changes (version drift) that produce no Kubernetes event.
	Resync time.Duration
	// PausedRetry is how often a paused cluster's pending replacement is
	// looked at again.
	PausedRetry time.Duration
}

// DefaultOptions returns the defaults.
func DefaultOptions() Options {
	return Options{Policy: replacement.DefaultPolicy(), CrashLoopRestarts: 5, Resync: 5 * time.Minute, PausedRetry: 5 * time.Second,
		Pod: pod.BuildOptions{AgentImage: datadirguard.DefaultImage}}
}

// Reconciler reconciles EtcdMembers in any workload cluster.
type Reconciler struct {
	Clusters workload.Source
	Options  Options
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// run is the state of one reconcile.
type run struct {
	r    *Reconciler
	cl   *workload.Cluster
	m    *v1alpha1.EtcdMember
	orig *v1alpha1.EtcdMember
	now  time.Time
}

// Reconcile brings one EtcdMember of cluster clusterName towards its spec.
func (r *Reconciler) Reconcile(ctx context.Context, clusterName string, req types.NamespacedName) (ctrl.Result, error) {
	m := &v1alpha1.EtcdMember{}
	ctx, cl, done, err := workload.Open(ctx, r.Clusters, clusterName, req, m)
	defer done()
	if err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	s := &run{r: r, cl: cl, m: m, orig: m.DeepCopy(), now: now}
	if m.DeletionTimestamp != nil {
		return s.finalize(ctx)
	}
	if !controllerutil.ContainsFinalizer(m, v1alpha1.FinalizerMemberCleanup) {
		patch := client.MergeFrom(m.DeepCopy())
		controllerutil.AddFinalizer(m, v1alpha1.FinalizerMemberCleanup)
		if err := cl.Client.Patch(ctx, m, patch); err != nil {
			return ctrl.Result{}, err
		}
		s.orig = m.DeepCopy()
	}
	return s.reconcile(ctx)
}

func (s *run) reconcile(ctx context.Context) (ctrl.Result, error) {
	m := s.m
	if m.Spec.InitialCluster == "" {
		s.setReady(false, v1alpha1.ReasonWaitingForPod, "waiting for the cluster controller to set spec.initialCluster")
		return ctrl.Result{}, s.writeStatus(ctx)
	}
	if m.Spec.Dormant {
		return s.sleep(ctx)
	}
	p, err := s.pod(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	if p != nil && !pod.OwnedBy(p, m.UID) {
		s.warn("ForeignPod", "Pod %s exists but is not owned by this member; not touching it", p.Name)
		return ctrl.Result{}, fmt.Errorf("pod %s/%s is not owned by member %s", p.Namespace, p.Name, m.Name)
	}
	if p != nil && deletedByUs(m, p) {
		// The cache has not seen the delete that the last reconcile made
		// and followed with the successor Pod (recreateTerminalPod): the
		// deletion and creation events bring the next reconcile.
		return ctrl.Result{}, nil
	}
	switch {
	case isMemory(m) && m.Status.PodUID != "" && (p == nil || p.UID != m.Status.PodUID):
		return s.replaceLostMemoryMember(ctx, podGone)
	case isMemory(m) && p != nil && p.DeletionTimestamp == nil && dataDirLost(p):
		return s.replaceLostMemoryMember(ctx, dataDirWiped)
	case p != nil && pod.IsTerminal(p) && p.DeletionTimestamp == nil:
		return s.replaceTerminalPod(ctx, p)
	case p != nil && needsRoll(p, m):
		return s.rollMember(ctx, p)
	case p == nil:
		if ran, err := s.memoryMemberRan(ctx); err != nil || ran {
			if err != nil {
				return ctrl.Result{}, err
			}
			return s.replaceLostMemoryMember(ctx, podGone)
		}
		if lost, err := s.claimLost(ctx); err != nil || lost {
			if err != nil {
				return ctrl.Result{}, err
			}
			return s.replaceClaimLostMember(ctx)
		}
		return s.createPod(ctx, pod.Syncer.Sync)
	}
	if left, on, err := s.nodeLossLeft(ctx, p); err != nil || (on && left <= 0) {
		if err != nil {
			return ctrl.Result{}, err
		}
		return s.replaceNodeLostMember(ctx, p)
	}
	return s.observe(ctx, p)
}

// pod returns the member's Pod from the cache, or nil.
func (s *run) pod(ctx context.Context) (*corev1.Pod, error) {
	p := &corev1.Pod{}
	err := s.cl.Client.Get(ctx, types.NamespacedName{Namespace: s.m.Namespace, Name: s.m.Name}, p)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return p, err
}

// memoryMemberRan reports whether a memory member without a Pod already
// ran one, asking the apiserver: the cached member can predate the status
// write that recorded its Pod's UID (the terminal-Pod flow records it just
// before the delete), and a Pod created from that stale view would start
// the old member ID on an empty tmpfs. On true, s.m is the live member.
func (s *run) memoryMemberRan(ctx context.Context) (bool, error) {
	if !isMemory(s.m) {
		return false, nil
	}
	live := &v1alpha1.EtcdMember{}
	if err := s.cl.Reader.Get(ctx, client.ObjectKeyFromObject(s.m), live); err != nil {
		return false, err
	}
	// A member ID is discovered from a running Pod: with one, the member
	// ran even if its Pod's UID was never recorded.
	if live.Status.PodUID == "" && live.Status.MemberID == "" {
		return false, nil
	}
	s.m, s.orig = live, live.DeepCopy()
	return true, nil
}

// parent returns the member's EtcdCluster, or nil when it is gone.
func (s *run) parent(ctx context.Context) (*v1alpha1.EtcdCluster, error) {
	ec := &v1alpha1.EtcdCluster{}
	err := s.cl.Client.Get(ctx, types.NamespacedName{Namespace: s.m.Namespace, Name: s.m.Spec.ClusterName}, ec)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return ec, err
}

// podCreator is how createPod makes the Pod: pod.Syncer.Sync, or
// pod.Syncer.Recreate right after this reconcile deleted the old one.
type podCreator func(pod.Syncer, context.Context, *v1alpha1.EtcdMember) (*corev1.Pod, error)

// createPod creates the PVC and the Pod with create, and records the new
// Pod's UID at once: a memory member's pod-loss check depends on it.
// Recreate does not ask the cache whether the Pod exists (it may still
// hold the one just deleted); if the old Pod is in fact still there, it
// creates nothing and the old Pod's deletion event brings the next
// reconcile.
func (s *run) createPod(ctx context.Context, create podCreator) (ctrl.Result, error) {
	ec, err := s.parent(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	if _, err := s.syncPVC(ctx); err != nil {
		return ctrl.Result{}, err
	}
	opts := s.r.Options.Pod
	opts.ClusterFormed = ec != nil && ec.Status.ClusterID != ""
	log.FromContext(ctx).Info("Creating the member's Pod", "memory", isMemory(s.m), "memberID", s.m.Status.MemberID,
		"resourceVersion", s.m.ResourceVersion)
	p, err := create(pod.New(s.cl.Client, opts), ctx, s.m)
	if err != nil {
		s.setReady(false, v1alpha1.ReasonWaitingForPod, "cannot create the Pod: "+err.Error())
		return ctrl.Result{}, firstErr(err, s.writeStatus(ctx))
	}
	if p == nil {
		return ctrl.Result{}, nil // Recreate: the old Pod outlives its delete
	}
	s.m.Status.PodName, s.m.Status.PodUID = p.Name, p.UID
	s.m.Status.Version = "" // read from the new Pod's etcd once it is ready
	s.m.Status.TemplateHash = pod.RunningTemplateHash(p)
	s.setReady(false, v1alpha1.ReasonPodNotReady, "pod phase: Pending")
	return ctrl.Result{}, s.writeStatus(ctx)
}

// sleep keeps a dormant member's PVC and removes its Pod.
func (s *run) sleep(ctx context.Context) (ctrl.Result, error) {
	p, err := s.pod(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	if p != nil && p.DeletionTimestamp == nil && pod.OwnedBy(p, s.m.UID) {
		if err := s.cl.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID}); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
	}
	s.m.Status.PodName, s.m.Status.PodUID = "", ""
	s.setReady(false, v1alpha1.ReasonPaused, "member is dormant: the cluster is scaled to 0; data is kept")
	return ctrl.Result{}, s.writeStatus(ctx)
}

func isMemory(m *v1alpha1.EtcdMember) bool {
	return m.Spec.Storage.Medium == v1alpha1.StorageMediumMemory
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
