package dashboard

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
)

// syncCluster recomputes one cluster and makes at most one write for its
// FleetCluster: create it, fix its owner reference, or update its status.
func (w *Writer) syncCluster(ctx context.Context, key string, now time.Time) reconcile.Result {
	info, ok := w.src.Cluster(key)
	if !ok || info.Name == "" || info.Namespace == "" {
		// Unregistered: the Fleet drops it, and its FleetCluster is an
		// orphan now.
		if _, known := w.latest[key]; known {
			delete(w.latest, key)
			forgetCluster(key)
			w.enqueue(fleetRequest)
		}
		w.enqueue(orphansRequest)
		return reconcile.Result{}
	}
	if info.OwnedElsewhere {
		w.disown(key)
		return reconcile.Result{}
	}
	nn := types.NamespacedName{Namespace: info.Namespace, Name: info.Name}
	log := log.FromContext(ctx).WithValues("fleetCluster", nn)
	in := w.clusterInput(ctx, info, key)

	var fc fleetv1.FleetCluster
	err := w.c.Get(ctx, nn, &fc)
	switch {
	case apierrors.IsNotFound(err):
		w.remember(key, buildClusterStatus(nil, in, 0, now))
		fc = fleetv1.FleetCluster{ObjectMeta: metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name}}
		fc.OwnerReferences, _ = withSecretOwner(nil, info)
		if err := w.c.Create(ctx, &fc); err != nil && !apierrors.IsAlreadyExists(err) {
			log.Error(err, "creating the FleetCluster")
		}
		return w.retry() // its status follows once MinInterval has passed
	case err != nil:
		log.Error(err, "reading the FleetCluster")
		return w.retry()
	case fc.DeletionTimestamp != nil:
		return w.retry() // recreated once it is gone
	}

	want := buildClusterStatus(&fc.Status, in, fc.Generation, now)
	w.remember(key, want)
	if refs, ok := withSecretOwner(fc.OwnerReferences, info); !ok {
		fc.OwnerReferences = refs
		if err := w.c.Update(ctx, &fc); err != nil {
			logWriteError(log, err, "setting the FleetCluster's owner")
		}
		return w.retry()
	}
	if !clusterStatusChanged(&fc.Status, &want, w.opts.ProbeRefresh) {
		return reconcile.Result{}
	}
	had := fc.Status
	fc.Status = want
	if err := w.c.Status().Update(ctx, &fc); err != nil {
		logWriteError(log, err, "updating the FleetCluster's status")
		return w.retry()
	}
	w.announceCredentials(&fc, &had, &want)
	return reconcile.Result{}
}

// clusterInput gathers what a cluster's status is computed from: its
// info, the Fleet's pause, the limiter's numbers and its etcd objects, or
// the last known counts when those cannot be read.
func (w *Writer) clusterInput(ctx context.Context, info ClusterInfo, key string) clusterInput {
	in := clusterInput{info: info, fleetPaused: w.FleetPaused()}
	if stats := w.limiterStats(false); stats != nil {
		in.waiting = stats.WaitingByCluster[key]
		in.throttled, in.throttledKnown = stats.ThrottledByCluster[key]
	}
	if info.Connected {
		rctx, cancel := context.WithTimeout(ctx, etcdReadTimeout)
		ecs, ems, err := w.src.EtcdObjects(rctx, key)
		cancel()
		if err != nil {
			in.etcdErr = err
		} else {
			s := SummarizeEtcd(ecs, ems)
			in.etcd = &s
		}
	}
	if in.etcd == nil && w.latest[key] != nil {
		// Last known beats last written: a failed write may be newer.
		s := summaryOfStatus(w.latest[key])
		in.etcd = &s
	}
	return in
}

// remember keeps a cluster's latest status for the Fleet, which is
// recomputed when it changed.
func (w *Writer) remember(key string, st fleetv1.FleetClusterStatus) {
	if prev := w.latest[key]; prev == nil || !semanticEqual(prev, &st) {
		w.latest[key] = &st
		publishCluster(key, &st)
		w.enqueue(fleetRequest)
	}
}

// summaryOfStatus reads the etcd counts back from a FleetCluster status.
func summaryOfStatus(st *fleetv1.FleetClusterStatus) EtcdSummary {
	return EtcdSummary{
		EtcdClusters: st.EtcdClusters, QuorateEtcdClusters: st.QuorateEtcdClusters,
		MembersReady: st.MembersReady, MembersDesired: st.MembersDesired,
		ReplacementsTotal: st.ReplacementsTotal, LastReplacementTime: st.LastReplacementTime.DeepCopy(),
		States: slices.Clone(st.EtcdClusterStates),
	}
}

// withSecretOwner returns refs with exactly one reference to the
// registration Secret (not a controller, not blocking its deletion), and
// whether refs already were so. References to an older Secret of the same
// name are dropped. Without a SecretUID there is nothing to reference.
func withSecretOwner(refs []metav1.OwnerReference, info ClusterInfo) ([]metav1.OwnerReference, bool) {
	if info.SecretUID == "" {
		return refs, true
	}
	want := metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: info.Name, UID: info.SecretUID}
	out := make([]metav1.OwnerReference, 0, len(refs)+1)
	found := false
	for _, r := range refs {
		if r.APIVersion != "v1" || r.Kind != "Secret" {
			out = append(out, r)
			continue
		}
		if !found && semanticEqual(r, want) {
			found = true
			out = append(out, r)
		}
	}
	if !found {
		out = append(out, want)
	}
	return out, found && len(out) == len(refs)
}

