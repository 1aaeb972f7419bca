package agent_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/restore"
)

// s3WithEverything sets every field of agent.S3, so that a field Args or
// BindFlags forgets fails the round trips below.
func s3WithEverything() agent.S3 {
	return agent.S3{Endpoint: "https://s3.example:9000", Bucket: "b", Key: "p/k.db", Region: "eu-west-1",
		CredentialsDir: "/etc/etcdfleet/s3", CAFile: "/etc/etcdfleet/s3-ca/bundle.pem", SSE: agent.SSEKMS, SSEKMSKeyID: "alias/k",
		Limits: agent.S3Limits{ConnectTimeout: 3 * time.Second, FirstByteTimeout: 4 * time.Second, MinThroughput: 5000, ThroughputWindow: 6 * time.Second}}
}

// TestS3LimitsDefaultWhenNotWritten: a Job built without limits (older
// controller, or a restore Pod) runs with the defaults.
func TestS3LimitsDefaultWhenNotWritten(t *testing.T) {
	s3 := s3WithEverything()
	s3.Limits = agent.S3Limits{}
	fs := pflag.NewFlagSet("snapshot-agent", pflag.ContinueOnError)
	var got agent.Config
	var gotS3 agent.S3
	agent.BindFlags(fs, &got, &gotS3)
	if err := fs.Parse(agent.Args(agent.Config{S3: &s3})); err != nil {
		t.Fatal(err)
	}
	// The etcd limits are the run's (--etcd-*), not the location's.
	want := agent.DefaultS3Limits()
	want.EtcdLimits = agent.EtcdLimits{}
	if gotS3.Limits != want {
		t.Errorf("limits %+v, want the defaults %+v", gotS3.Limits, want)
	}
	if got.Etcd != agent.DefaultEtcdLimits() {
		t.Errorf("etcd limits %+v, want the defaults %+v", got.Etcd, agent.DefaultEtcdLimits())
	}
}

// TestArgsRoundTrip: what the controller writes (Args) is what the agent
// reads (BindFlags), the S3 CA bundle and encryption included.
func TestArgsRoundTrip(t *testing.T) {
	s3 := s3WithEverything()
	want := agent.Config{Endpoints: []string{"https://a:2379", "https://b:2379"}, CAFile: "/ca", CertFile: "/c", KeyFile: "/k",
		Etcd: agent.EtcdLimits{DialTimeout: 2 * time.Second, FirstByteTimeout: 3 * time.Second}, S3: &s3, PartSize: 6 << 20, Timeout: 7 * time.Minute, TerminationMessagePath: "/dev/termination-log",
		CheckSHA256: "ab", CheckSize: 12, ETag: `"e"`, DrillDir: "/drill", CheckRevision: 41}
	fs := pflag.NewFlagSet("snapshot-agent", pflag.ContinueOnError)
	var got agent.Config
	var gotS3 agent.S3
	agent.BindFlags(fs, &got, &gotS3)
	if err := fs.Parse(agent.Args(want)); err != nil {
		t.Fatal(err)
	}
	agent.Finish(&got, &gotS3)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %+v %+v\nwant %+v %+v", got, *got.S3, want, *want.S3)
	}
}

// TestRestoreAgentReadsS3Args: the restore agent reads the same S3 flags
// (S3Args), the CA bundle included, so a seed restores from a store
// behind a private CA.
func TestRestoreAgentReadsS3Args(t *testing.T) {
	want := s3WithEverything()
	fs := pflag.NewFlagSet("restore-agent", pflag.ContinueOnError)
	var cfg restore.Config
	var got agent.S3
	restore.BindFlags(fs, &cfg, &got)
	if err := fs.Parse(agent.S3Args(want)); err != nil {
		t.Fatal(err)
	}
	restore.Finish(&cfg, &got)
	if cfg.S3 == nil || !reflect.DeepEqual(*cfg.S3, want) {
		t.Errorf("restore agent read %+v, want %+v", cfg.S3, want)
	}
}
