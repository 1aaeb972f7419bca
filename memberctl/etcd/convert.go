package etcd

import "go.etcd.io/etcd/api/v3/etcdserverpb"

type memberpb = etcdserverpb.Member

func convert(in []*memberpb) []Member {
	out := make([]Member, 0, len(in))
	for _, m := range in {
		if m == nil {
			continue
		}
		out = append(out, Member{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.IsLearner})
	}
	return out
}

// FindMember returns the member with name or peer URL, if any. A member
// added but never started has no name yet, hence the URL.
func FindMember(members []Member, name, peerURL string) (Member, bool) {
	for _, m := range members {
		if name != "" && m.Name == name {
			return m, true
		}
		for _, u := range m.PeerURLs {
			if u == peerURL {
				return m, true
			}
		}
	}
	return Member{}, false
}
