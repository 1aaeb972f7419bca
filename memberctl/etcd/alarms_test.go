package etcd

import (
	"reflect"
	"testing"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
)

// The text comes from etcd's own type, so a change of its format in a
// new etcd release fails here rather than hiding every alarm.
func TestAlarmsOfReadsEtcdsOwnText(t *testing.T) {
	nospace := (&etcdserverpb.AlarmMember{MemberID: 10501334649042878790, Alarm: etcdserverpb.AlarmType_NOSPACE}).String()
	corrupt := (&etcdserverpb.AlarmMember{MemberID: 7, Alarm: etcdserverpb.AlarmType_CORRUPT}).String()
	got := alarmsOf([]string{"etcdserver: no leader", nospace, corrupt, "garbage alarm:"})
	want := []Alarm{{Type: "NOSPACE", MemberID: 10501334649042878790}, {Type: "CORRUPT", MemberID: 7}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("alarmsOf = %+v, want %+v (from %q and %q)", got, want, nospace, corrupt)
	}
	if got := alarmsOf(nil); got != nil {
		t.Fatalf("no errors, no alarms: got %+v", got)
	}
}
