package agent_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"

	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
)

// runBound is the run's own timeout in the tests below: far above the
// etcd limits they set, so that a run that fails on its timeout instead
// of on an etcd stage shows as a wrong error, not as a slow test.
const runBound = 2 * time.Minute

// TestEtcdStagesAreBounded: an endpoint that takes TCP and never speaks
// (no HTTP/2 preface) fails the dial stage; one that speaks gRPC and
// never answers a request, or answers the revision read and never starts
// the snapshot stream, fails the first-byte stage; each well before the
// run's own timeout, naming its stage and what it waited for.
func TestEtcdStagesAreBounded(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = silent.Close() })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
		}
	}()

	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// answers reads only: it serves the revision read, never a snapshot.
	answers, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct {
		lis   net.Listener
		reads bool
	}{{mute, false}, {answers, true}} {
		srv := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, s grpc.ServerStream) error {
			if m, _ := grpc.MethodFromServerStream(s); l.reads && m == "/etcdserverpb.KV/Range" {
				if err := s.RecvMsg(&pb.RangeRequest{}); err != nil {
					return err
				}
				return s.SendMsg(&pb.RangeResponse{Header: &pb.ResponseHeader{Revision: 5}})
			}
			<-s.Context().Done()
			return s.Context().Err()
		}))
		go func() { _ = srv.Serve(l.lis) }()
		t.Cleanup(srv.Stop)
	}

	lim := agent.EtcdLimits{DialTimeout: time.Second, FirstByteTimeout: time.Second}
	for _, tc := range []struct {
		addr  string
		stage agent.EtcdStage
		say   string
	}{
		{silent.Addr().String(), agent.EtcdStageDial, "etcd dial: no connection"},
		{mute.Addr().String(), agent.EtcdStageFirstByte, "etcd first byte: no answer to the revision read"},
		{answers.Addr().String(), agent.EtcdStageFirstByte, "etcd first byte: no snapshot data"},
	} {
		cfg := agent.Config{Endpoints: []string{"http://" + tc.addr}, Etcd: lim, Timeout: runBound,
			File: filepath.Join(t.TempDir(), "s.db")}
		_, err := agent.Run(context.Background(), cfg)
		var stage *agent.EtcdStageError
		if !errors.As(err, &stage) || stage.Stage != tc.stage {
			t.Errorf("%s: err = %v, want the etcd %s stage", tc.addr, err, tc.stage)
			continue
		}
		if !strings.Contains(err.Error(), tc.say) {
			t.Errorf("%s: error %q does not say %q", tc.addr, err, tc.say)
		}
	}
}
