package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pdb"
	"github.com/etcdfleet/etcdfleet/memberctl/component/service"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdsnapshot"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
	"github.com/etcdfleet/etcdfleet/memberctl/replacement"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// Requeue cadence. Everything that waits on a Kubernetes object (a member
// becoming Ready, a Pod appearing) is woken by the EtcdMember watch; the
// timed requeues are only a safety net, except while waiting on etcd itself,
// which produces no event.
const (
	// requeueEtcd: waiting on etcd (a learner catching up, a seed forming,
	// a member being removed by the finalizer, a fresh leader).
	requeueEtcd = 5 * time.Second
	// requeueAddUnhealthy: etcd refused to add a member until its voters
	// have been connected to the leader for 5 s (see completePending).
	requeueAddUnhealthy = time.Second
	// requeueUnreachable: etcd did not answer; poll it at this pace.
	requeueUnreachable = 10 * time.Second
	// requeueMembers: waiting for the member reconciler (event-driven).
	requeueMembers = 30 * time.Second
	// requeueSteady: the longest a cluster goes unprobed.
	requeueSteady = 60 * time.Second
	// requeueStale: the cache lags a write of ours; look again soon.
	requeueStale = time.Second
)

// Reconciler reconciles EtcdClusters in any workload cluster.
type Reconciler struct {
	// Clusters hands back the workload cluster a request belongs to.
	Clusters workload.Source
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Policy is the member replacement policy; its HealthyReset lifts the
	// cluster-wide crash-loop and pod-loss backoff and cap. The zero value
	// means replacement.DefaultPolicy().
	Policy replacement.Policy
	// Snapshot builds the Job that checks a snapshot before a restore
	// after total loss (its image is the agent's); the zero value means
	// etcdsnapshot.DefaultOptions().
	Snapshot etcdsnapshot.Options
	// Options tune the paces of this reconciler's looks at etcd; the zero
	// value means DefaultOptions().
	Options Options

	// health paces the looks at etcd's own health per cluster.
	health healthClock
}

func (r *Reconciler) policy() replacement.Policy {
	if r.Policy.Cap == 0 {
		return replacement.DefaultPolicy()
	}
	return r.Policy
}

// pass is the state of one reconcile of one EtcdCluster.
type pass struct {
	cl   *workload.Cluster
	ec   *v1alpha1.EtcdCluster // status is rebuilt in place
	orig *v1alpha1.EtcdCluster
	now  time.Time
	// snapshotOptions build the check of a snapshot to restore.
	snapshotOptions etcdsnapshot.Options
	// o is the Reconciler's Options, defaults filled in.
	o Options

	members *memberSet // nil until listed
	// versions: what the running members report, judged against
	// spec.version; set with members.
	versions versionState
	etcd     etcdView
	// discovered: the cluster ID was latched in this pass.
	discovered bool
	// terminal is BootstrapFailed or DeadlineExceeded while locked.
	terminal string
	// majorityLost says which members are provably lost, a majority, and
	// which survive, while etcd does not answer (majorityLoss).
	majorityLost string
	// majority is what majorityLoss found, for a recovery from a survivor.
	majority *majorityState
	// tlsSecrets is the hash of the TLS Secrets' data read in this pass;
	// "" without TLS or when they could not be read (tlssecrets.go).
	tlsSecrets string
	// rollNote says what a version roll did or waits for in this pass.
	rollNote string
	// health paces observeHealth (the Reconciler's).
	health *healthClock
}

