package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
)

// Defaults of EtcdLimits, the only place they live. Without them a
// member that never lets the agent in (a client certificate it refuses,
// a port that drops packets) keeps the run, and its snapshot slot, until
// the run's 25-minute timeout: etcd's client waits for a ready
// connection for as long as the request's context allows.
const (
	// DefaultEtcdDialTimeout bounds getting a connection to a member:
	// TCP, TLS, and etcd's acceptance of the client certificate, which
	// with TLS 1.3 shows only when etcd answers the client's first bytes.
	// The Job runs next to the members and connects in milliseconds;
	// 10 s rides out a lost SYN and a member restarting, a longer wait
	// only hides a down cluster or a refused certificate.
	DefaultEtcdDialTimeout = 10 * time.Second
	// DefaultEtcdFirstByteTimeout bounds etcd's first answer once
	// connected: the revision read (linearizable, so it waits for a
	// leader) and the snapshot stream's first chunk (etcd opens a read
	// transaction and starts sending at once). A minute rides out a few
	// leader elections; a member that answers none within it would not
	// stream a snapshot either.
	DefaultEtcdFirstByteTimeout = time.Minute
)

// EtcdLimits bound the agent's stages with etcd; the manager's settings
// snapshotAgent.etcd* (squashed into S3Limits, which carries the
// manager's snapshotAgent.* settings into the Jobs), passed to the
// snapshot Job only, the one that dials etcd.
type EtcdLimits struct {
	DialTimeout      time.Duration `mapstructure:"etcdDialTimeout" flag:"snapshot-agent-etcd-dial-timeout" help:"Longest the snapshot agent waits for a connection to an etcd member, TCP, TLS and etcd's acceptance of its client certificate together (its --etcd-dial-timeout); a member that never lets it in fails the snapshot with 'etcd dial' and grpc's last connection error (e.g. a refused certificate) in its error."`
	FirstByteTimeout time.Duration `mapstructure:"etcdFirstByteTimeout" flag:"snapshot-agent-etcd-first-byte-timeout" help:"Longest the snapshot agent waits for etcd's first answer once connected: the revision read, and the snapshot stream's first chunk (its --etcd-first-byte-timeout); a member that never answers fails the snapshot with 'etcd first byte' in its error."`
}

// DefaultEtcdLimits are the DefaultEtcd* limits above.
func DefaultEtcdLimits() EtcdLimits {
	return EtcdLimits{DialTimeout: DefaultEtcdDialTimeout, FirstByteTimeout: DefaultEtcdFirstByteTimeout}
}

// withDefaults returns l with every zero or negative field defaulted.
func (l EtcdLimits) withDefaults() EtcdLimits {
	d := DefaultEtcdLimits()
	if l.DialTimeout <= 0 {
		l.DialTimeout = d.DialTimeout
	}
	if l.FirstByteTimeout <= 0 {
		l.FirstByteTimeout = d.FirstByteTimeout
	}
	return l
}

// args are the flags of l's non-zero limits; BindFlags reads them.
func (l EtcdLimits) args() []string {
	var args []string
	if l.DialTimeout != 0 {
		args = append(args, flag(flagEtcdDialTimeout, l.DialTimeout.String()))
	}
	if l.FirstByteTimeout != 0 {
		args = append(args, flag(flagEtcdFirstByteTimeout, l.FirstByteTimeout.String()))
	}
	return args
}

// EtcdStage is the stage with etcd that a limit of EtcdLimits bounds.
type EtcdStage string

const (
	EtcdStageDial      EtcdStage = "dial"
	EtcdStageFirstByte EtcdStage = "first byte"
)

// EtcdStageError is a run cut by one of EtcdLimits. Its message names the
// stage, the flag that set the limit and what etcd's client last saw
// (for a refused certificate, the TLS alert), and reaches the
// EtcdSnapshot's JobFailed condition and Event as is.
type EtcdStageError struct {
	Stage     EtcdStage
	Endpoints []string
	Limits    EtcdLimits
	// What names what was awaited in the first-byte stage.
	What string
	Err  error
}