// syncFleet recomputes the Fleet's status from the latest cluster
// statuses and writes it if it changed. A missing Fleet is created first
// (unpaused); its status follows once MinInterval has passed.
func (w *Writer) syncFleet(ctx context.Context, now time.Time) reconcile.Result {
	log := log.FromContext(ctx)
	var f fleetv1.Fleet
	switch err := w.c.Get(ctx, fleetKey, &f); {
	case apierrors.IsNotFound(err):
		w.createFleet(ctx, log)
		return w.retry()
	case err != nil:
		log.Error(err, "reading the Fleet")
		return w.retry()
	}
	paused := f.Spec.Paused
	w.paused.Store(paused)
	rows := w.rows(ctx, paused, now)
	want := buildFleetStatus(&f.Status, rows, w.limiterStats(true), paused, f.Generation, now)
	if w.opts.Sharded {
		want.Replicas, want.ClustersUnowned = replicaShares(rows)
	}
	if semanticEqual(&f.Status, &want) {
		return reconcile.Result{}
	}
	f.Status = want
	if err := w.c.Status().Update(ctx, &f); err != nil {
		logWriteError(log, err, "updating the Fleet's status")
		return w.retry()
	}
	return reconcile.Result{}
}

// createFleet creates the Fleet, unpaused.
func (w *Writer) createFleet(ctx context.Context, log logr.Logger) {
	// Unstructured, so that spec.paused=false is stored (the typed field
	// is omitempty) and kubectl prints "false" rather than "<none>".
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": fleetv1.FleetName},
		"spec":     map[string]any{"paused": false},
	}}
	u.SetGroupVersionKind(fleetv1.GroupVersion.WithKind("Fleet"))
	if err := w.c.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
		log.Error(err, "creating the Fleet")
	}
}

// rows are the registered clusters with their latest statuses, for the
// Fleet; one not computed yet shows its ClusterInfo alone.
func (w *Writer) rows(ctx context.Context, paused bool, now time.Time) []clusterRow {
	infos := sortedClusters(w.src.Clusters())
	rows := make([]clusterRow, 0, len(infos))
	for _, info := range infos {
		st := w.latest[w.opts.ClusterKey(info)]
		if info.OwnedElsewhere {
			st = w.writtenElsewhere(ctx, info)
		}
		if st == nil {
			s := buildClusterStatus(nil, clusterInput{info: info, fleetPaused: paused}, 0, now)
			st = &s
		}
		rows = append(rows, clusterRow{Namespace: info.Namespace, Name: info.Name, Status: st})
	}
	return rows
}

// collectOrphans deletes the FleetClusters unregistered for OrphanGrace,
// and comes back when the next one is due.
func (w *Writer) collectOrphans(ctx context.Context, now time.Time) reconcile.Result {
	log := log.FromContext(ctx)
	registered := map[types.NamespacedName]bool{}
	for _, info := range sortedClusters(w.src.Clusters()) {
		registered[types.NamespacedName{Namespace: info.Namespace, Name: info.Name}] = true
	}
	var list fleetv1.FleetClusterList
	// Only names are read: no need to copy every status out of the cache.
	if err := w.c.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		log.Error(err, "listing FleetClusters")
		return w.retry()
	}
	var next time.Duration
	soonest := func(d time.Duration) {
		if next == 0 || d < next {
			next = d
		}
	}
	seen := map[types.NamespacedName]bool{}
	for i := range list.Items {
		fc := &list.Items[i]
		nn := client.ObjectKeyFromObject(fc)
		if registered[nn] || fc.DeletionTimestamp != nil {
			continue
		}
		seen[nn] = true
		since, ok := w.missingSince[nn]
		if !ok {
			since = now
			w.missingSince[nn] = now
		}
		if left := since.Add(w.opts.OrphanGrace).Sub(now); left > 0 {
			soonest(left)
			continue
		}
		uid := fc.UID
		orphan := &fleetv1.FleetCluster{ObjectMeta: metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name}}
		if err := w.c.Delete(ctx, orphan, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			logWriteError(log.WithValues("fleetCluster", nn), err, "deleting the unregistered FleetCluster")
			soonest(w.opts.MinInterval)
		}
	}
	for nn := range w.missingSince {
		if !seen[nn] {
			delete(w.missingSince, nn)
		}
	}
	return reconcile.Result{RequeueAfter: next}
}

// sortedClusters drops unnamed and duplicate ClusterInfos and orders the
// rest by namespace and name, so passes and the Fleet are deterministic.
func sortedClusters(infos []ClusterInfo) []ClusterInfo {
	out := make([]ClusterInfo, 0, len(infos))
	for _, c := range infos {
		if c.Name != "" && c.Namespace != "" {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b ClusterInfo) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return slices.CompactFunc(out, func(a, b ClusterInfo) bool {
		return a.Namespace == b.Namespace && a.Name == b.Name
	})
}
