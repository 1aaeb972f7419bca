package kubeconfigsecret

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
)

// ClusterState is what the provider knows of one registered Secret's
// cluster, for the dashboard. Message never contains credentials.
type ClusterState struct {
	Name, Namespace string
	SecretUID       types.UID
	// Connected is true while the cluster is engaged (its informers synced,
	// its controllers watching, and fewer than FailureThreshold probes in a
	// row failed).
	Connected bool
	// Reason is one of the Reason constants; Message explains it.
	Reason, Message string
	ServerVersion   string
	LastProbeTime   time.Time
	// Paused mirrors the Secret's paused annotation.
	Paused bool
	// Token is the lifetime of the kubeconfig's bearer token, read from its
	// JWT claims without any call to the cluster; zero when the token is
	// not a JWT with an exp claim (or there is no token).
	Token TokenLifetime
	// Owned is true while this replica owns the cluster (Options.Ownership;
	// always without it). A cluster owned elsewhere has Reason NotOwned.
	Owned bool
	// ConsecutiveFailures counts failed probes and connection attempts since
	// the last success.
	ConsecutiveFailures int
	// ClusterID is the cluster's identity (Options.Identify) as last read in
	// pre-flight; empty without Identify or before a pre-flight got that far.
	ClusterID string
	// MissingRights lists the AccessChecks permissions an engaged cluster's
	// credentials lacked at the last check, "; "-separated; empty when all
	// are granted. The cluster stays engaged (see the package
	// documentation); only meaningful while Connected.
	MissingRights string
	// Unconstrained says what admission admitted that the credentials must
	// not be able to write (Options.Constraint), at the last check; empty
	// when it refused all of it, or before any check.
	Unconstrained string
	// OverPrivileged lists the Options.ForbiddenChecks permissions the
	// credentials held at the last check, "; "-separated.
	OverPrivileged string
	// ConstraintChecked is true once a constraint check answered.
	ConstraintChecked bool
	// UnwatchedNamespaces are the namespaces outside a namespaced
	// registration that hold objects to manage (Options.Unwatched), sorted
	// and ", "-separated (a string keeps ClusterState comparable), at the
	// last look.
	UnwatchedNamespaces string
}

// Reasons of ClusterState.
const (
	// ReasonConnecting: a connection attempt (pre-flight, cache sync,
	// engage) is in progress.
	ReasonConnecting = "Connecting"
	// ReasonConnected: engaged.
	ReasonConnected = "Connected"
	// ReasonInvalidSecret: the data key is missing or empty.
	ReasonInvalidSecret = "InvalidSecret"
	// ReasonInvalidKubeconfig: the kubeconfig does not parse or is refused.
	ReasonInvalidKubeconfig = "InvalidKubeconfig"
	// ReasonUnreachable: connection refused, timed out, DNS, or the server
	// did not answer.
	ReasonUnreachable = "Unreachable"
	// ReasonTLSError: the server's certificate does not verify against the
	// kubeconfig's CA (or the client certificate is refused).
	ReasonTLSError = "TLSError"
	// ReasonUnauthorized: 401, the credentials are invalid, expired or revoked.
	ReasonUnauthorized = "Unauthorized"
	// ReasonForbidden: the credentials lack a permission of AccessChecks.
	ReasonForbidden = "Forbidden"
	// ReasonMissingAPI: a watched kind is not served (CRDs not installed).
	ReasonMissingAPI = "MissingAPI"
	// ReasonSyncFailed: the informers did not sync within SyncTimeout.
	ReasonSyncFailed = "CacheSyncFailed"
	// ReasonEngageFailed: mgr.Engage failed or did not return in time.
	ReasonEngageFailed = "EngageFailed"
	// ReasonDisconnected: FailureThreshold probes in a row failed, or the
	// cluster's cache stopped; the cluster was disengaged.
	ReasonDisconnected = "Disconnected"
	// ReasonDuplicateCluster: the kubeconfig reaches a cluster (same
	// Options.Identify identity) that another Secret registered first; the
	// message names that Secret.
	ReasonDuplicateCluster = "DuplicateCluster"
	// ReasonIdentityMismatch: the Secret's Options.IdentityAnnotation names
	// another cluster than the one its kubeconfig reaches; not engaged.
	ReasonIdentityMismatch = "IdentityMismatch"
	// ReasonUnconstrained: admission in the workload cluster admitted a
	// write the credentials must not be able to make
	// (Options.Constraint); the cluster is not engaged.
	ReasonUnconstrained = "Unconstrained"
	// ReasonOverBudget: a response of the cluster's apiserver exceeded
	// Options.MaxResponseBytes, or its caches Options.MaxObjects; the
	// cluster is disengaged (its caches dropped) and retried after backoff.
	ReasonOverBudget = "OverBudget"
	// ReasonError: anything else.
	ReasonError = "Error"
)

