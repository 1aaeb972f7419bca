package app

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/etcdfleet/etcdfleet/memberctl/operator"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// registry keeps one workload.Cluster per engaged cluster. It is the
// reconcilers' workload.Source and is multicluster-aware: the manager calls
// Engage for every cluster the provider engages, with a context that ends
// when the cluster is disengaged.
type registry struct {
	newCluster func(ctx context.Context, name string, cl cluster.Cluster) (*workload.Cluster, io.Closer, error)
	onGone     func(name string)
	// known reports whether the provider still has the cluster: a request
	// for a cluster the provider has but the registry not yet is retried,
	// one for a cluster that is gone is dropped.
	known func(name string) bool
	log   logr.Logger

	mu       sync.RWMutex
	clusters map[string]*entry
}

type entry struct {
	cl     *workload.Cluster
	src    cluster.Cluster
	closer io.Closer
}

var _ multicluster.Aware = (*registry)(nil)
var _ workload.Source = (*registry)(nil)

// Engage implements multicluster.Aware. It does no I/O, so it never blocks.
func (r *registry) Engage(ctx context.Context, clusterName multicluster.ClusterName, cl cluster.Cluster) error {
	name := string(clusterName)
	r.mu.Lock()
	if old := r.clusters[name]; old != nil && old.src == cl {
		r.mu.Unlock()
		return nil
	}
	r.mu.Unlock()
	wc, closer, err := r.newCluster(ctx, name, cl)
	if err != nil {
		return fmt.Errorf("cluster %s: %w", name, err)
	}
	e := &entry{cl: wc, src: cl, closer: closer}
	r.mu.Lock()
	old := r.clusters[name]
	r.clusters[name] = e
	r.mu.Unlock()
	if old != nil {
		_ = old.closer.Close()
	}
	r.log.Info("engaged workload cluster", "cluster", name)
	context.AfterFunc(ctx, func() { r.release(name, e) })
	return nil
}

// release forgets a disengaged cluster, unless it was re-engaged meanwhile.
func (r *registry) release(name string, e *entry) {
	r.mu.Lock()
	if r.clusters[name] != e {
		r.mu.Unlock()
		_ = e.closer.Close()
		return
	}
	delete(r.clusters, name)
	r.mu.Unlock()
	_ = e.closer.Close()
	operator.ForgetCluster(name)
	if r.onGone != nil {
		r.onGone(name)
	}
	r.log.Info("disengaged workload cluster", "cluster", name)
}

// Cluster implements workload.Source.
func (r *registry) Cluster(_ context.Context, name string) (*workload.Cluster, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e := r.clusters[name]
	if e == nil {
		if r.known != nil && r.known(name) {
			return nil, fmt.Errorf("cluster %q is being engaged", name)
		}
		return nil, fmt.Errorf("cluster %q: %w", name, multicluster.ErrClusterNotFound)
	}
	return e.cl, nil
}

// Start implements manager.Runnable: the registry only reacts to Engage.
func (r *registry) Start(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// NeedLeaderElection: engaged clusters are acted on by the leader only.
func (r *registry) NeedLeaderElection() bool { return true }

// clusterConfig builds the operator's view of one engaged cluster. The
// Recorder is left to operator.NewCluster, whose lean one suits a fleet.
func clusterConfig(name string, cl cluster.Cluster, ctx context.Context) operator.ClusterConfig {
	return operator.ClusterConfig{
		Name: name, REST: cl.GetConfig(), Client: cl.GetClient(), Reader: cl.GetAPIReader(), Context: ctx,
	}
}
