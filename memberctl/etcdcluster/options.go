package etcdcluster

import "time"

// Options tune the Reconciler. Defaults live in DefaultOptions; a zero
// field takes its default.
type Options struct {
	// HealthEvery is how often etcd's own health is read (observeHealth):
	// one Status call per Ready member, at most once per HealthEvery per
	// cluster.
	HealthEvery time.Duration
	// ObserveRevisionEvery bounds how often status.lastObserved is
	// refreshed for clusters opted in to a restore after total loss
	// (observeRevision).
	ObserveRevisionEvery time.Duration
	// TLSSecretsEvery is how often a TLS cluster is reconciled, at the
	// least, to read its TLS Secrets for a change (tlssecrets.go): two
	// GETs per TLS cluster.
	TLSSecretsEvery time.Duration
}

// DefaultOptions returns the defaults; each one's reason is at its
// constant (healthEvery, observeRevisionEvery, tlsSecretsEvery).
func DefaultOptions() Options {
	return Options{HealthEvery: healthEvery, ObserveRevisionEvery: observeRevisionEvery, TLSSecretsEvery: tlsSecretsEvery}
}

// withDefaults fills the zero fields of o from DefaultOptions.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.HealthEvery <= 0 {
		o.HealthEvery = d.HealthEvery
	}
	if o.ObserveRevisionEvery <= 0 {
		o.ObserveRevisionEvery = d.ObserveRevisionEvery
	}
	if o.TLSSecretsEvery <= 0 {
		o.TLSSecretsEvery = d.TLSSecretsEvery
	}
	return o
}
