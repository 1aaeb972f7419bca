package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// DefragPhase is where an EtcdDefrag is in its one run.
// +kubebuilder:validation:Enum=Pending;Running;Complete;Failed
type DefragPhase string

const (
	// DefragPending: accepted; waiting for the cluster to exist, to be
	// healthy, or for an older EtcdDefrag of the same cluster to finish.
	DefragPending DefragPhase = "Pending"
	// DefragRunning: members are being defragmented, one at a time.
	DefragRunning DefragPhase = "Running"
	// DefragComplete (terminal): every member was defragmented or skipped.
	DefragComplete DefragPhase = "Complete"
	// DefragFailed (terminal): a member's defragmentation failed; the
	// members after it were left alone. A new EtcdDefrag is the retry.
	DefragFailed DefragPhase = "Failed"
)

// Terminal reports whether the phase never changes again.
func (p DefragPhase) Terminal() bool { return p == DefragComplete || p == DefragFailed }

// DefragThresholds say which members are worth defragmenting. A member is
// defragmented only when it passes every threshold that is set; with none
// set, every member is.
// +kubebuilder:validation:XValidation:rule="!has(self.minFreeBytes) || quantity(string(self.minFreeBytes)).isGreaterThan(quantity('0'))",message="minFreeBytes must be greater than 0"
type DefragThresholds struct {
	// minFragmentationPercent: the share of the member's database file
	// that is free, (dbSize - dbSizeInUse) / dbSize from etcd's status, must
	// be at least this.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=99
	MinFragmentationPercent *int32 `json:"minFragmentationPercent,omitempty"`

	// minFreeBytes: the free space in the member's database file,
	// dbSize - dbSizeInUse, which a defragmentation gives back, must be at
	// least this ("64Mi").
	// +optional
	MinFreeBytes *resource.Quantity `json:"minFreeBytes,omitempty"`
}

// EtcdDefragSpec is one defragmentation of an EtcdCluster's members. It is
// immutable.
type EtcdDefragSpec struct {
	// clusterRef names the EtcdCluster in the defrag's namespace.
	// +required
	ClusterRef corev1.LocalObjectReference `json:"clusterRef"`

	DefragThresholds `json:",inline"`
}

// DefragRole is a member's raft role when it was looked at.
// +kubebuilder:validation:Enum=Leader;Follower
type DefragRole string

const (
	DefragRoleLeader   DefragRole = "Leader"
	DefragRoleFollower DefragRole = "Follower"
)

// DefragOutcome is what happened to one member.
// +kubebuilder:validation:Enum=Defragmented;Skipped;Failed
type DefragOutcome string

const (
	// DefragOutcomeDefragmented: the member's database was rewritten.
	DefragOutcomeDefragmented DefragOutcome = "Defragmented"
	// DefragOutcomeSkipped: the member was under a threshold.
	DefragOutcomeSkipped DefragOutcome = "Skipped"
	// DefragOutcomeFailed: the defragment call failed; message says why.
	DefragOutcomeFailed DefragOutcome = "Failed"
)

// DefragMemberResult is the outcome for one member, recorded as soon as
// the member is done. The list is in the order the members were done.
type DefragMemberResult struct {
	// member is the EtcdMember's name.
	Member string `json:"member"`
	// memberID is the etcd member ID in hex (%016x).
	// +optional
	MemberID string `json:"memberID,omitempty"`
	// role of the member when it was defragmented (or skipped).
	Role DefragRole `json:"role"`
	// dbSizeBefore and dbSizeInUseBefore are from etcd's status just
	// before; their difference is what a defragmentation can give back.
	DBSizeBefore      int64 `json:"dbSizeBefore"`
	DBSizeInUseBefore int64 `json:"dbSizeInUseBefore"`
	// dbSizeAfter is the database file's size after the defragmentation.
	// +optional
	DBSizeAfter int64 `json:"dbSizeAfter,omitempty"`
	// outcome is Defragmented, Skipped or Failed.
	Outcome DefragOutcome `json:"outcome"`
	// message says why a member was skipped or failed.
	// +optional
	Message string `json:"message,omitempty"`
	// time the member was done.
	Time metav1.Time `json:"time"`
}

