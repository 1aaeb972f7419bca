package sandbox

import (
	"io"
	"net"
	"sync"
)

// apiProxy sits between clients of a sandbox cluster and its kube-apiserver
// so tests can make the apiserver hang or refuse connections without
// touching the control plane (the kubelet and controller-manager talk to the
// apiserver directly and keep the workload alive).
type apiProxy struct {
	target string

	mu    sync.Mutex
	addr  string
	ln    net.Listener
	mode  proxyMode
	conns map[net.Conn]struct{}
}

type proxyMode int

const (
	proxyNormal  proxyMode = iota
	proxyHung              // accept, never answer
	proxyRefused           // nothing listens
)

func newAPIProxy(target string) (*apiProxy, error) {
	p := &apiProxy{target: target, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.ln, p.addr = ln, ln.Addr().String()
	go p.serve(ln)
	return p, nil
}

func (p *apiProxy) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		mode := p.mode
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		if mode == proxyHung {
			go p.swallow(c)
			continue
		}
		go p.pipe(c)
	}
}

// swallow reads and discards: the client sees a server that never answers.
func (p *apiProxy) swallow(c net.Conn) {
	_, _ = io.Copy(io.Discard, c)
	p.forget(c)
}

func (p *apiProxy) pipe(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		p.forget(c)
		return
	}
	p.mu.Lock()
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	p.forget(c)
	p.forget(up)
}

func (p *apiProxy) forget(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// closeAll drops every proxied connection.
func (p *apiProxy) closeAll() {
	p.mu.Lock()
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// setMode switches behaviour; existing connections are dropped so that no
// request in flight sneaks through a hang or a partition.
func (p *apiProxy) setMode(m proxyMode) error {
	p.mu.Lock()
	old := p.mode
	p.mode = m
	ln := p.ln
	p.mu.Unlock()
	if old == m {
		return nil
	}
	switch {
	case m == proxyRefused:
		ln.Close()
	case old == proxyRefused:
		nl, err := net.Listen("tcp", p.addr)
		if err != nil {
			return err
		}
		p.mu.Lock()
		p.ln = nl
		p.mu.Unlock()
		go p.serve(nl)
	}
	if m != proxyNormal {
		p.closeAll()
	}
	return nil
}

func (p *apiProxy) close() {
	p.mu.Lock()
	ln := p.ln
	p.mode = proxyRefused
	p.mu.Unlock()
	ln.Close()
	p.closeAll()
}