var allReasons = []string{ReasonConnecting, ReasonConnected, ReasonInvalidSecret, ReasonInvalidKubeconfig, ReasonInsecureKubeconfig,
	ReasonUnreachable, ReasonTLSError, ReasonUnauthorized, ReasonForbidden, ReasonMissingAPI,
	ReasonSyncFailed, ReasonEngageFailed, ReasonDisconnected, ReasonDuplicateCluster, ReasonIdentityMismatch, ReasonUnconstrained, ReasonOverBudget, ReasonError, ReasonNotOwned}

// statusCode is the HTTP code of an API error, 0 if there is none.
func statusCode(err error) int32 {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return st.Status().Code
	}
	return 0
}

// failure is an error with a Reason and a credential-free message.
type failure struct {
	reason, msg string
}

func (f *failure) Error() string { return f.reason + ": " + f.msg }

// classify turns any error into a failure; step says what was being done
// ("pre-flight", "cache sync", ...). Error texts pass through red.
func classify(err error, step string, red redactor) *failure {
	var f *failure
	if errors.As(err, &f) {
		return f
	}
	reason := ReasonError
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostname         x509.HostnameError
		invalidCert      x509.CertificateInvalidError
		verify           *tls.CertificateVerificationError
		netErr           net.Error
		opErr            *net.OpError
		dnsErr           *net.DNSError
	)
	switch {
	case apierrors.IsUnauthorized(err):
		reason = ReasonUnauthorized
	case apierrors.IsForbidden(err):
		reason = ReasonForbidden
	case meta.IsNoMatchError(err), apierrors.IsNotFound(err):
		reason = ReasonMissingAPI
	case errors.As(err, &unknownAuthority), errors.As(err, &hostname), errors.As(err, &invalidCert),
		errors.As(err, &verify):
		reason = ReasonTLSError
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, syscall.ECONNREFUSED),
		errors.As(err, &dnsErr), errors.As(err, &opErr), errors.As(err, &netErr),
		apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), apierrors.IsServiceUnavailable(err):
		reason = ReasonUnreachable
	}
	msg := fmt.Sprintf("%s: %s", step, red.redact(err.Error()))
	if apierrors.IsUnexpectedServerError(err) {
		// client-go quotes up to 2 KiB of a body that is not a Kubernetes
		// Status; what answered may be no apiserver at all (an internal
		// service a registration aims at), and its body must not reach a
		// status or the log (security review M1). The code is enough.
		msg = fmt.Sprintf("%s: the server answered HTTP %d with a body that is not a Kubernetes API Status (not shown)",
			step, statusCode(err))
	}
	switch reason {
	case ReasonUnauthorized:
		msg += " (401 Unauthorized: the credentials are invalid, expired or revoked; write new ones into the Secret)"
	case ReasonTLSError:
		msg += " (TLS: check certificate-authority-data and the server address)"
	case ReasonMissingAPI:
		msg += " (are the etcdfleet CRDs installed in the workload cluster?)"
	}
	return &failure{reason: reason, msg: msg}
}
