// Package replacement decides when a member's Pod may be replaced, and
// records each replacement in EtcdMember status so that an operator restart
// does not reset the count.
//
// # Rules
//
//   - Backoff: repeated replacements of one member wait InitialBackoff,
//     doubling up to MaxBackoff. The first replacement never waits: after a
//     whole-cluster reboot every member must come back at once.
//   - Cap: replacements whose cause is NOT a node shutdown (admission
//     errors, eviction, OutOfcpu...) are capped at Cap per Window. A Pod
//     that fails deterministically would otherwise loop create→Failed→delete
//     forever; at the cap the member stops churning and says so.
//   - Node-shutdown replacements are counted and backed off but never capped:
//     they are the case etcdfleet exists to heal.
//   - A member Ready for HealthyReset clears backoff and cap.
//   - The replace-now annotation bypasses backoff and cap once per new value.
//
// The package is pure: it takes the time and the status and returns a
// verdict or a new status; the member reconciler does the I/O.
package replacement
