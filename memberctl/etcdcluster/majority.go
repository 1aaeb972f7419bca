package etcdcluster

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// majorityLoss names a cluster that lost a majority of its members for
// good while one or more survive: etcd does not answer, the lost members'
// data is provably gone (dataGone: DataDirLost from the guard, a Pod gone
// with its tmpfs, a claim absent or Lost), and they are at least a
// majority of the members, so quorum cannot come back by waiting. Total-loss
// restore does not apply (a survivor may hold data newer than any
// snapshot), and removing the lost members needs the quorum there is not.
// This is what a person must then decide; the message says what is known,
// with each survivor's revision (its own Status answer, which needs no
// quorum), so that the one with the newest data can be chosen.
func (p *pass) majorityLoss(ctx context.Context, total int, proofs []string, survivors []*v1alpha1.EtcdMember, whats []string) {
	if etcd.HasQuorum(len(survivors), total) {
		return // the survivors are a majority: quorum may come back with them
	}
	statuses := p.survivorStatuses(ctx, survivors)
	revs := map[string]int64{}
	p.majority = &majorityState{survivors: survivors}
	for i, m := range survivors {
		st, ok := statuses[m.Name]
		if ok {
			revs[m.Name] = st.Revision
		}
		p.majority.reports = append(p.majority.reports, survivorReport{name: m.Name, what: whats[i], answered: ok, status: st})
	}
	p.majorityLost = fmt.Sprintf("%d of %d members lost their data for good (%s); surviving: %s; quorum cannot return "+
		"without them, and total-loss restore does not apply while a member may hold data: restore the cluster "+
		"from a snapshot, or recover from the survivor with the newest data (spec.recovery.quorumLoss FromSurvivor, "+
		"or the annotation "+v1alpha1.AnnotationRecoverFromSurvivor+"; see docs/operations.md, Power loss)",
		len(proofs), total, strings.Join(proofs, "; "), strings.Join(withRevisions(survivors, whats, revs), "; "))
}

// majorityState is what majorityLoss found: the members not provably
// lost, and what each answered (for chooseSurvivor).
type majorityState struct {
	survivors []*v1alpha1.EtcdMember
	reports   []survivorReport
}

// survivorStatuses asks each survivor for its status, at once (each call
// is bounded by etcd's status timeout). One that does not answer is left
// out.
func (p *pass) survivorStatuses(ctx context.Context, survivors []*v1alpha1.EtcdMember) map[string]etcd.Status {
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		out = map[string]etcd.Status{}
	)
	for _, m := range survivors {
		// The member alone: its own answer needs no quorum.
		t, err := etcd.TargetFor(ctx, p.cl.Reader, p.cl.Name, []v1alpha1.EtcdMember{*m})
		if err != nil {
			continue
		}
		wg.Go(func() {
			st, err := p.cl.Etcd.Status(ctx, t, etcd.MemberClientURL(m))
			if err != nil {
				return
			}
			mu.Lock()
			out[m.Name] = st
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// withRevisions describes each survivor with what may hold its data and
// its revision, where it answered.
func withRevisions(survivors []*v1alpha1.EtcdMember, whats []string, revs map[string]int64) []string {
	out := make([]string, len(survivors))
	for i, m := range survivors {
		out[i] = m.Name + " (" + whats[i]
		if r, ok := revs[m.Name]; ok {
			out[i] += fmt.Sprintf(", revision %d)", r)
		} else {
			out[i] += ", does not answer)"
		}
	}
	return out
}
