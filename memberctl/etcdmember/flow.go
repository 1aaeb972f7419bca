package etcdmember

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
	"github.com/etcdfleet/etcdfleet/memberctl/replacement"
)

// job is one replacement of any kind (terminal Pod, crash loop, pod loss);
// replace carries every kind through the same steps.
type job struct {
	action gate.Action
	cause  replacement.Cause
	// podUID is the Pod being replaced: the key that makes a replacement
	// count once however often its removal has to be retried.
	podUID types.UID
	// died says what happened, for conditions and Events.
	died string
	// check is the safety check made just before a token is asked for.
	check func(ctx context.Context) (safety, error)
	// remove is the UID-guarded delete that carries the replacement out.
	remove func(ctx context.Context) error
	// announce emits the Event, once, after remove succeeded.
	announce func(total int32)
	// then, if set, runs after announce in the same reconcile (the
	// terminal Pod's successor, created without waiting for the deletion
	// to reach the cache).
	then func(ctx context.Context) (ctrl.Result, error)
}

// safety is a job's check answer.
type safety struct {
	ok bool
	// why it must wait, when not ok.
	why string
	// quorumLost is the real quorum state, which orders the gate's queue.
	quorumLost bool
	// quorum is what quorumLost was read from, passed on to the gate
	// (gate.Request.Quorum); nil where the check did not count voters.
	quorum *gate.QuorumView
}

func safe(quorumLost bool) (safety, error) { return safety{ok: true, quorumLost: quorumLost}, nil }

// ledger is where a kind of replacement is counted: the member's own
// status for terminal Pods, the EtcdCluster's for the kinds that remove the
// member (its successor starts with an empty status).
type ledger interface {
	record() *v1alpha1.ReplacementStatus
	// heldBy names another member of the same etcd cluster whose removal
	// is in flight, or "" when this job may go ahead.
	heldBy() string
	// commit writes st, and for member removals claims the etcd cluster's
	// lease, in ONE status write that fails on a concurrent change.
	commit(ctx context.Context, st *v1alpha1.ReplacementStatus, j job) error
	// exhausted surfaces the reached cap where the user looks.
	exhausted(ctx context.Context, msg string) error
	// capLifted clears ReplacementsExhausted before commit writes it.
	capLifted(msg string)
	// scope names what the cap is counted on, for messages.
	scope() string
}

// replace is the one replacement flow: paused → counted once → policy
// (cap, backoff) → one member removal per etcd cluster → safety check →
// shared gate → record → UID-guarded delete → Event. It never blocks a
// worker: every wait is a requeue with the reason in the Ready condition.
func (s *run) replace(ctx context.Context, j job, l ledger) (ctrl.Result, error) {
	if s.cl.IsPaused() {
		return s.waitFor(ctx, j.died+"; replacement paused for this cluster", s.r.Options.PausedRetry)
	}
	st := l.record()
	if st != nil && st.LastPodUID == j.podUID {
		return s.retryRemoval(ctx, j, l)
	}
	replaceNow := s.m.Annotations[v1alpha1.AnnotationReplaceNow]
	v := s.r.Options.Policy.Decide(s.now, st, j.cause, replaceNow)
	switch {
	case v.Exhausted:
		return s.exhausted(ctx, j, l)
	case v.Wait > 0:
		return s.waitFor(ctx, fmt.Sprintf("%s; replacement backing off for %s", j.died, v.Wait.Round(100*time.Millisecond)), v.Wait)
	}
	sv, res, wait, err := s.mayProceed(ctx, j, l)
	if wait || err != nil {
		return res, err
	}
	req := s.gateRequest(j.action, sv.quorumLost)
	if sv.quorumLost {
		req.Quorum = sv.quorum
	}
	d := s.cl.Gate.Reserve(ctx, req)
	if d.Delay > 0 {
		throttled.WithLabelValues(s.cl.Name).Inc()
		return s.waitFor(ctx, j.died+"; waiting for the shared replacement rate limiter", d.Delay)
	}
	if v.ReplaceNow {
		l.capLifted("replace-now annotation " + replaceNow + " allowed one more replacement")
	} else if !j.cause.Shutdown {
		l.capLifted("a replacement counted by the cap was allowed again: the cap window ended")
	}
	rec := s.r.Options.Policy.Record(s.now, st, j.cause, j.podUID, replaceNow)
	// Record first: if this write fails, nothing was removed and the next
	// reconcile starts over. Once it is written, the replacement is counted
	// and its token spent; a failed delete is only retried.
	if err := l.commit(ctx, rec, j); err != nil {
		d.Cancel()
		return ctrl.Result{}, err
	}
	return s.carryOut(ctx, j, rec.Total)
}

