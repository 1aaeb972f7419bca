package fakeetcd_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/test/fakeetcd"
)

// The behaviour both reconciler suites rely on: membership changes as etcd
// makes them, Status only from a listed member that is up, and the error
// text the member finalizer reads as "already removed".
func TestMembershipAndHealth(t *testing.T) {
	ctx, tg := context.Background(), etcd.Target{Key: "test"}
	f := fakeetcd.New()
	seed, err := f.Start("ec-0", "http://ec-0.ec.ns.svc:2380")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Start("stranger", "http://stranger:2380"); err == nil {
		t.Error("a member that was never added started in a formed cluster")
	}
	learner, _, err := f.AddLearner(ctx, tg, "http://ec-1.ec.ns.svc:2380")
	if err != nil || !learner.IsLearner {
		t.Fatalf("AddLearner = %+v, %v", learner, err)
	}
	if id, err := f.Start("ec-1", "http://ec-1.ec.ns.svc:2380"); err != nil || id != learner.ID {
		t.Fatalf("the learner started as %x, %v; want %x", id, err, learner.ID)
	}
	f.SetPromoteErrs(errors.New("unhealthy"))
	if err := f.Promote(ctx, tg, learner.ID); err == nil {
		t.Error("the queued Promote error was not returned")
	}
	if err := f.Promote(ctx, tg, learner.ID); err != nil {
		t.Error(err)
	}
	id, list, err := f.MemberList(ctx, tg)
	if err != nil || id != 0xc1a5 || len(list) != 2 || list[1].IsLearner {
		t.Fatalf("MemberList = %x, %+v, %v", id, list, err)
	}

	f.SetRevision(500)
	st, err := f.Status(ctx, tg, "http://ec-0.ec.ns.svc:2379")
	if err != nil || st.MemberID != seed || st.Version != fakeetcd.Version || st.Revision != 500 {
		t.Errorf("Status of ec-0 = %+v, %v", st, err)
	}
	f.SetDown("ec-0", true)
	if _, err := f.Status(ctx, tg, "http://ec-0.ec.ns.svc:2379"); err == nil {
		t.Error("a down member answered Status")
	}
	if err := f.Remove(ctx, tg, seed); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove(ctx, tg, seed); err == nil || !strings.Contains(err.Error(), "member not found") {
		t.Errorf("removing a removed member: %v, want etcd's member not found", err)
	}
	f.SetFail(errors.New("connection refused"))
	if _, _, err := f.MemberList(ctx, tg); err == nil {
		t.Error("SetFail did not fail MemberList")
	}
	f.Rebootstrap(0xbeef)
	if id, list, err := f.MemberList(ctx, tg); err != nil || id != 0xbeef || len(list) != 0 {
		t.Errorf("after Rebootstrap: %x, %+v, %v", id, list, err)
	}
	f.Forget("k")
	if got := f.Forgotten(); len(got) != 1 || got[0] != "k" {
		t.Errorf("Forgotten = %v", got)
	}
	if got := f.Calls(); len(got) != 8 || got[0] != "AddLearner http://ec-1.ec.ns.svc:2380" {
		t.Errorf("Calls = %q", got)
	}
}
