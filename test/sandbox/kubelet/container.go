package kubelet

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdfleet/etcdfleet/test/sandbox/proc"
	"github.com/etcdfleet/etcdfleet/test/sandbox/sandboxdns"
)

// container is one container of a podWorker. Its fields are guarded by mu
// because probes, exits and status building run on the worker goroutine
// while port-forward lookups and faults arrive from others.
type container struct {
	w    *podWorker
	spec *corev1.Container
	// binary runs the container; "" means no process (reported running).
	binary string
	init   bool
	// termFile backs the container's terminationMessagePath on the host.
	termFile string

	mu        sync.Mutex
	proc      *proc.Process
	gen       int // bumps on every start; stale exit events are ignored
	restarts  int32
	startedAt metav1.Time
	waiting   *corev1.ContainerStateWaiting
	lastTerm  *corev1.ContainerStateTerminated
	done      bool // exited and will not restart
	ready     bool
	restartAt time.Time
	// restartPending is set while a crashed container waits out its backoff.
	restartPending bool
	backoff        time.Duration
	// logOffset is where this run's output starts in the log file, for
	// FallbackToLogsOnError.
	logOffset int64
	readiness probeState
	liveness  probeState
}

func newContainer(w *podWorker, spec *corev1.Container, init bool) *container {
	o := w.k.opts
	c := &container{w: w, spec: spec, init: init,
		termFile: filepath.Join(w.dir, "containers", spec.Name, "termination-log")}
	switch {
	case isEtcdImage(spec.Image):
		c.binary = o.EtcdBinary
		if b, ok := o.EtcdBinaries[imageMinor(spec.Image)]; ok {
			c.binary = b
		}
	case isAgentImage(spec.Image):
		c.binary = o.AgentBinary
	}
	// What the kubelet reports before a container starts.
	c.waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
	if len(w.pod.Spec.InitContainers) > 0 {
		c.waiting = &corev1.ContainerStateWaiting{Reason: "PodInitializing"}
	}
	c.carryOver(w.pod.Status)
	return c
}

// isEtcdImage reports whether image names etcd (quay.io/coreos/etcd:v3.6.0,
// registry.k8s.io/etcd:3.5.16-0, ...).
func isEtcdImage(image string) bool {
	return strings.HasPrefix(filepath.Base(imageRepo(image)), "etcd") && !isAgentImage(image)
}

// isAgentImage reports whether image is etcdfleet's own (it carries
// etcdfleet-agent): ghcr.io/etcdfleet/etcdfleet-manager:0.1.0, ...
func isAgentImage(image string) bool {
	return strings.HasPrefix(filepath.Base(imageRepo(image)), "etcdfleet")
}

// imageMinor is the major.minor version of an image's tag ("3.6" for
// quay.io/coreos/etcd:v3.6.16 or registry.k8s.io/etcd:3.6.15-0); "" when
// the tag does not start with a version.
func imageMinor(image string) string {
	repo := imageRepo(image)
	tag := strings.TrimPrefix(strings.TrimPrefix(image, repo), ":")
	if i := strings.IndexAny(tag, "@"); i >= 0 {
		tag = tag[:i]
	}
	parts := strings.SplitN(strings.TrimPrefix(tag, "v"), ".", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" || strings.Trim(parts[0]+parts[1], "0123456789") != "" {
		return ""
	}
	return parts[0] + "." + parts[1]
}

func imageRepo(image string) string {
	repo := image
	if i := strings.IndexAny(repo, "@"); i >= 0 {
		repo = repo[:i]
	}
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	return repo
}

// start launches the container's process (etcd and etcdfleet images
// only; others are reported running with nothing behind them).
func (c *container) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.waiting = nil
	c.restartPending = false
	c.startedAt = metav1.Now()
	c.readiness, c.liveness = probeState{}, probeState{}
	c.ready = !c.init && c.spec.ReadinessProbe == nil
	if c.binary == "" {
		return
	}
	p, err := c.launch()
	if err != nil {
		c.w.logf("container %s: %v", c.spec.Name, err)
		c.waiting = &corev1.ContainerStateWaiting{Reason: "RunContainerError", Message: err.Error()}
		c.restartAt, c.restartPending = time.Now().Add(c.nextBackoff()), true
		return
	}
	c.proc = p
	gen := c.gen
	go func() {
		<-p.Done()
		select {
		case c.w.exit <- exitEvent{c: c, gen: gen}:
		case <-c.w.quit:
		}
	}()
}

