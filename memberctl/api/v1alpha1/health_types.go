package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// EtcdHealth is etcd's own health as its members report it (the
// Maintenance Status call, one per member with a Pod at most every 30 s): what
// an operator of many etcd clusters looks at first. Sizes are rounded down
// to whole MiB, so a database that grows by a few keys does not rewrite
// the status at every look.
type EtcdHealth struct {
	// leader is the member that leads, by EtcdMember name; empty when no
	// member that answered knows a leader.
	// +optional
	Leader string `json:"leader,omitempty"`

	// leaderChanges counts the leader changes seen in the last hour (the
	// times are in leaderChangeTimes).
	// +optional
	LeaderChanges int32 `json:"leaderChanges,omitempty"`

	// leaderChangeTimes are the times leader changes were seen, newest
	// last, kept for one hour and at most 20.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	LeaderChangeTimes []metav1.Time `json:"leaderChangeTimes,omitempty"`

	// dbSizeBytes is the largest database file of the members that answered.
	// +optional
	DBSizeBytes int64 `json:"dbSizeBytes,omitempty"`

	// dbSizeInUseBytes is that member's space in use: the rest is what a
	// defragmentation frees.
	// +optional
	DBSizeInUseBytes int64 `json:"dbSizeInUseBytes,omitempty"`

	// quotaBytes is the backend quota etcd enforces (its
	// --quota-backend-bytes, 2 GiB by default). At the quota etcd raises
	// NOSPACE and refuses writes.
	// +optional
	QuotaBytes int64 `json:"quotaBytes,omitempty"`

	// quotaUsedPercent is dbSizeBytes as a percentage of quotaBytes.
	// +optional
	QuotaUsedPercent int32 `json:"quotaUsedPercent,omitempty"`

	// alarms are the active alarms, as "<ALARM> on <member>" (NOSPACE,
	// CORRUPT).
	// +optional
	// +listType=atomic
	Alarms []string `json:"alarms,omitempty"`

	// laggingMembers are the members whose applied raft index is more than
	// 5,000 entries behind the most advanced member that answered.
	// +optional
	// +listType=atomic
	LaggingMembers []string `json:"laggingMembers,omitempty"`
}

// Health conditions of an EtcdCluster, from status.health.
const (
	// ConditionAlarmActive is True while any member reports an etcd alarm.
	// NOSPACE: etcd refuses writes until the database is compacted,
	// defragmented and the alarm disarmed (EtcdDefrag does the last two).
	// CORRUPT: a member's data differs from the others'; a human looks.
	ConditionAlarmActive = "AlarmActive"
	// ConditionNearQuota is True while the database is at 80 % or more of
	// its quota: NOSPACE comes next.
	ConditionNearQuota = "NearQuota"
)

// Health condition reasons.
const (
	// ReasonAlarmsNone (AlarmActive=False).
	ReasonAlarmsNone = "NoAlarms"
	// ReasonAlarmNoSpace (AlarmActive=True): a NOSPACE alarm is active.
	ReasonAlarmNoSpace = "NoSpaceAlarm"
	// ReasonAlarmCorrupt (AlarmActive=True): a CORRUPT alarm is active
	// (with or without NOSPACE: the worse one names the reason).
	ReasonAlarmCorrupt = "CorruptAlarm"
	// ReasonBelowQuota (NearQuota=False).
	ReasonBelowQuota = "BelowQuota"
	// ReasonDatabaseNearQuota (NearQuota=True).
	ReasonDatabaseNearQuota = "DatabaseNearQuota"
	// ReasonHealthUnknown (both Unknown): no member has answered a Status
	// call yet.
	ReasonHealthUnknown = "HealthUnknown"
)

// NearQuotaPercent is the share of the quota from which NearQuota is True.
const NearQuotaPercent = 80
