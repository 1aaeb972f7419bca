package etcdcluster

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pod"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdbackup"
)

// The snapshot before a roll. When spec.backup is set, no member is rolled
// onto a target before an EtcdSnapshot of the cluster taken for that
// target is Complete: a roll restarts every member, and a bad release or
// flag is then recoverable from data taken just before it. The snapshot is
// named after the cluster and the target, so a roll resumed after a
// manager restart finds its snapshot instead of taking another, and a new
// target gets its own. It is stored where spec.backup stores its scheduled
// ones, but is not one of them: retention does not prune it. A failed
// snapshot holds the roll (PreRollSnapshot False SnapshotFailed, a Warning
// Event) until it is deleted, which takes another, or spec.backup is
// removed. The EtcdCluster does not watch EtcdSnapshots, so the wait polls.

// preRollSnapshotName is <cluster>-preroll-<hash of the cluster's UID and
// the target>, cut to the EtcdSnapshot's 52 characters (the hash keeps two
// long cluster names apart).
func preRollSnapshotName(ec *v1alpha1.EtcdCluster, t rollTarget) string {
	h := fnv.New32a()
	_, _ = fmt.Fprintf(h, "%s/%s/%s", ec.UID, t.version, pod.TemplateHash(&t.template))
	suffix := fmt.Sprintf("-preroll-%08x", h.Sum32())
	name := ec.Name
	if len(name)+len(suffix) > 52 {
		name = strings.TrimRight(name[:52-len(suffix)], "-")
	}
	return name + suffix
}

// preRollSnapshot reports whether the roll may go ahead: no spec.backup, or
// its snapshot for this target is Complete. Otherwise it takes the
// snapshot or waits for it, saying why in p.rollNote and PreRollSnapshot.
func (p *pass) preRollSnapshot(ctx context.Context, plan rollPlan) (bool, ctrl.Result, error) {
	if p.ec.Spec.Backup == nil {
		return true, ctrl.Result{}, nil
	}
	name := preRollSnapshotName(p.ec, plan.target)
	s := &v1alpha1.EtcdSnapshot{}
	err := p.cl.Client.Get(ctx, types.NamespacedName{Namespace: p.ec.Namespace, Name: name}, s)
	switch {
	case apierrors.IsNotFound(err):
		return false, ctrl.Result{RequeueAfter: requeueEtcd}, p.takePreRollSnapshot(ctx, name, plan)
	case err != nil:
		return false, ctrl.Result{}, fmt.Errorf("get the pre-roll EtcdSnapshot %s: %w", name, err)
	}
	switch s.Status.Phase {
	case v1alpha1.SnapshotComplete:
		rev := int64(0)
		if s.Status.Artifact != nil {
			rev = s.Status.Artifact.Revision
		}
		p.setCondition(v1alpha1.ConditionPreRollSnapshot, metav1.ConditionTrue, v1alpha1.ReasonSnapshotTaken,
			fmt.Sprintf("EtcdSnapshot %s (revision %d) was taken before rolling onto %s", name, rev, plan.onWhat()))
		return true, ctrl.Result{}, nil
	case v1alpha1.SnapshotFailed:
		why := "it failed"
		if c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady); c != nil {
			why = c.Reason + ": " + c.Message
		}
		msg := fmt.Sprintf("the EtcdSnapshot %s taken before rolling onto %s failed (%s); no member is rolled: "+
			"delete it to take another, or remove spec.backup to roll without one", name, plan.onWhat(), why)
		prev := apimeta.FindStatusCondition(p.ec.Status.Conditions, v1alpha1.ConditionPreRollSnapshot)
		if prev == nil || prev.Message != msg {
			p.event(corev1.EventTypeWarning, "PreRollSnapshotFailed", "%s", msg)
		}
		p.setCondition(v1alpha1.ConditionPreRollSnapshot, metav1.ConditionFalse, v1alpha1.ReasonSnapshotFailed, msg)
		p.rollNote = "held: the snapshot taken before the roll failed; see PreRollSnapshot"
		return false, ctrl.Result{RequeueAfter: requeueSteady}, nil
	}
	p.waitingForSnapshot(name, plan)
	return false, ctrl.Result{RequeueAfter: requeueEtcd}, nil
}

// takePreRollSnapshot creates the snapshot of this roll.
func (p *pass) takePreRollSnapshot(ctx context.Context, name string, plan rollPlan) error {
	s, err := etcdbackup.NewSnapshot(p.ec, name, p.cl.Client.Scheme())
	if err != nil {
		return err
	}
	err = p.cl.Client.Create(ctx, s)
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the pre-roll EtcdSnapshot %s: %w", name, err)
	}
	if err == nil {
		p.event(corev1.EventTypeNormal, "PreRollSnapshot", "Created EtcdSnapshot %s before rolling onto %s", name, plan.onWhat())
	}
	p.waitingForSnapshot(name, plan)
	return nil
}

func (p *pass) waitingForSnapshot(name string, plan rollPlan) {
	p.setCondition(v1alpha1.ConditionPreRollSnapshot, metav1.ConditionFalse, v1alpha1.ReasonTakingSnapshot,
		fmt.Sprintf("taking EtcdSnapshot %s before rolling onto %s", name, plan.onWhat()))
	p.rollNote = "waiting for EtcdSnapshot " + name + ", taken before the roll (spec.backup is set)"
}
