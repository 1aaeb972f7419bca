package restore

import (
	"github.com/spf13/pflag"

	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
)

// BindFlags binds cfg to the restore-agent subcommand's flags; S3 is set
// when --s3-endpoint is given (see Finish).
func BindFlags(fs *pflag.FlagSet, cfg *Config, s3 *agent.S3) {
	fs.StringVar(&cfg.File, "file", "", "restore the snapshot in this file (on a mounted PVC)")
	fs.StringVar(&s3.Endpoint, "s3-endpoint", "", "restore the snapshot from this S3-compatible store (http(s)://host[:port])")
	agent.BindS3Flags(fs, s3)
	fs.StringVar(&cfg.SHA256, "sha256", "", "the snapshot's expected sha256 (hex); empty skips the check")
	fs.StringVar(&cfg.ETag, "etag", "", "the S3 object's expected ETag; only that object is read (If-Match); empty reads whatever the key holds")
	fs.StringVar(&cfg.DataDir, "data-dir", "", "the new member's --data-dir; nothing is done if it already holds a member")
	fs.StringVar(&cfg.Name, "name", "", "the new member's --name")
	fs.StringSliceVar(&cfg.PeerURLs, "initial-advertise-peer-urls", nil, "the new member's --initial-advertise-peer-urls")
	fs.StringVar(&cfg.InitialCluster, "initial-cluster", "", "the new member's --initial-cluster")
	fs.StringVar(&cfg.InitialClusterToken, "initial-cluster-token", "", "the new member's --initial-cluster-token (a new one gives a new cluster ID)")
	fs.DurationVar(&cfg.Timeout, "timeout", DefaultTimeout, "timeout of the whole run")
}

// Finish sets cfg.S3 from the bound S3 flags when an S3 endpoint was given.
func Finish(cfg *Config, s3 *agent.S3) {
	if s3.Endpoint != "" {
		cfg.S3 = s3
	}
}