// retryRemoval finishes a replacement already recorded (its delete failed,
// or the manager restarted before it): no Decide, no token, no second
// count. The lease is claimed again if it was released meanwhile, and the
// safety check is repeated, because time has passed since it was made.
func (s *run) retryRemoval(ctx context.Context, j job, l ledger) (ctrl.Result, error) {
	if _, res, wait, err := s.mayProceed(ctx, j, l); wait || err != nil {
		return res, err
	}
	st := l.record()
	if err := l.commit(ctx, st, j); err != nil {
		return ctrl.Result{}, err
	}
	return s.carryOut(ctx, j, st.Total)
}

// mayProceed checks the etcd cluster's lease and the job's safety; wait
// reports that the caller must return res.
func (s *run) mayProceed(ctx context.Context, j job, l ledger) (sv safety, res ctrl.Result, wait bool, err error) {
	if h := l.heldBy(); h != "" {
		res, err = s.waitFor(ctx, j.died+"; waiting: member "+h+" of the same etcd cluster is being replaced, one at a time", s.r.Options.PausedRetry)
		return sv, res, true, err
	}
	if sv, err = j.check(ctx); err != nil {
		return sv, ctrl.Result{}, true, err
	}
	if !sv.ok {
		res, err = s.waitFor(ctx, j.died+"; not replacing it: "+sv.why, 10*s.r.Options.PausedRetry)
		return sv, res, true, err
	}
	return sv, ctrl.Result{}, false, nil
}

// carryOut deletes and announces. A failed delete keeps the token spent:
// the replacement is recorded, and the retry neither asks nor counts again.
func (s *run) carryOut(ctx context.Context, j job, total int32) (ctrl.Result, error) {
	if err := j.remove(ctx); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	replacements.WithLabelValues(s.cl.Name, string(j.action), orNone(j.cause.Reason)).Inc()
	j.announce(total)
	if j.then != nil {
		return j.then(ctx)
	}
	// No requeue: the deletion event brings the next reconcile at once.
	return ctrl.Result{}, nil
}

// exhausted stops churning: the cap of this kind of replacement is reached.
func (s *run) exhausted(ctx context.Context, j job, l ledger) (ctrl.Result, error) {
	p, st := s.r.Options.Policy, l.record()
	msg := fmt.Sprintf("%s; %d replacements for causes other than node shutdown within %s: not replacing again until the %s is Ready for %s or the %s annotation is set to a new value",
		j.died, st.CappedCount, p.Window, l.scope(), p.HealthyReset, v1alpha1.AnnotationReplaceNow)
	if err := l.exhausted(ctx, msg); err != nil {
		return ctrl.Result{}, err
	}
	// The cap lifts when the window ends; look again then.
	after := p.Window
	if st.WindowStart != nil {
		after = st.WindowStart.Add(p.Window).Sub(s.now)
	}
	return s.waitFor(ctx, j.died+"; replacements exhausted", after)
}

// waitFor reports why the replacement waits and requeues after d.
func (s *run) waitFor(ctx context.Context, msg string, d time.Duration) (ctrl.Result, error) {
	s.setReady(false, v1alpha1.ReasonPodNotReady, msg)
	return s.writeAndRequeue(ctx, d)
}

func (s *run) gateRequest(a gate.Action, quorumLost bool) gate.Request {
	return gate.Request{Cluster: s.cl.Name, Namespace: s.m.Namespace, EtcdCluster: s.m.Spec.ClusterName,
		Member: s.m.Name, Action: a, QuorumLost: quorumLost}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
