package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/memberctl/upgrade"
)

// Minor downgrades. etcd refuses a member older than its cluster version,
// so a roll one minor down (3.7 → 3.6, from 3.6 on) first enables etcd's
// downgrade (validate, then enable, towards the lower minor): etcd lowers
// the cluster version and rewrites every member's storage schema for it.
// Only once every member reports its storage on the lower minor is the
// first member rolled; the roll then goes as an upgrade does. etcd ends the
// downgrade by itself once every member runs the lower minor. A downgrade
// whose roll no longer wants it (spec.version set back, or another
// target) is cancelled, so the cluster version rises back to what runs.
// DowngradeEnabled records, in status, that this reconciler enabled one.

// downgradeMinor is the minor the roll takes members down to ("3.6"), or ""
// when no running member is one minor above the target.
func (p *pass) downgradeMinor(target string) string {
	if target == "" {
		return ""
	}
	for _, m := range p.members.running {
		if upgrade.IsMinorDowngrade(m.Status.Version, target) {
			return upgrade.MinorOf(target)
		}
	}
	return ""
}

// downgradeView is what the running members say of the downgrade.
type downgradeView struct {
	target  string // the enabled downgrade's minor, "" when none
	behind  string // a member whose storage is not on the minor yet
	storage string // its storage version
}

func (p *pass) readDowngrade(ctx context.Context, minor string) (downgradeView, error) {
	t, err := p.target(ctx, "")
	if err != nil {
		return downgradeView{}, err
	}
	var v downgradeView
	for _, m := range p.members.running {
		st, err := p.cl.Etcd.Status(ctx, t, etcd.MemberClientURL(m))
		if err != nil {
			return downgradeView{}, err
		}
		if st.DowngradeTarget != "" {
			v.target = upgrade.MinorOf(st.DowngradeTarget)
		}
		if minor != "" && v.behind == "" && upgrade.MinorOf(st.StorageVersion) != minor {
			v.behind, v.storage = m.Name, st.StorageVersion
		}
	}
	return v, nil
}

// downgradeReady enables etcd's downgrade before a minor downgrade's first
// member step and waits for the members' storage; true when the roll may
// take its step now.
func (p *pass) downgradeReady(ctx context.Context, target string) (bool, ctrl.Result) {
	minor := p.downgradeMinor(target)
	if minor == "" {
		return true, ctrl.Result{}
	}
	dg, ok := p.cl.Etcd.(etcd.Downgrader)
	if !ok {
		p.rollNote = "held: this manager's etcd client cannot drive etcd's downgrade API"
		return false, ctrl.Result{RequeueAfter: requeueMembers}
	}
	v, err := p.readDowngrade(ctx, minor)
	if err != nil {
		p.rollNote = "held: reading the members' downgrade state: " + err.Error()
		return false, ctrl.Result{RequeueAfter: requeueEtcd}
	}
	switch {
	case v.target == "":
		return false, p.enableDowngrade(ctx, dg, minor)
	case v.target != minor:
		p.rollNote = fmt.Sprintf("held: etcd's downgrade is enabled towards %s, not %s; cancelling it", v.target, minor)
		p.cancelDowngrade(ctx, dg, v.target)
		return false, ctrl.Result{RequeueAfter: requeueEtcd}
	case v.behind != "":
		// etcd rewrites the schema within seconds of the enable.
		p.rollNote = fmt.Sprintf("waiting for etcd to move member %s's storage (%s) to %s before the first member runs it", v.behind, v.storage, minor)
		return false, ctrl.Result{RequeueAfter: requeueEtcd}
	}
	return true, ctrl.Result{}
}

func (p *pass) enableDowngrade(ctx context.Context, dg etcd.Downgrader, minor string) ctrl.Result {
	t, err := p.target(ctx, "")
	if err == nil {
		err = dg.Downgrade(ctx, t, etcd.DowngradeValidate, minor)
	}
	if err == nil {
		err = dg.Downgrade(ctx, t, etcd.DowngradeEnable, minor)
	}
	if err != nil {
		p.rollNote = fmt.Sprintf("held: etcd refused a downgrade to %s: %v", minor, err)
		return ctrl.Result{RequeueAfter: requeueEtcd}
	}
	p.setCondition(v1alpha1.ConditionDowngradeEnabled, metav1.ConditionTrue, v1alpha1.ReasonDowngradeInProgress,
		fmt.Sprintf("etcd's downgrade to %s is enabled: the cluster version is %s and the members are rolled to it one at a time", minor, minor))
	p.event(corev1.EventTypeNormal, "DowngradeEnabled", "Enabled etcd's downgrade to %s before rolling the members to it", minor)
	p.rollNote = "enabled etcd's downgrade to " + minor
	return ctrl.Result{RequeueAfter: requeueEtcd}
}

// cancelDowngrade cancels the enabled downgrade; a failure is retried by
// the next pass, which still finds it enabled.
func (p *pass) cancelDowngrade(ctx context.Context, dg etcd.Downgrader, minor string) {
	t, err := p.target(ctx, "")
	if err == nil {
		err = dg.Downgrade(ctx, t, etcd.DowngradeCancel, minor)
	}
	if err != nil {
		p.rollNote = fmt.Sprintf("cancelling etcd's downgrade to %s failed, retrying: %v", minor, err)
		return
	}
	p.event(corev1.EventTypeNormal, "DowngradeCancelled", "Cancelled etcd's downgrade to %s: spec.version no longer asks for it", minor)
}

// settleDowngrade ends DowngradeEnabled once its downgrade is over: etcd
// finished it (every member on the lower minor), or the roll no longer
// wants it and it is cancelled. It reads etcd only while the condition is
// set, so a cluster that never downgrades pays nothing.
func (p *pass) settleDowngrade(ctx context.Context, target string) {
	if !apimeta.IsStatusConditionTrue(p.ec.Status.Conditions, v1alpha1.ConditionDowngradeEnabled) || !p.etcd.ok {
		return
	}
	minor := p.downgradeMinor(target)
	v, err := p.readDowngrade(ctx, "")
	if err != nil {
		return
	}
	if v.target != "" && v.target != minor {
		if dg, ok := p.cl.Etcd.(etcd.Downgrader); ok {
			p.cancelDowngrade(ctx, dg, v.target)
		}
		return
	}
	if v.target == "" {
		apimeta.RemoveStatusCondition(&p.ec.Status.Conditions, v1alpha1.ConditionDowngradeEnabled)
	}
}
