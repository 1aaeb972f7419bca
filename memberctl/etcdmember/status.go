package etcdmember

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pvc"
)

func (s *run) setCondition(t string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&s.m.Status.Conditions, metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: msg, ObservedGeneration: s.m.Generation,
	})
}

func (s *run) setReady(ready bool, reason, msg string) {
	st := metav1.ConditionFalse
	if ready {
		st = metav1.ConditionTrue
	}
	s.setCondition(v1alpha1.ConditionReady, st, reason, msg)
}

// writeStatus writes status only when it changed: steady state makes no
// API writes. It is an Update with the read resourceVersion, so a
// concurrent change fails it rather than being overwritten.
func (s *run) writeStatus(ctx context.Context) error {
	s.m.Status.ObservedGeneration = s.m.Generation
	if equality.Semantic.DeepEqual(s.orig.Status, s.m.Status) {
		return nil
	}
	if err := s.cl.Client.Status().Update(ctx, s.m); err != nil {
		return err
	}
	s.orig = s.m.DeepCopy()
	return nil
}

// writeAndRequeue writes status and asks to be called again after d; a
// failed write is returned alone (with backoff), since controller-runtime
// ignores a requeue time that comes with an error.
func (s *run) writeAndRequeue(ctx context.Context, d time.Duration) (ctrl.Result, error) {
	if err := s.writeStatus(ctx); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: d}, nil
}

func (s *run) warn(reason, format string, args ...any) {
	s.cl.Recorder.Eventf(s.m, corev1.EventTypeWarning, reason, format, args...)
}

// syncPVC ensures the data claim; a claim owned by someone else is reported
// where the user looks (an Event and the Ready condition) and not touched.
func (s *run) syncPVC(ctx context.Context) (*corev1.PersistentVolumeClaim, error) {
	c, err := pvc.New(s.cl.Client).Sync(ctx, s.m)
	if errors.Is(err, component.ErrForeign) {
		s.warn("ForeignPVC", "%v", err)
		s.setReady(false, v1alpha1.ReasonWaitingForPod, err.Error())
		return nil, errors.Join(err, s.writeStatus(ctx))
	}
	if c != nil {
		s.m.Status.PVCName = c.Name
	}
	return c, err
}
