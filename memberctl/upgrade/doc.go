// Package upgrade is the etcd version-change policy: which moves of a
// running cluster from one etcd version to another etcd allows, and why a
// refused one is refused. It is pure (no clients, no clock) so that the
// cluster reconciler, the docs and the tests share one statement of the
// rules.
//
// # Rules
//
// Check(from, to) allows a cluster whose members run etcd `from` to move to
// `to` when:
//
//   - `to` is one of v1alpha1.SupportedVersions: etcdfleet creates members
//     at that version only, and the workload admission policy admits no
//     other image.
//   - both are etcd release versions "major.minor.patch" (no "v", no
//     pre-release, no leading zeros) of the same major.
//   - a patch change within a minor, either way, is allowed: etcd's upgrade
//     policy ("Patch upgrade: upgrading between patch releases within the
//     same minor version", https://etcd.io/docs/v3.7/upgrades/).
//   - an upgrade to the next minor is allowed only from that minor's
//     required patch: 3.5.26 or later before 3.6 (the v3store zombie-member
//     fix, https://etcd.io/docs/latest/upgrades/upgrade_3_6), 3.6.11 or
//     later before 3.7 (https://etcd.io/docs/v3.7/upgrades/upgrade_3_7/).
//     A minor without a known requirement is refused: supporting a new
//     minor means adding its rule here (TestEveryStepBetweenSupportedMinors
//     fails until then).
//   - no minor is skipped, up or down: "Upgrades that skip a minor version
//     are not supported and will likely fail" (https://etcd.io/docs/v3.7/upgrades/).
//   - a downgrade goes one minor down, and only from 3.6 on: etcd's
//     downgrade API (validate, enable, cancel) exists from 3.6
//     (https://etcd.io/docs/v3.6/downgrades/downgrade_3_6,
//     https://etcd.io/docs/v3.7/downgrades/downgrade_3_7/); a 3.5 cluster
//     can only be restored from a snapshot taken before its upgrade.
//   - and not for a memory-backed cluster (CheckMemory): etcd downgrades
//     each member in place on its data, and refuses a new member of the
//     lower minor while the downgrade is enabled, which is the only way a
//     memory member could change version.
//
// `from` need not be supported: it is what runs, not a choice. A version
// dropped from SupportedVersions (3.6.5 was, when the floor rose to the
// CVE-2026-73500 fix) must still be able to move to a supported one, by the
// same etcd rules; refusing it would strand the cluster on the very
// release that was dropped. The same rules are those of the etcd-io
// operator (https://github.com/etcd-io/etcd-operator/issues/168), with the
// minimum patch etcd's docs require today rather than its 3.5.20.
//
// JoinVersion says which version a new member takes while a change is
// refused: the newest release of the oldest minor that runs. etcd's cluster
// version is the lowest minor of its members, and a member of that minor
// always joins; among its releases the newest carries the most fixes.
//
// # Trade-offs
//
// A refusal's message names the rule and the next step ("upgrade to 3.6.11
// or later first", with the supported releases that qualify), bounded in
// length and on one line, so that it can be a condition message as is.
// The policy knows versions only: whether a downgrade has been enabled in
// etcd, or the cluster is healthy enough to roll, is for the caller.
package upgrade
