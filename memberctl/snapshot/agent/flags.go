package agent

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Flag names of the snapshot-agent subcommand. Args writes them and
// BindFlags reads them, so the Job the controller builds and the command
// it runs cannot drift apart.
const (
	flagEndpoints   = "endpoints"
	flagCAFile      = "ca-file"
	flagCertFile    = "cert-file"
	flagKeyFile     = "key-file"
	flagFile        = "file"
	flagS3Endpoint  = "s3-endpoint"
	flagS3Bucket    = "s3-bucket"
	flagS3Key       = "s3-key"
	flagS3Region    = "s3-region"
	flagS3CredsDir  = "s3-credentials-dir"
	flagS3CAFile    = "s3-ca-file"
	flagS3SSE       = "s3-sse"
	flagS3SSEKMSKey = "s3-sse-kms-key-id"

	flagEtcdDialTimeout      = "etcd-dial-timeout"
	flagEtcdFirstByteTimeout = "etcd-first-byte-timeout"
	flagS3ConnectTimeout     = "s3-connect-timeout"
	flagS3FirstByteTimeout   = "s3-first-byte-timeout"
	flagS3MinThroughput      = "s3-min-throughput"
	flagS3ThroughputWindow   = "s3-throughput-window"
	flagPartSize             = "part-size"
	flagTimeout              = "timeout"
	flagTermMessage          = "termination-message-path"
	flagDelete               = "delete"
	flagCheckSHA256          = "check-sha256"
	flagCheckSize            = "check-size"
	flagETag                 = "etag"
	flagSingle               = "single-member"
	flagDrillDir             = "drill-dir"
	flagCheckRev             = "check-revision"
)

// BindFlags binds cfg to the subcommand's flags; S3 is set when
// --s3-endpoint is given (see Finish).
func BindFlags(fs *pflag.FlagSet, cfg *Config, s3 *S3) {
	fs.StringSliceVar(&cfg.Endpoints, flagEndpoints, nil, "etcd client URLs of the cluster's members")
	fs.StringVar(&cfg.CAFile, flagCAFile, "", "CA bundle that verifies the members' serving certificates")
	fs.StringVar(&cfg.CertFile, flagCertFile, "", "client certificate for etcd (mTLS)")
	fs.StringVar(&cfg.KeyFile, flagKeyFile, "", "client key for etcd (mTLS)")
	de := DefaultEtcdLimits()
	fs.DurationVar(&cfg.Etcd.DialTimeout, flagEtcdDialTimeout, de.DialTimeout, "longest wait for a connection to a member: TCP, TLS and etcd's acceptance of the client certificate")
	fs.DurationVar(&cfg.Etcd.FirstByteTimeout, flagEtcdFirstByteTimeout, de.FirstByteTimeout, "longest wait for etcd's first answer once connected: the revision read, the snapshot stream's first chunk")
	fs.StringVar(&cfg.File, flagFile, "", "store the snapshot in this file (on a mounted PVC)")
	fs.StringVar(&s3.Endpoint, flagS3Endpoint, "", "store the snapshot in this S3-compatible store (http(s)://host[:port])")
	BindS3Flags(fs, s3)
	fs.Int64Var(&cfg.PartSize, flagPartSize, DefaultPartSize, "multipart upload part size in bytes (at least 5 MiB)")
	fs.DurationVar(&cfg.Timeout, flagTimeout, DefaultTimeout, "timeout of the whole run")
	fs.BoolVar(&cfg.Delete, flagDelete, false, "delete the stored snapshot (S3 object or file) instead of taking one; etcd is not dialled")
	fs.StringVar(&cfg.CheckSHA256, flagCheckSHA256, "", "check the stored snapshot (S3 object or file) against this sha256 and --"+flagCheckSize+" instead of taking one; etcd is not dialled")
	fs.Int64Var(&cfg.CheckSize, flagCheckSize, 0, "the size in bytes the stored snapshot must have (with --"+flagCheckSHA256+")")
	fs.StringVar(&cfg.ETag, flagETag, "", "with --"+flagDelete+" or --"+flagCheckSHA256+": act only on the S3 object that has this ETag")
	fs.StringVar(&cfg.DrillDir, flagDrillDir, "", "with --"+flagCheckSHA256+": also restore the stored snapshot into a throwaway etcd in this directory and read its revision (a restore drill)")
	fs.Int64Var(&cfg.CheckRevision, flagCheckRev, 0, "with --"+flagDrillDir+": the revision the restored etcd must serve at least (the artifact's)")
	fs.BoolVar(&cfg.SingleMember, flagSingle, false, "snapshot the one member in --"+flagEndpoints+", reading its revision from it alone (it may have no quorum)")
	fs.StringVar(&cfg.TerminationMessagePath, flagTermMessage, "/dev/termination-log", "where the result (JSON) or the error is written")
}