func (e *EtcdStageError) Error() string {
	var s string
	if e.Stage == EtcdStageDial {
		s = fmt.Sprintf("etcd dial: no connection to %v (TCP, TLS and etcd's acceptance of the client certificate) within %s (--%s)",
			e.Endpoints, e.Limits.DialTimeout, flagEtcdDialTimeout)
	} else {
		s = fmt.Sprintf("etcd first byte: no %s from %v within %s (--%s)", e.What, e.Endpoints, e.Limits.FirstByteTimeout, flagEtcdFirstByteTimeout)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *EtcdStageError) Unwrap() error { return e.Err }

// connect waits until cli has a connection to a member, within
// l.DialTimeout. etcd's client dials lazily and its requests wait for a
// connection for as long as their context allows, so without this a
// member that refuses the agent's certificate holds the run until its
// timeout. On the timeout the error carries grpc's last connection error.
func connect(ctx context.Context, cli *clientv3.Client, tlsCfg *tls.Config, eps []string, l EtcdLimits) error {
	dctx, cancel := context.WithTimeout(ctx, l.DialTimeout)
	defer cancel()
	conn := cli.ActiveConnection()
	conn.Connect()
	for s := conn.GetState(); s != connectivity.Ready; s = conn.GetState() {
		if conn.WaitForStateChange(dctx, s) {
			continue
		}
		if ctx.Err() != nil {
			return fmt.Errorf("dial etcd %v: %w", eps, ctx.Err())
		}
		err := refusal(ctx, tlsCfg, eps)
		if err == nil {
			if err = lastConnError(ctx, conn); err == nil {
				return nil // connected just now
			}
		}
		return &EtcdStageError{Stage: EtcdStageDial, Endpoints: eps, Limits: l, Err: err}
	}
	return nil
}

// refusal is why a member does not let the agent in over TLS, when it
// says so: grpc reports only the broken connection ("write: broken
// pipe") when etcd refuses the client certificate, since with TLS 1.3
// the refusal is an alert that arrives after the client's side of the
// handshake, on a read grpc never makes. So each endpoint is dialled with
// the same TLS configuration and read from: a refusal shows as the alert
// ("remote error: tls: unknown certificate authority"), an untrusted
// serving certificate as the handshake's error. nil when no endpoint says
// anything (a member that accepts the agent waits for its HTTP/2 preface
// and sends nothing).
func refusal(ctx context.Context, tlsCfg *tls.Config, eps []string) error {
	if tlsCfg == nil {
		return nil
	}
	for _, ep := range eps {
		u, err := url.Parse(ep)
		if err != nil || u.Host == "" {
			continue
		}
		if err := tlsRefusal(ctx, tlsCfg, u.Host); err != nil {
			return fmt.Errorf("%s: %w", ep, err)
		}
	}
	return nil
}

func tlsRefusal(ctx context.Context, tlsCfg *tls.Config, host string) error {
	ctx, cancel := context.WithTimeout(ctx, lastConnErrorWait)
	defer cancel()
	cfg := tlsCfg.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(host)
	}
	c, err := (&tls.Dialer{Config: cfg}).DialContext(ctx, "tcp", host)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil // says nothing within the wait
		}
		return err
	}
	defer c.Close()
	deadline, _ := ctx.Deadline()
	_ = c.SetReadDeadline(deadline)
	_, err = c.Read(make([]byte, 1))
	if ne, ok := errors.AsType[net.Error](err); err == nil || ok && ne.Timeout() {
		return nil // let in: etcd waits for the HTTP/2 preface
	}
	return err
}

// lastConnErrorWait bounds lastConnError's request: long enough for a
// balancer between two connection attempts to report the last one's
// failure, short against the dial timeout.
const lastConnErrorWait = time.Second

// lastConnError asks the connection for a request that does not wait for
// it to be ready: grpc fails it at once with the last error of its
// connection attempts ("connection error: ... tls: ..."), which a
// waiting request, etcd's client's default, never reports.
func lastConnError(ctx context.Context, conn grpc.ClientConnInterface) error {
	ctx, cancel := context.WithTimeout(ctx, lastConnErrorWait)
	defer cancel()
	_, err := pb.NewMaintenanceClient(conn).Status(ctx, &pb.StatusRequest{}, grpc.WaitForReady(false))
	return err
}

// firstByte is a context for a request that must bring etcd's first
// answer (what) within l.FirstByteTimeout. Its end calls done, which
// lifts that bound (the context lives on, for the rest of a stream) and
// returns the request's error, or the stage error when the bound cut it.
func firstByte(ctx context.Context, eps []string, l EtcdLimits, what string) *firstByteCtx {
	fctx, cancel := context.WithCancelCause(ctx)
	f := &firstByteCtx{Context: fctx, Cancel: cancel,
		cut: &EtcdStageError{Stage: EtcdStageFirstByte, Endpoints: eps, Limits: l, What: what}}
	f.timer = time.AfterFunc(l.FirstByteTimeout, func() { cancel(f.cut) })
	return f
}

type firstByteCtx struct {
	context.Context
	// Cancel ends the context; the caller calls it when done with it.
	Cancel context.CancelCauseFunc
	timer  *time.Timer
	cut    error
}

// done is the request's outcome: nil when it succeeded, the stage error
// when the bound cut it, else err.
func (f *firstByteCtx) done(err error) error {
	stopped := f.timer.Stop()
	if err == nil {
		return nil
	}
	if !stopped && errors.Is(context.Cause(f), f.cut) {
		return f.cut
	}
	return err
}
