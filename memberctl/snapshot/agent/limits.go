package agent

import (
	"errors"
	"fmt"
	"time"
)

// Defaults of S3Limits, the only place they live. Together they make a
// store that is unreachable, a tarpit, or too slow to finish fail the run
// within a few minutes rather than at the run's 25-minute timeout: a
// snapshot holds a fleet-wide slot (and its cluster's only one) while its
// Job runs.
const (
	// DefaultS3ConnectTimeout bounds TCP and TLS together. A store
	// connects in well under a second, even across regions; 10 s rides
	// out a lost SYN (retransmitted after 1 s and 3 s) and a slow TLS
	// handshake, while a tarpit that accepts no connection, or accepts
	// TCP and never finishes the handshake, costs three tries of 10 s.
	DefaultS3ConnectTimeout = 10 * time.Second
	// DefaultS3FirstByteTimeout bounds the wait for a response's headers
	// once the whole request (a part included) is sent. A store answers
	// within seconds; AWS answers a multipart completion at once and then
	// keeps the connection alive while it works, so a minute (minio-go's
	// own default) is only reached by a store that took the request and
	// never answers.
	DefaultS3FirstByteTimeout = time.Minute
	// DefaultS3MinThroughput is the floor, in bytes per second, below
	// which a transfer is cut. At 100 KiB/s not even a 150 MiB database,
	// small for etcd (the default quota is 2 GiB), is stored within the
	// run's 25-minute timeout, so such a run would fail anyway, only later
	// and holding its slot all along; a real link, even a congested WAN
	// one, moves megabytes per second.
	DefaultS3MinThroughput = 100 << 10
	// DefaultS3ThroughputWindow is how long the floor is measured over:
	// long enough that a TCP retransmission backoff, a store's pause, or
	// the socket buffers taking the first megabytes at once do not read
	// as a slow link, short enough that a trickling tarpit is cut within
	// a minute or two per try.
	DefaultS3ThroughputWindow = time.Minute
)

// S3Limits are the per-stage limits of every transfer with object
// storage. Their tags make them the manager's settings snapshotAgent.*
// (fleet/settings), which the controller passes into every agent Job as
// the flags below; zero fields take the defaults above. EtcdLimits ride
// along, as the same group of settings, but reach the agent as its own
// --etcd-* flags (Config.Etcd), not as part of a location: the S3 flags
// (S3Args, BindS3Flags) leave them out.
type S3Limits struct {
	ConnectTimeout   time.Duration `mapstructure:"connectTimeout" flag:"snapshot-agent-s3-connect-timeout" help:"Longest the snapshot agent waits to connect to the object store, TCP and TLS together (its --s3-connect-timeout); a store that never completes a connection fails the snapshot with 's3 connect' in its error."`
	FirstByteTimeout time.Duration `mapstructure:"firstByteTimeout" flag:"snapshot-agent-s3-first-byte-timeout" help:"Longest the snapshot agent waits for the object store's response headers once a request is sent (its --s3-first-byte-timeout); a store that takes requests and never answers fails the snapshot with 's3 first byte' in its error."`
	MinThroughput    int           `mapstructure:"minThroughput" flag:"snapshot-agent-s3-min-throughput" help:"Throughput floor of the snapshot agent's transfers with the object store, in bytes per second over throughputWindow (its --s3-min-throughput); a slower transfer fails the snapshot with 's3 throughput' in its error."`
	ThroughputWindow time.Duration `mapstructure:"throughputWindow" flag:"snapshot-agent-s3-throughput-window" help:"Window over which minThroughput is measured (its --s3-throughput-window)."`

	EtcdLimits `mapstructure:",squash"`
}

// DefaultS3Limits are the Default* limits above.
func DefaultS3Limits() S3Limits {
	return S3Limits{ConnectTimeout: DefaultS3ConnectTimeout, FirstByteTimeout: DefaultS3FirstByteTimeout,
		MinThroughput: DefaultS3MinThroughput, ThroughputWindow: DefaultS3ThroughputWindow, EtcdLimits: DefaultEtcdLimits()}
}

// Validate refuses limits that would fail every transfer, naming the
// manager's keys (snapshotAgent.*).
func (l S3Limits) Validate() error {
	if l.ConnectTimeout <= 0 || l.FirstByteTimeout <= 0 || l.ThroughputWindow <= 0 || l.MinThroughput < 1 {
		return errors.New("snapshotAgent.connectTimeout, firstByteTimeout and throughputWindow must be > 0 and snapshotAgent.minThroughput at least 1 byte/s")
	}
	if l.EtcdLimits.DialTimeout <= 0 || l.EtcdLimits.FirstByteTimeout <= 0 {
		return errors.New("snapshotAgent.etcdDialTimeout and etcdFirstByteTimeout must be > 0")
	}
	return nil
}

// withDefaults returns l with every zero or negative field defaulted.
func (l S3Limits) withDefaults() S3Limits {
	d := DefaultS3Limits()
	if l.ConnectTimeout <= 0 {
		l.ConnectTimeout = d.ConnectTimeout
	}
	if l.FirstByteTimeout <= 0 {
		l.FirstByteTimeout = d.FirstByteTimeout
	}
	if l.MinThroughput <= 0 {
		l.MinThroughput = d.MinThroughput
	}
	if l.ThroughputWindow <= 0 {
		l.ThroughputWindow = d.ThroughputWindow
	}
	return l
}

// Stage is the stage of a transfer with object storage that a limit of
// S3Limits bounds.
type Stage string

const (
	StageConnect    Stage = "connect"
	StageFirstByte  Stage = "first byte"
	StageThroughput Stage = "throughput"
)

// StageError is a transfer with object storage cut by one of S3Limits.
// Its message names the stage and the agent flag that set the limit, and
// reaches the EtcdSnapshot's JobFailed condition and Event as is.
type StageError struct {
	Stage Stage
	// Limits are the limits in force.
	Limits S3Limits
	// Err is the underlying error, if any (a dial's).
	Err error
}

func (e *StageError) Error() string {
	var s string
	switch e.Stage {
	case StageConnect:
		s = fmt.Sprintf("s3 connect: no connection (TCP and TLS) within %s (--%s)", e.Limits.ConnectTimeout, flagS3ConnectTimeout)
	case StageFirstByte:
		s = fmt.Sprintf("s3 first byte: no response within %s of the request (--%s)", e.Limits.FirstByteTimeout, flagS3FirstByteTimeout)
	default:
		s = fmt.Sprintf("s3 throughput: below %d bytes/s over %s (--%s, --%s)", e.Limits.MinThroughput, e.Limits.ThroughputWindow,
			flagS3MinThroughput, flagS3ThroughputWindow)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *StageError) Unwrap() error { return e.Err }
