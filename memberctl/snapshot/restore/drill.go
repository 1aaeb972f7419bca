package restore

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
)

// The throwaway member of a drill. Its URLs are loopback: it is never
// reachable from outside the Job's Pod, and never joins anything.
const (
	drillName  = "restore-drill"
	drillPeer  = "http://127.0.0.1:2380"
	drillToken = "etcdfleet-restore-drill"
	// drillStartTimeout bounds the throwaway etcd's start on a restored
	// data dir: it replays no WAL beyond the restore's, so it is up in
	// seconds; longer means it will not come up.
	drillStartTimeout = 2 * time.Minute
)

// Drill is a restore drill, the verify Job of a snapshot run with
// cfg.DrillDir (see agent.Check): it downloads the stored snapshot into
// cfg.DrillDir, checking its size, sha256 and ETag against what was
// recorded, restores it with etcdutl into a throwaway data dir there (the
// same fetchAndRestore a seed's restore-agent runs), starts a throwaway
// etcd on it listening on loopback only, and reads its revision once. The
// revision must be at least cfg.CheckRevision. The outcome goes to
// cfg.TerminationMessagePath: an agent.DrillResult, or why not. It never
// dials the cluster's members, and removes what it wrote.
func Drill(ctx context.Context, cfg agent.Config) error {
	res, err := drill(ctx, cfg)
	b, _ := json.Marshal(res)
	return agent.Report(cfg, string(b), err)
}

func drill(ctx context.Context, cfg agent.Config) (agent.DrillResult, error) {
	start := time.Now()
	if err := agent.ValidateCheck(cfg); err != nil {
		return agent.DrillResult{}, err
	}
	if cfg.DrillDir == "" {
		return agent.DrillResult{}, fmt.Errorf("drill: no directory to restore into")
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	work, err := os.MkdirTemp(cfg.DrillDir, ".drill-")
	if err != nil {
		return agent.DrillResult{}, err
	}
	defer os.RemoveAll(work)
	data := filepath.Join(work, "data")
	src := stored{s3: cfg.S3, file: cfg.File, etag: cfg.ETag, sha256: cfg.CheckSHA256, size: cfg.CheckSize}
	if err := fetchAndRestore(ctx, src, work, data, drillName, []string{drillPeer}, drillName+"="+drillPeer, drillToken); err != nil {
		return agent.DrillResult{}, err
	}
	rev, err := readRevision(ctx, data)
	if err != nil {
		return agent.DrillResult{}, err
	}
	if rev < cfg.CheckRevision {
		return agent.DrillResult{}, agent.MarkPermanent(fmt.Errorf("restored etcd serves revision %d, below the %d recorded when the snapshot was taken", rev, cfg.CheckRevision))
	}
	return agent.DrillResult{Revision: rev, DurationSeconds: time.Since(start).Seconds()}, nil
}

// readRevision starts etcd on the restored data dir, loopback only on
// ports the kernel picks (the Pod may share a network namespace with
// anything), and reads its revision with one serializable Get: a one-member
// cluster needs no quorum round trip to answer it, and it is the read a
// client would make first.
func readRevision(ctx context.Context, dataDir string) (int64, error) {
	ec := embed.NewConfig()
	ec.Name = drillName
	ec.Dir = dataDir
	ec.LogLevel = "error"
	ec.Logger = "zap"
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	any, _ := url.Parse("http://127.0.0.1:0")
	ec.ListenPeerUrls, ec.ListenClientUrls = []url.URL{*any}, []url.URL{*any}
	peer, _ := url.Parse(drillPeer)
	ec.AdvertisePeerUrls = []url.URL{*peer}
	ec.AdvertiseClientUrls = []url.URL{*any}
	ec.InitialCluster = drillName + "=" + drillPeer
	ec.InitialClusterToken = drillToken
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return 0, fmt.Errorf("start a throwaway etcd on the restored data: %w", err)
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		return 0, fmt.Errorf("throwaway etcd on the restored data: %w", err)
	case <-time.After(drillStartTimeout):
		return 0, fmt.Errorf("throwaway etcd on the restored data was not ready within %s", drillStartTimeout)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + e.Clients[0].Addr().String()},
		DialTimeout: 10 * time.Second, Logger: zap.NewNop()}) // loopback: a slower dial is a dead server
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	resp, err := cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly(), clientv3.WithSerializable())
	if err != nil {
		return 0, fmt.Errorf("read the restored etcd's revision: %w", err)
	}
	return resp.Header.Revision, nil
}
