package sandboxdns

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"

	"golang.org/x/net/dns/dnsmessage"
)

// EnvHostsFile names the hosts file that InstallFromEnv reads.
const EnvHostsFile = "SANDBOX_HOSTS_FILE"

// InstallFromEnv installs the resolver when $SANDBOX_HOSTS_FILE is set.
func InstallFromEnv() {
	if path := os.Getenv(EnvHostsFile); path != "" {
		Install(path)
	}
}

// Install makes every lookup through net.DefaultResolver answer from path.
// It must run before anything resolves a name.
func Install(path string) {
	net.DefaultResolver.PreferGo = true
	net.DefaultResolver.Dial = func(context.Context, string, string) (net.Conn, error) {
		client, server := net.Pipe()
		go serve(server, path)
		return client, nil
	}
}

// serve answers framed queries on conn until the client closes it.
func serve(conn net.Conn, path string) {
	defer conn.Close()
	for {
		var size [2]byte
		if _, err := io.ReadFull(conn, size[:]); err != nil {
			return
		}
		query := make([]byte, binary.BigEndian.Uint16(size[:]))
		if _, err := io.ReadFull(conn, query); err != nil {
			return
		}
		reply, err := answer(query, path)
		if err != nil {
			return
		}
		if _, err := conn.Write(reply); err != nil {
			return
		}
	}
}

// answer builds a framed reply to one query.
func answer(query []byte, path string) ([]byte, error) {
	var p dnsmessage.Parser
	hdr, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	addrs, known := lookup(path, q.Name.String())
	// Authoritative and RecursionAvailable stop Go from reading an empty
	// NOERROR (an AAAA query for an IPv4-only name) as a lame referral.
	rh := dnsmessage.Header{ID: hdr.ID, Response: true, Authoritative: true, RecursionAvailable: true}
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(make([]byte, 2, 514), rh)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	rr := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 1}
	for _, a := range addrs {
		switch {
		case q.Type == dnsmessage.TypeA && a.Is4():
			err = b.AResource(rr, dnsmessage.AResource{A: a.As4()})
		case q.Type == dnsmessage.TypeAAAA && a.Is6() && !a.Is4In6():
			err = b.AAAAResource(rr, dnsmessage.AAAAResource{AAAA: a.As16()})
		}
		if err != nil {
			return nil, err
		}
	}
	msg, err := b.Finish()
	if err != nil {
		return nil, err
	}
	binary.BigEndian.PutUint16(msg, uint16(len(msg)-2))
	return msg, nil
}

// lookup reads path and returns the addresses listed for name.
func lookup(path, name string) ([]netip.Addr, bool) {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	var addrs []netip.Addr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		addr, err := netip.ParseAddr(fields[0])
		if err != nil {
			continue
		}
		for _, h := range fields[1:] {
			if strings.EqualFold(h, name) {
				addrs = append(addrs, addr)
			}
		}
	}
	return addrs, len(addrs) > 0
}

// Lookup returns the addresses the resolver would answer for name from
// the hosts file at path (nil when unknown); for tests and diagnostics.
func Lookup(path, name string) []netip.Addr {
	addrs, _ := lookup(path, name)
	return addrs
}