// Reconcile brings one EtcdCluster of cluster clusterName towards its spec.
// Whatever happens to etcd, the status is rebuilt from what was observed and
// written when it changed, before any error is returned.
func (r *Reconciler) Reconcile(ctx context.Context, clusterName string, req types.NamespacedName) (ctrl.Result, error) {
	ec := &v1alpha1.EtcdCluster{}
	ctx, cl, done, err := workload.Open(ctx, r.Clusters, clusterName, req, ec)
	defer done()
	if err != nil {
		if apierrors.IsNotFound(err) {
			cl.Etcd.Forget(etcd.TargetKey(cl.Name, req.Namespace, req.Name))
			cl.RolloutsOrAllowAll().Leave(gate.Roll{Cluster: cl.Name, Namespace: req.Namespace, EtcdCluster: req.Name})
			r.health.forget(etcd.TargetKey(cl.Name, req.Namespace, req.Name))
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if ec.DeletionTimestamp != nil {
		// Owner references remove members, Services and the PDB; the
		// members' finalizers skip MemberRemove for a cluster going away.
		cl.Etcd.Forget(etcd.TargetKey(cl.Name, req.Namespace, req.Name))
		cl.RolloutsOrAllowAll().Leave(gate.Roll{Cluster: cl.Name, Namespace: req.Namespace, EtcdCluster: req.Name})
		return ctrl.Result{}, nil
	}

	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	p := &pass{cl: cl, ec: ec, orig: ec.DeepCopy(), now: now, health: &r.health, snapshotOptions: r.Snapshot,
		o: r.Options.withDefaults()}
	if p.snapshotOptions.Image == "" {
		p.snapshotOptions = etcdsnapshot.DefaultOptions()
	}
	res, err := p.run(ctx)
	if p.members != nil {
		p.buildStatus()
		settled, serr := p.settleReplacement(ctx, r.policy())
		res = shortest(res, settled)
		err = errors.Join(err, serr, p.writeStatus(ctx))
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return shortest(res, ctrl.Result{RequeueAfter: requeueSteady}), nil
}

// run observes the cluster, takes at most one membership step, and leaves
// the status to be built by the caller. It returns early only when the
// members cannot be listed, the one case with nothing truthful to report.
func (p *pass) run(ctx context.Context) (ctrl.Result, error) {
	var errs []error
	for _, svc := range service.Syncers(p.cl.Client) {
		if _, err := svc.Sync(ctx, p.ec); err != nil {
			errs = append(errs, fmt.Errorf("services: %w", err))
		}
	}
	if err := p.listMembers(ctx); err != nil {
		return ctrl.Result{}, errors.Join(append(errs, err)...)
	}

	st := &p.ec.Status
	if st.ClusterToken == "" {
		st.ClusterToken = clusterToken(p.ec)
	}
	if st.Observed == nil {
		p.lockSnapshot(v1alpha1.ReasonInitialSnapshot)
		// Latch the snapshot and the token before creating anything from them.
		return ctrl.Result{RequeueAfter: requeueStale}, errors.Join(errs...)
	}

	p.readTLSSecrets(ctx)
	p.probe(ctx)
	p.observeRevision(ctx)
	p.observeHealth(ctx, p.health)
	p.applyLock()

	// A restore after total loss goes ahead even when a step was stuck
	// (terminal): the cluster it was stuck on is gone.
	res, recovering, err := p.recover(ctx)
	errs = append(errs, err)
	if !recovering && err == nil && p.terminal == "" {
		res, err = p.step(ctx)
		errs = append(errs, err)
	}
	errs = append(errs, p.syncVoters(ctx))
	if _, err := pdb.New(p.cl.Client, p.voterCount()).Sync(ctx, p.ec); err != nil {
		// The budget only guards voluntary disruptions; never block on it.
		log.FromContext(ctx).Error(err, "PodDisruptionBudget not synced")
	}
	if !p.etcd.ok && p.etcd.tried {
		res = shortest(res, ctrl.Result{RequeueAfter: requeueUnreachable})
	}
	if len(mountedSecrets(p.ec.Spec.TLS)) > 0 {
		// No watch tells of a Secret's change: look again (tlssecrets.go).
		res = shortest(res, ctrl.Result{RequeueAfter: p.o.TLSSecretsEvery})
	}
	return res, errors.Join(errs...)
}

// step takes at most one membership step; the order follows the reference
// operator with one in-flight change at a time.
func (p *pass) step(ctx context.Context) (ctrl.Result, error) {
	ms, desired := p.members, p.ec.Status.Observed.Replicas
	if len(ms.deleting) > 0 {
		// A finalizer is removing a member from etcd: one change at a time.
		return ctrl.Result{RequeueAfter: requeueEtcd}, nil
	}
	if p.ec.Status.ClusterID == "" {
		if desired == 0 {
			return ctrl.Result{}, nil // a cluster created at 0 never bootstraps
		}
		if len(ms.running) == 0 || (ms.seed != nil && ms.seed.Spec.InitialCluster == "") {
			return p.bootstrap(ctx)
		}
		return p.awaitSeed(), nil
	}
	if m := ms.pending(); m != nil {
		return p.completePending(ctx, m)
	}
	current := int32(len(ms.running))
	switch {
	case current < desired:
		return p.scaleUp(ctx)
	case current > desired:
		return p.scaleDown(ctx)
	default:
		if res, done, err := p.promoteReady(ctx); done || err != nil {
			return res, err
		}
		return p.roll(ctx)
	}
}

// writeStatus writes the rebuilt status when it differs from what was read.
// The update carries the resourceVersion read, so a stale cache or a
// concurrent writer yields a conflict and a retry, never a lost latch.
func (p *pass) writeStatus(ctx context.Context) error {
	if equality.Semantic.DeepEqual(p.orig.Status, p.ec.Status) {
		return nil
	}
	if err := p.cl.Client.Status().Update(ctx, p.ec); err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	return nil
}

// event records an Event on the EtcdCluster.
func (p *pass) event(eventType, reason, format string, args ...any) {
	if p.cl.Recorder != nil {
		p.cl.Recorder.Eventf(p.ec, eventType, reason, format, args...)
	}
}

// shortest merges two results: the sooner non-zero requeue wins.
func shortest(a, b ctrl.Result) ctrl.Result {
	switch {
	case a.RequeueAfter == 0:
		return b
	case b.RequeueAfter == 0 || a.RequeueAfter <= b.RequeueAfter:
		return a
	default:
		return b
	}
}

// clusterToken is etcd's --initial-cluster-token: unique per incarnation,
// so members of a deleted and recreated cluster of the same name never join.
func clusterToken(ec *v1alpha1.EtcdCluster) string {
	return fmt.Sprintf("%s-%s-%s", ec.Namespace, ec.Name, ec.UID)
}