// BindS3Flags binds the S3 flags other than --s3-endpoint, whose help
// differs between the snapshot and the restore agents; the restore agent
// binds them too (S3Args writes them for both).
func BindS3Flags(fs *pflag.FlagSet, s3 *S3) {
	fs.StringVar(&s3.Bucket, flagS3Bucket, "", "S3 bucket")
	fs.StringVar(&s3.Key, flagS3Key, "", "S3 object key")
	fs.StringVar(&s3.Region, flagS3Region, "us-east-1", "S3 region")
	fs.StringVar(&s3.CredentialsDir, flagS3CredsDir, "", "directory with the files "+AccessKeyIDKey+" and "+SecretAccessKeyKey)
	fs.StringVar(&s3.CAFile, flagS3CAFile, "", "PEM bundle that alone verifies the store's TLS certificate (a private CA); empty trusts the system's roots")
	fs.StringVar(&s3.SSE, flagS3SSE, "", "server-side encryption of uploads: "+SSES3+" or "+SSEKMS+" (with --"+flagS3SSEKMSKey+"); empty asks for none")
	fs.StringVar(&s3.SSEKMSKeyID, flagS3SSEKMSKey, "", "the KMS key of --"+flagS3SSE+"="+SSEKMS)
	d := DefaultS3Limits()
	fs.DurationVar(&s3.Limits.ConnectTimeout, flagS3ConnectTimeout, d.ConnectTimeout, "longest wait to connect to the store, TCP and TLS together")
	fs.DurationVar(&s3.Limits.FirstByteTimeout, flagS3FirstByteTimeout, d.FirstByteTimeout, "longest wait for the store's response headers once a request is sent")
	fs.IntVar(&s3.Limits.MinThroughput, flagS3MinThroughput, d.MinThroughput, "throughput floor in bytes/s of a body moving to or from the store, over --"+flagS3ThroughputWindow)
	fs.DurationVar(&s3.Limits.ThroughputWindow, flagS3ThroughputWindow, d.ThroughputWindow, "window of --"+flagS3MinThroughput)
}

// Finish sets cfg.S3 from the bound S3 flags when an S3 endpoint was given.
func Finish(cfg *Config, s3 *S3) {
	if s3.Endpoint != "" {
		cfg.S3 = s3
	}
}

// Args are the subcommand's arguments (after the subcommand) for cfg.
func Args(cfg Config) []string {
	var args []string
	opt := func(name, v string) {
		if v != "" {
			args = append(args, flag(name, v))
		}
	}
	if cfg.Delete {
		args = append(args, "--"+flagDelete)
	}
	if cfg.SingleMember {
		args = append(args, "--"+flagSingle)
	}
	opt(flagCheckSHA256, cfg.CheckSHA256)
	if cfg.CheckSize != 0 {
		opt(flagCheckSize, strconv.FormatInt(cfg.CheckSize, 10))
	}
	opt(flagETag, cfg.ETag)
	opt(flagDrillDir, cfg.DrillDir)
	if cfg.CheckRevision != 0 {
		opt(flagCheckRev, strconv.FormatInt(cfg.CheckRevision, 10))
	}
	opt(flagEndpoints, strings.Join(cfg.Endpoints, ","))
	opt(flagCAFile, cfg.CAFile)
	opt(flagCertFile, cfg.CertFile)
	opt(flagKeyFile, cfg.KeyFile)
	args = append(args, cfg.Etcd.args()...)
	opt(flagFile, cfg.File)
	if s := cfg.S3; s != nil {
		args = append(args, S3Args(*s)...)
	}
	if cfg.PartSize != 0 {
		opt(flagPartSize, strconv.FormatInt(cfg.PartSize, 10))
	}
	if cfg.Timeout != 0 {
		opt(flagTimeout, cfg.Timeout.String())
	}
	opt(flagTermMessage, cfg.TerminationMessagePath)
	return args
}

// S3Args are the flags of s, which both agents read (BindS3Flags).
func S3Args(s S3) []string {
	var args []string
	for _, f := range []struct{ name, v string }{{flagS3Endpoint, s.Endpoint}, {flagS3Bucket, s.Bucket}, {flagS3Key, s.Key},
		{flagS3Region, s.Region}, {flagS3CredsDir, s.CredentialsDir}, {flagS3CAFile, s.CAFile}, {flagS3SSE, s.SSE},
		{flagS3SSEKMSKey, s.SSEKMSKeyID}} {
		if f.v != "" {
			args = append(args, flag(f.name, f.v))
		}
	}
	return append(args, s.Limits.args()...)
}

// args are the flags of l's non-zero limits; BindS3Flags reads them.
func (l S3Limits) args() []string {
	var args []string
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{flagS3ConnectTimeout, l.ConnectTimeout}, {flagS3FirstByteTimeout, l.FirstByteTimeout}, {flagS3ThroughputWindow, l.ThroughputWindow}} {
		if f.d != 0 {
			args = append(args, flag(f.name, f.d.String()))
		}
	}
	if l.MinThroughput != 0 {
		args = append(args, flag(flagS3MinThroughput, strconv.Itoa(l.MinThroughput)))
	}
	return args
}

func flag(name, v string) string { return fmt.Sprintf("--%s=%s", name, v) }
