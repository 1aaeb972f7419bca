package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// LiteKnobs trim a lite apiserver below envtest's defaults. Each was
// measured on its own by the scale benchmark's BenchmarkLiteAPIServer
// (figures in docs/performance.md).
type LiteKnobs struct {
	// Flags are set on every apiserver, over envtest's.
	Flags map[string]string
	// GOGC and GOMEMLIMIT go into each apiserver's environment ("" keeps
	// Go's default): a kube-apiserver is a Go process, and at rest most of
	// its RSS is heap the collector has not returned yet.
	GOGC, GOMEMLIMIT string
	// GOMAXPROCS, if set, goes into the environment too: a hundred idle
	// Go runtimes on two cores each keep fewer threads spinning for work
	// with one P.
	GOMAXPROCS string
	// Nice, if above 0, starts the apiserver at that niceness: on a
	// machine shared with the code under test, a hundred apiservers that
	// in a real fleet each have their own machine must not take the CPU
	// from the one process being measured.
	Nice int
}

// liteAPIsOff are the API groups a lite cluster does not serve: none of
// them is used by etcdfleet on a workload cluster (it uses core v1,
// policy, batch, events, coordination, authorization and apiextensions)
// nor needed by the apiserver to become ready. Each costs its storage, its
// OpenAPI and discovery documents. Turning everything off and a list on
// (api/all=false) is not used: the apiserver then fails its Service IP
// repair post-start hook and exits. flowcontrol needs priority and
// fairness off; scheduling and admissionregistration need the admission
// plugins that read them (Priority, webhooks, admission policies) off.
var liteAPIsOff = []string{"apps/v1", "autoscaling/v1", "autoscaling/v2", "storage.k8s.io/v1", "certificates.k8s.io/v1",
	"scheduling.k8s.io/v1", "node.k8s.io/v1", "resource.k8s.io/v1", "flowcontrol.apiserver.k8s.io/v1",
	"admissionregistration.k8s.io/v1"}

// liteAdmission are the default admission plugins a lite cluster keeps:
// NamespaceLifecycle (objects in a deleted namespace are refused, as the
// operator expects). The others mutate or check what no bench sends
// (service accounts, quotas, limit ranges, storage classes, webhooks and
// admission policies, which each keep informers of their own).
var liteDisabledAdmission = []string{"LimitRanger", "ServiceAccount", "TaintNodesByCondition", "PodSecurity", "Priority",
	"DefaultTolerationSeconds", "DefaultStorageClass", "StorageObjectInUseProtection", "PodGroupProtection",
	"PersistentVolumeClaimResize", "RuntimeClass", "CertificateApproval", "CertificateSigning", "ClusterTrustBundleAttest",
	"CertificateSubjectRestriction", "DefaultIngressClass", "PodTopologyLabels", "PodGroupWorkloadExists",
	"NodeDeclaredFeatureValidator", "JobValidation", "PodResizeValidator", "MutatingAdmissionPolicy",
	"MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook", "ResourceQuota"}

// LiteKnobSteps are the knobs one at a time, cumulative, in the order
// BenchmarkLiteAPIServer measures them; the last is DefaultLiteKnobs.
func LiteKnobSteps() []struct {
	Name  string
	Knobs LiteKnobs
} {
	k := LiteKnobs{Flags: map[string]string{}}
	var out []struct {
		Name  string
		Knobs LiteKnobs
	}
	add := func(name string, change func()) {
		change()
		c := k
		c.Flags = map[string]string{}
		for f, v := range k.Flags {
			c.Flags[f] = v
		}
		out = append(out, struct {
			Name  string
			Knobs LiteKnobs
		}{name, c})
	}
	add("envtest apiserver, watch cache off", func() {})
	add("+ --enable-priority-and-fairness=false", func() { k.Flags["enable-priority-and-fairness"] = "false" })
	add("+ --profiling=false, fewer admission plugins, --max-requests-inflight=50", func() {
		k.Flags["profiling"] = "false"
		k.Flags["disable-admission-plugins"] = strings.Join(liteDisabledAdmission, ",")
		// A lite cluster serves one manager's few watches and probes.
		k.Flags["max-requests-inflight"], k.Flags["max-mutating-requests-inflight"] = "50", "25"
	})
	add("+ API groups etcdfleet does not use off (--runtime-config)", func() {
		k.Flags["runtime-config"] = strings.Join(liteAPIsOff, "=false,") + "=false"
	})
	add("+ GOGC=50 GOMEMLIMIT=100MiB", func() { k.GOGC, k.GOMEMLIMIT = "50", "100MiB" })
	return out
}

// DefaultLiteKnobs are every knob of LiteKnobSteps.
func DefaultLiteKnobs() LiteKnobs {
	s := LiteKnobSteps()
	return s[len(s)-1].Knobs
}

// liteScriptDir prefixes the directory of LiteKnobs.binary's script.
const liteScriptDir = "etcdfleet-lite-"

// binary returns the path to start the apiserver by: kube-apiserver
// itself, or with Go environment variables or a niceness a script that
// sets them and execs it (envtest starts processes with this process's environment),
// so the process ID stays the apiserver's.
func (k LiteKnobs) binary(apiserver string) (string, error) {
	if k.GOGC == "" && k.GOMEMLIMIT == "" && k.GOMAXPROCS == "" && k.Nice <= 0 {
		return apiserver, nil
	}
	env := ""
	for _, v := range []struct{ name, value string }{{"GOGC", k.GOGC}, {"GOMEMLIMIT", k.GOMEMLIMIT}, {"GOMAXPROCS", k.GOMAXPROCS}} {
		if v.value != "" {
			env += v.name + "=" + v.value + " "
		}
	}
	nice := ""
	if k.Nice > 0 {
		nice = fmt.Sprintf("nice -n %d ", k.Nice)
	}
	dir, err := os.MkdirTemp("", liteScriptDir+"*")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kube-apiserver")
	script := fmt.Sprintf("#!/bin/sh\nexec %senv %s%q \"$@\"\n", nice, env, apiserver)
	return path, os.WriteFile(path, []byte(script), 0o755)
}
