package dashboard

import (
	"cmp"
	"context"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/limiter"
)

// syncCluster recomputes one cluster and makes at most one write for its
// FleetCluster: create it, fix its owner reference, or update its status.
// It returns true when nothing is left to do for the cluster.
func (w *Writer) syncCluster(ctx context.Context, info ClusterInfo, key string, stats *limiter.Stats, paused bool, now time.Time) bool {
	nn := types.NamespacedName{Namespace: info.Namespace, Name: info.Name}
	log := w.log.WithValues("fleetCluster", nn)
	in := clusterInput{info: info, fleetPaused: paused}
	if stats != nil {
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
		// Last known beats last written: a deferred write may be newer.
		s := summaryOfStatus(w.latest[key])
		in.etcd = &s
	}

	var fc fleetv1.FleetCluster
	err := w.c.Get(ctx, nn, &fc)
	switch {
	case apierrors.IsNotFound(err):
		w.remember(key, buildClusterStatus(nil, in, 0, now))
		fc = fleetv1.FleetCluster{ObjectMeta: metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name}}
		fc.OwnerReferences, _ = withSecretOwner(nil, info)
		w.wrote(nn, now)
		if err := w.c.Create(ctx, &fc); err != nil && !apierrors.IsAlreadyExists(err) {
			log.Error(err, "creating the FleetCluster")
		}
		return false // its status follows once MinInterval has passed
	case err != nil:
		log.Error(err, "reading the FleetCluster")
		return false
	case fc.DeletionTimestamp != nil:
		return false // recreated once it is gone
	}

	want := buildClusterStatus(&fc.Status, in, fc.Generation, now)
	w.remember(key, want)
	if refs, ok := withSecretOwner(fc.OwnerReferences, info); !ok {
		fc.OwnerReferences = refs
		w.wrote(nn, now)
		if err := w.c.Update(ctx, &fc); err != nil {
			logWriteError(log, err, "setting the FleetCluster's owner")
		}
		return false
	}
	if !clusterStatusChanged(&fc.Status, &want, w.opts.ProbeRefresh) {
		return true
	}
	fc.Status = want
	w.wrote(nn, now)
	if err := w.c.Status().Update(ctx, &fc); err != nil {
		logWriteError(log, err, "updating the FleetCluster's status")
		return false
	}
	return true
}

// remember keeps a cluster's latest status for the Fleet, which needs
// recomputing when it changed.
func (w *Writer) remember(key string, st fleetv1.FleetClusterStatus) {
	if prev := w.latest[key]; prev == nil || !semanticEqual(prev, &st) {
		w.latest[key] = &st
		w.fleetDirty = true
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

// ensureFleet returns the Fleet from the cache, creating it (unpaused) when
// it is missing. It returns nil until the Fleet can be read.
func (w *Writer) ensureFleet(ctx context.Context, now time.Time) *fleetv1.Fleet {
	var f fleetv1.Fleet
	err := w.c.Get(ctx, fleetKey, &f)
	if err == nil {
		return &f
	}
	if !apierrors.IsNotFound(err) {
		w.log.Error(err, "reading the Fleet")
		return nil
	}
	if _, ok := w.due(fleetKey, now); !ok {
		return nil
	}
	w.wrote(fleetKey, now)
	// Unstructured, so that spec.paused=false is stored (the typed field
	// is omitempty) and kubectl prints "false" rather than "<none>".
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": fleetv1.FleetName},
		"spec":     map[string]any{"paused": false},
	}}
	u.SetGroupVersionKind(fleetv1.GroupVersion.WithKind("Fleet"))
	if err := w.c.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
		w.log.Error(err, "creating the Fleet")
	}
	return nil
}

// syncFleet writes the Fleet's status if it changed. It returns false when
// the write failed.
func (w *Writer) syncFleet(ctx context.Context, f *fleetv1.Fleet, rows []clusterRow, stats *limiter.Stats, paused bool, now time.Time) bool {
	want := buildFleetStatus(&f.Status, rows, stats, paused, f.Generation, now)
	if semanticEqual(&f.Status, &want) {
		return true
	}
	f.Status = want
	w.wrote(fleetKey, now)
	if err := w.c.Status().Update(ctx, f); err != nil {
		logWriteError(w.log, err, "updating the Fleet's status")
		return false
	}
	return true
}

// collectOrphans deletes FleetClusters unregistered for OrphanGrace. It
// returns when it needs to look again (zero: not before the next resync).
func (w *Writer) collectOrphans(ctx context.Context, reg map[types.NamespacedName]bool, now time.Time) time.Time {
	var next time.Time
	later := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	var list fleetv1.FleetClusterList
	if err := w.c.List(ctx, &list); err != nil {
		w.log.Error(err, "listing FleetClusters")
		return next
	}
	seen := map[types.NamespacedName]bool{}
	for i := range list.Items {
		fc := &list.Items[i]
		nn := client.ObjectKeyFromObject(fc)
		if reg[nn] || fc.DeletionTimestamp != nil {
			continue
		}
		seen[nn] = true
		since, ok := w.missingSince[nn]
		if !ok {
			since = now
			w.missingSince[nn] = now
		}
		if deadline := since.Add(w.opts.OrphanGrace); deadline.After(now) {
			later(deadline)
			continue
		}
		if t, ok := w.due(nn, now); !ok {
			later(t)
			continue
		}
		w.wrote(nn, now)
		uid := fc.UID
		err := w.c.Delete(ctx, fc, client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) {
			logWriteError(w.log.WithValues("fleetCluster", nn), err, "deleting the unregistered FleetCluster")
			later(now.Add(w.opts.MinInterval))
		}
	}
	for nn := range w.missingSince {
		if !seen[nn] {
			delete(w.missingSince, nn)
		}
	}
	for nn, t := range w.lastWrite {
		if nn != fleetKey && !reg[nn] && now.Sub(t) >= w.opts.MinInterval {
			delete(w.lastWrite, nn)
		}
	}
	return next
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
