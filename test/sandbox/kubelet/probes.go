package kubelet

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probeState tracks one probe's schedule and consecutive results.
type probeState struct {
	next      time.Time
	successes int32
	failures  int32
}

// probe runs the readiness and liveness probes that are due. Called with
// c.mu unlocked; network calls happen without holding it.
func (c *container) probe(now time.Time) {
	c.mu.Lock()
	running := c.proc != nil || (c.binary == "" && c.waiting == nil && !c.done)
	started := c.startedAt.Time
	c.mu.Unlock()
	if !running {
		return
	}
	if p := c.spec.ReadinessProbe; p != nil && c.due(&c.readiness, p, started, now, c.w.k.opts.MaxProbePeriod) {
		ok := c.w.check(p, c.spec)
		c.mu.Lock()
		if c.record(&c.readiness, p, ok) {
			c.ready = ok
		}
		c.mu.Unlock()
	}
	if p := c.spec.LivenessProbe; p != nil && c.due(&c.liveness, p, started, now, livenessCap) {
		ok := c.w.check(p, c.spec)
		c.mu.Lock()
		kill := c.record(&c.liveness, p, ok) && !ok
		c.mu.Unlock()
		if kill {
			c.w.logf("container %s failed liveness; restarting", c.spec.Name)
			c.signal(syscall.SIGKILL)
		}
	}
}

// livenessCap leaves liveness probes at the Pod's own initial delay and
// period. Compressed like readiness (0.5 s), a TCP liveness probe gave a
// restarting etcd 1.5 s to bind its peer port; on a loaded machine it
// took longer, was killed five times in a row, and the operator rightly
// replaced the member as crash-looping, with a new member ID, in the middle
// of a heal that must keep every ID. No spec waits on a liveness kill.
const livenessCap = time.Duration(1<<63 - 1)

// due reports whether a probe should run now, and schedules the next run.
// Periods and initial delays are capped by capD.
func (c *container) due(s *probeState, p *corev1.Probe, started, now time.Time, capD time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.next.IsZero() {
		s.next = started.Add(minDur(time.Duration(p.InitialDelaySeconds)*time.Second, capD))
	}
	if now.Before(s.next) {
		return false
	}
	period := time.Duration(p.PeriodSeconds) * time.Second
	if period == 0 {
		period = 10 * time.Second
	}
	s.next = now.Add(minDur(period, capD))
	return true
}

// record counts a result; it returns true when a threshold was crossed.
func (c *container) record(s *probeState, p *corev1.Probe, ok bool) bool {
	succ, fail := p.SuccessThreshold, p.FailureThreshold
	if succ == 0 {
		succ = 1
	}
	if fail == 0 {
		fail = 3
	}
	if ok {
		s.failures = 0
		s.successes++
		return s.successes >= succ
	}
	s.successes = 0
	s.failures++
	return s.failures >= fail
}

func minDur(a, b time.Duration) time.Duration {
	if a < b {
		return a
	}
	return b
}

// check runs one probe against the Pod IP. Exec and gRPC probes are not
// simulated and always pass.
func (w *podWorker) check(p *corev1.Probe, spec *corev1.Container) bool {
	timeout := time.Duration(p.TimeoutSeconds) * time.Second
	if timeout == 0 {
		timeout = time.Second
	}
	ip := w.podIP()
	switch {
	case p.HTTPGet != nil:
		host := p.HTTPGet.Host
		if host == "" {
			host = ip
		}
		port, err := resolvePort(p.HTTPGet.Port, spec)
		if err != nil {
			return false
		}
		scheme := "http"
		if p.HTTPGet.Scheme == corev1.URISchemeHTTPS {
			scheme = "https"
		}
		client := &http.Client{Timeout: timeout, Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the kubelet does not verify probe certs either
			DisableKeepAlives: true,
		}}
		resp, err := client.Get(fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(port)), p.HTTPGet.Path))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode >= 200 && resp.StatusCode < 400
	case p.TCPSocket != nil:
		port, err := resolvePort(p.TCPSocket.Port, spec)
		if err != nil {
			return false
		}
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(ip, strconv.Itoa(port)), timeout)
		if err != nil {
			return false
		}
		conn.Close()
		return true
	}
	return true
}

func resolvePort(port intstr.IntOrString, spec *corev1.Container) (int, error) {
	if port.Type == intstr.Int {
		return port.IntValue(), nil
	}
	for _, p := range spec.Ports {
		if p.Name == port.StrVal {
			return int(p.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("no port named %q", port.StrVal)
}