func (c *container) launch() (*proc.Process, error) {
	w := c.w
	logDir := filepath.Join(w.dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	log, err := os.OpenFile(c.logPath(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close() // the child holds its own descriptor
	if st, err := log.Stat(); err == nil {
		c.logOffset = st.Size()
	}
	// A new, empty termination message file for every run, as the kubelet mounts.
	if err := os.MkdirAll(filepath.Dir(c.termFile), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(c.termFile, nil, 0o666); err != nil {
		return nil, err
	}
	args, env := c.commandLine()
	cmd := exec.Command(c.binary, args...)
	cmd.Dir = w.dir
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = log, log
	return proc.Start(cmd)
}

// commandLine builds the process arguments and environment: command[1:] +
// args (the binary is always ours), with Pod-IP and host-path rewrites.
func (c *container) commandLine() ([]string, []string) {
	w := c.w
	var raw []string
	if len(c.spec.Command) > 1 {
		raw = append(raw, c.spec.Command[1:]...)
	}
	raw = append(raw, c.spec.Args...)
	vars := map[string]string{}
	env := []string{"HOME=" + w.dir}
	if w.k.opts.Hosts != nil {
		env = append(env, sandboxdns.EnvHostsFile+"="+w.k.opts.Hosts.Path())
	}
	for _, e := range c.spec.Env {
		v := e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			v = w.fieldValue(e.ValueFrom.FieldRef.FieldPath)
		}
		v = c.rewrite(expand(v, vars))
		vars[e.Name] = v
		env = append(env, e.Name+"="+v)
	}
	args := make([]string, len(raw))
	for i, a := range raw {
		args[i] = c.rewrite(expand(a, vars))
	}
	return args, env
}

// expand replaces $(VAR) references, as the kubelet does.
func expand(s string, vars map[string]string) string {
	for k, v := range vars {
		s = strings.ReplaceAll(s, "$("+k+")", v)
	}
	return s
}

func (w *podWorker) fieldValue(path string) string {
	switch path {
	case "metadata.name":
		return w.pod.Name
	case "metadata.namespace":
		return w.pod.Namespace
	case "status.podIP":
		return w.podIP()
	case "metadata.uid":
		return string(w.pod.UID)
	case "spec.nodeName":
		return w.pod.Spec.NodeName
	}
	return ""
}

// rewrite makes one argument work on a shared host: wildcard and loopback
// binds become the Pod IP, and container paths under a mount become the
// host directory backing it.
func (w *podWorker) rewrite(arg string, extra ...mount) string {
	ip := w.podIP()
	for _, host := range []string{"0.0.0.0", "127.0.0.1", "localhost", "[::]"} {
		arg = strings.ReplaceAll(arg, "://"+host+":", "://"+ip+":")
	}
	w.mu.Lock()
	mounts := append(extra, w.mounts...)
	w.mu.Unlock()
	flag, value, hasEq := strings.Cut(arg, "=")
	if !hasEq {
		flag, value = "", arg
	}
	for _, m := range mounts { // longest mount path first
		if value == m.containerPath || strings.HasPrefix(value, m.containerPath+"/") {
			value = m.hostPath + strings.TrimPrefix(value, m.containerPath)
			break
		}
	}
	if hasEq {
		return flag + "=" + value
	}
	return value
}

// rewrite is the worker's rewrite plus this container's termination
// message file, which the kubelet mounts at terminationMessagePath.
func (c *container) rewrite(arg string) string {
	path := c.spec.TerminationMessagePath
	if path == "" {
		path = corev1.TerminationMessagePathDefault
	}
	return c.w.rewrite(arg, mount{containerPath: path, hostPath: c.termFile})
}

func (c *container) logPath() string {
	return filepath.Join(c.w.dir, "logs", c.spec.Name+".log")
}

// nextBackoff doubles the restart delay up to the cap.
func (c *container) nextBackoff() time.Duration {
	o := c.w.k.opts
	if c.backoff == 0 {
		c.backoff = o.RestartBackoff
	} else if c.backoff *= 2; c.backoff > o.MaxRestartBackoff {
		c.backoff = o.MaxRestartBackoff
	}
	return c.backoff
}

// exited records the exit of generation gen; false if stale. A crashed
// container is scheduled for restart by restartPolicy; an init container
// that completed, or one that may not restart, is done.
func (c *container) exited(gen int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen || c.proc == nil {
		return false
	}
	code := c.proc.ExitCode()
	c.lastTerm = c.terminated(code)
	c.proc = nil
	c.ready = false
	policy := c.w.pod.Spec.RestartPolicy
	restart := policy == corev1.RestartPolicyAlways || policy == "" || (policy == corev1.RestartPolicyOnFailure && code != 0)
	if c.init {
		// An init container runs to completion once per sandbox.
		restart = code != 0 && policy != corev1.RestartPolicyNever
	}
	if restart {
		d := c.nextBackoff()
		c.restartAt, c.restartPending = time.Now().Add(d), true
		c.waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", d, c.spec.Name, c.w.pod.Name)}
		return true
	}
	c.done = true
	c.ready = c.init && code == 0 // the kubelet reports completed init containers ready
	return true
}

func (c *container) containerID() string {
	if c.proc == nil {
		return ""
	}
	return fmt.Sprintf("sandbox://%d", c.proc.Cmd.Process.Pid)
}

func (c *container) finished() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}

func (c *container) lastExitCode() int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lastTerm == nil {
		return 0
	}
	return c.lastTerm.ExitCode
}

// tick restarts the container when its backoff expired, then probes it.
func (c *container) tick(now time.Time) {
	c.mu.Lock()
	due := c.restartPending && !c.done && !now.Before(c.restartAt)
	c.mu.Unlock()
	if due {
		c.mu.Lock()
		c.restarts++
		c.mu.Unlock()
		c.start()
		return
	}
	c.probe(now)
}

// signal sends sig to the running process; false if none runs.
func (c *container) signal(sig syscall.Signal) bool {
	c.mu.Lock()
	p := c.proc
	c.mu.Unlock()
	if p == nil {
		return false
	}
	p.Signal(sig)
	return true
}

// kill stops the process: SIGTERM, grace, SIGKILL.
func (c *container) kill(grace time.Duration) {
	c.mu.Lock()
	p := c.proc
	c.mu.Unlock()
	if p == nil {
		return
	}
	p.Stop(grace)
	c.mu.Lock()
	if c.proc == p {
		c.lastTerm = c.terminated(p.ExitCode())
		c.proc = nil
		c.ready = false
		c.done = true
	}
	c.mu.Unlock()
}
