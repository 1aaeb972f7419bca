package etcdcluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdsnapshot"
)

// Before a restore after total loss removes anything, the snapshot it
// would restore is read back where it is stored: an object deleted, or
// replaced by another upload, since the snapshot completed would otherwise
// be found missing only by the restored seed, once every member is gone.
// The check runs in the workload cluster, as a Job of the snapshot
// (etcdsnapshot.BuildVerifyJob): the store is often reachable only from
// there, with the Secret or claim the snapshot names. Candidates are the
// cluster's Complete snapshots, newest first; one that does not hold what
// it recorded is passed over for the next, and with none left the
// cluster stays down (NoVerifiedSnapshot) with nothing touched.

const (
	// verifyFresh is how long a check's outcome stands. Past it, the
	// Job is deleted and the snapshot checked again: a store that was
	// down may be back, and an old "verified" says little about now.
	verifyFresh = 10 * time.Minute
	// requeueVerify: a check reads one object; poll its Job at this pace
	// (the cluster controller does not watch Jobs).
	requeueVerify = 5 * time.Second
	// requeueNoVerified: with no snapshot left that verifies, look again
	// once the failed checks are stale.
	requeueNoVerified = verifyFresh
)

// snapshotChoice is what verifiedSnapshot found.
type snapshotChoice struct {
	// chosen is the newest snapshot whose stored copy verified.
	chosen *v1alpha1.EtcdSnapshot
	// checking is the snapshot whose check runs; the choice waits for it.
	checking *v1alpha1.EtcdSnapshot
	// skipped says, for each newer snapshot passed over, why.
	skipped []string
	// candidates is the number of Complete snapshots of the cluster.
	candidates int
}

// verifiedSnapshot walks the cluster's Complete snapshots newest first and
// returns the first whose stored copy verifies, or the one being checked.
func (p *pass) verifiedSnapshot(ctx context.Context) (snapshotChoice, error) {
	var list v1alpha1.EtcdSnapshotList
	if err := p.cl.Client.List(ctx, &list, client.InNamespace(p.ec.Namespace)); err != nil {
		return snapshotChoice{}, fmt.Errorf("list EtcdSnapshots: %w", err)
	}
	all := make([]*v1alpha1.EtcdSnapshot, len(list.Items))
	for i := range list.Items {
		all[i] = &list.Items[i]
	}
	snaps := etcdsnapshot.CompleteNewestFirst(all, p.ec)
	c := snapshotChoice{candidates: len(snaps)}
	for _, s := range snaps {
		ok, why, err := p.checkStored(ctx, s)
		switch {
		case err != nil:
			return c, fmt.Errorf("check EtcdSnapshot %s: %w", s.Name, err)
		case ok:
			c.chosen = s
			return c, nil
		case why == "":
			c.checking = s
			return c, nil
		}
		c.skipped = append(c.skipped, fmt.Sprintf("%s (%s): %s", s.Name, s.Status.Artifact.URI, why))
	}
	return c, nil
}

// checkStored reports whether the stored copy of s verified (ok), or why
// not; neither means its check is under way (started if needed by
// etcdsnapshot.Verification, the one owner of verify Jobs).
func (p *pass) checkStored(ctx context.Context, s *v1alpha1.EtcdSnapshot) (ok bool, why string, err error) {
	out, err := etcdsnapshot.Verification(ctx, p.cl.Client, p.cl.Reader, s, p.snapshotOptions, p.now.Add(-verifyFresh))
	switch {
	case err != nil:
		return false, "", err
	case out.InTheWay != "":
		return false, out.InTheWay, nil
	case !out.Done:
		return false, "", nil
	case out.Verified:
		return true, "", nil
	case out.Message == "":
		return false, "its stored copy could not be read back", nil
	}
	return false, out.Message, nil
}

// describeSkipped is what a restore or its refusal says of the newer
// snapshots passed over.
func describeSkipped(skipped []string) string {
	if len(skipped) == 0 {
		return ""
	}
	return " Passed over, as their stored copies do not hold what they recorded: " + strings.Join(skipped, "; ") + "."
}
