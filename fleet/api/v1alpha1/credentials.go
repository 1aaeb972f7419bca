package v1alpha1

// Annotations etcdfleetctl register writes on the registration Secret, next
// to RegistrationLabel and KubeconfigKey. These are the only definitions.
const (
	// TokenExpiresAtAnnotation holds the RFC 3339 time at which the
	// kubeconfig's token expires, as the workload apiserver granted it
	// (which may be sooner than asked: --service-account-max-token-expiration).
	TokenExpiresAtAnnotation = "fleet.etcdfleet.io/token-expires-at"
	// WatchNamespacesAnnotation lists, comma-separated, the only namespaces
	// the credential may act in (namespaced mode); the manager scopes that
	// cluster's caches and pre-flight to them. Absent: the whole cluster.
	WatchNamespacesAnnotation = "fleet.etcdfleet.io/watch-namespaces"
)