// EtcdDefragStatus is the observed state of an EtcdDefrag.
type EtcdDefragStatus struct {
	// phase is Pending, Running, Complete or Failed; the last two are final.
	// +optional
	Phase DefragPhase `json:"phase,omitempty"`

	// startedAt is when the first member was looked at; completedAt when
	// the phase became final.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`

	// defragmented counts the members with outcome Defragmented.
	// +optional
	Defragmented int32 `json:"defragmented,omitempty"`
	// reclaimedBytes sums dbSizeBefore - dbSizeAfter over them.
	// +optional
	ReclaimedBytes int64 `json:"reclaimedBytes,omitempty"`

	// members are the per-member results, in the order they were done:
	// followers first, the leader last.
	// +optional
	// +listType=map
	// +listMapKey=member
	Members []DefragMemberResult `json:"members,omitempty"`

	// conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Result returns the recorded result of the named member, or nil.
func (s *EtcdDefragStatus) Result(member string) *DefragMemberResult {
	for i := range s.Members {
		if s.Members[i].Member == member {
			return &s.Members[i]
		}
	}
	return nil
}

// EtcdDefrag is a one-shot defragmentation of an EtcdCluster's members, one
// member at a time, followers before the leader, made by the manager
// through etcd's Maintenance API.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=edefrag,categories=etcdfleet
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Defragmented",type=integer,JSONPath=`.status.defragmented`
// +kubebuilder:printcolumn:name="Reclaimed",type=integer,JSONPath=`.status.reclaimedBytes`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdDefrag struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable"
	Spec EtcdDefragSpec `json:"spec"`
	// +optional
	Status EtcdDefragStatus `json:"status,omitempty"`
}

// EtcdDefragList is a list of EtcdDefrag.
//
// +kubebuilder:object:root=true
type EtcdDefragList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdDefrag `json:"items"`
}

// DefragScheduleSpec (EtcdCluster spec.defrag) creates an EtcdDefrag of the
// cluster on a schedule. A run is not started while another EtcdDefrag of
// the cluster is unfinished; a missed run is made up once, not per miss.
// +kubebuilder:validation:XValidation:rule="has(self.cron) != has(self.interval)",message="exactly one of cron and interval must be set"
type DefragScheduleSpec struct {
	// cron is a standard five-field schedule ("30 3 * * 0"), in UTC.
	// +optional
	// +kubebuilder:validation:MinLength=9
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="!self.contains('TZ=')",message="cron is always in UTC: remove CRON_TZ= or TZ="
	Cron string `json:"cron,omitempty"`

	// interval between runs, for example "168h". Each cluster's runs start
	// at a fixed offset inside the interval, derived from its UID, so that
	// clusters created together do not defragment together.
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// thresholds of every scheduled EtcdDefrag.
	DefragThresholds `json:",inline"`

	// historyLimit is how many finished scheduled EtcdDefrags are kept;
	// older ones are deleted.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	HistoryLimit int32 `json:"historyLimit,omitempty"`

	// suspend stops new scheduled runs; a running one finishes.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// LabelDefragSchedule is put, with the value "true", on the EtcdDefrags that
// spec.defrag created; LabelCluster names their cluster.
const LabelDefragSchedule = GroupName + "/defrag-schedule"

// EtcdDefrag condition reasons (of ConditionReady).
const (
	// ReasonDefragWaiting (Ready=False): the cluster is missing, lacks
	// quorum, has an unhealthy or missing member, or an older EtcdDefrag of
	// it is unfinished; the message says which. Looked at again shortly.
	ReasonDefragWaiting = "WaitingForHealthyCluster"
	// ReasonDefragInProgress (Ready=False): a member was just done; the next
	// one follows.
	ReasonDefragInProgress = "Defragmenting"
	// ReasonDefragFailed (Ready=False, Failed): a member's defragmentation
	// failed.
	ReasonDefragFailed = "DefragFailed"
	// ReasonDefragDone (Ready=True, Complete).
	ReasonDefragDone = "Defragmented"
	// ReasonNoSpaceDisarmed (Normal Event on the EtcdDefrag): the run freed
	// space and cleared the cluster's NOSPACE alarms, so etcd takes writes
	// again.
	ReasonNoSpaceDisarmed = "NoSpaceAlarmDisarmed"
	// ReasonInvalidDefragSchedule (Warning Event on the EtcdCluster):
	// spec.defrag.cron does not parse.
	ReasonInvalidDefragSchedule = "InvalidDefragSchedule"
)

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(SchemeGroupVersion, &EtcdDefrag{}, &EtcdDefragList{})
		return nil
	})
}
