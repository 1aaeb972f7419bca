package etcd

import (
	"regexp"
	"strconv"
)

// alarmText matches an alarm in a Status response's errors. etcd lists
// each active alarm there as its AlarmMember in protobuf text form
// ("memberID:10501334649042878790 alarm:NOSPACE "), beside "etcdserver: no
// leader". Reading them from Status spares an AlarmList, which etcd serves
// as a raft proposal: one per cluster per look would be a write path for a
// read.
var alarmText = regexp.MustCompile(`memberID:(\d+)\s+alarm:([A-Z]+)`)

// alarmsOf picks the alarms out of a Status response's errors; anything
// else there is not an alarm and is left out.
func alarmsOf(errs []string) []Alarm {
	var out []Alarm
	for _, e := range errs {
		m := alarmText.FindStringSubmatch(e)
		if m == nil || m[2] == "NONE" {
			continue
		}
		id, err := strconv.ParseUint(m[1], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, Alarm{Type: m[2], MemberID: id})
	}
	return out
}

// DefaultQuotaBytes is etcd's backend quota when --quota-backend-bytes is
// not set (storage.DefaultQuotaBytes, 2 GiB): what a member older than 3.6,
// which does not report its quota, enforces by default.
const DefaultQuotaBytes int64 = 2 << 30
