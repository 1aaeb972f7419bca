package bench

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// StatusRecorder records, from the apiserver's watch, when each member's
// status first read Ready for a given Pod and when each EtcdCluster's
// status last turned fully Available. With the PodRecorder's Ready it
// splits the status's own lag into its two writers: the member reconciler
// (Pod Ready → EtcdMember Ready) and the cluster reconciler (last
// EtcdMember Ready → EtcdCluster Available).
type StatusRecorder struct {
	mu sync.Mutex
	// memberReady: member name and Pod UID → first seen Ready for it.
	memberReady map[memberPod]time.Time
	// available: EtcdCluster name → when it last went from anything else
	// to Available with every member ready.
	available map[string]time.Time
	wasAvail  map[string]bool
	err       error
	stop      context.CancelFunc
	done      sync.WaitGroup
}

type memberPod struct {
	name string
	pod  types.UID
}

// RecordStatus starts recording the EtcdMembers and EtcdClusters of ns.
// A watch that ends is not resumed: it lasts the apiserver's request
// timeout (minutes), longer than a heal; Err reports an early end.
func RecordStatus(ctx context.Context, c client.WithWatch, ns string) (*StatusRecorder, error) {
	ctx, cancel := context.WithCancel(ctx)
	r := &StatusRecorder{memberReady: map[memberPod]time.Time{}, available: map[string]time.Time{}, wasAvail: map[string]bool{}, stop: cancel}
	mw, err := c.Watch(ctx, &v1alpha1.EtcdMemberList{}, client.InNamespace(ns))
	if err != nil {
		cancel()
		return nil, err
	}
	cw, err := c.Watch(ctx, &v1alpha1.EtcdClusterList{}, client.InNamespace(ns))
	if err != nil {
		mw.Stop()
		cancel()
		return nil, err
	}
	r.done.Add(2)
	go r.consume(ctx, mw)
	go r.consume(ctx, cw)
	return r, nil
}

func (r *StatusRecorder) consume(ctx context.Context, w watch.Interface) {
	defer r.done.Done()
	defer w.Stop()
	for ev := range w.ResultChan() {
		now := time.Now()
		r.mu.Lock()
		switch o := ev.Object.(type) {
		case *v1alpha1.EtcdMember:
			k := memberPod{o.Name, o.Status.PodUID}
			if _, seen := r.memberReady[k]; !seen && meta.IsStatusConditionTrue(o.Status.Conditions, v1alpha1.ConditionReady) {
				r.memberReady[k] = now
			}
		case *v1alpha1.EtcdCluster:
			avail := meta.IsStatusConditionTrue(o.Status.Conditions, v1alpha1.ConditionAvailable) &&
				o.Spec.Replicas != nil && o.Status.ReadyMembers == *o.Spec.Replicas
			if avail && !r.wasAvail[o.Name] {
				r.available[o.Name] = now
			}
			r.wasAvail[o.Name] = avail
		}
		r.mu.Unlock()
	}
	if ctx.Err() == nil {
		r.mu.Lock()
		r.err = context.Canceled // the watch ended before Stop
		r.mu.Unlock()
	}
}

// MemberReady is when member name's status first read Ready for Pod pod.
func (r *StatusRecorder) MemberReady(name string, pod types.UID) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.memberReady[memberPod{name, pod}]
	return t, ok
}

// Available is when EtcdCluster name last turned Available with every
// member ready.
func (r *StatusRecorder) Available(name string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.available[name]
	return t, ok
}

// Err reports a watch that ended before Stop.
func (r *StatusRecorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Stop ends the watches.
func (r *StatusRecorder) Stop() {
	r.stop()
	r.done.Wait()
}
