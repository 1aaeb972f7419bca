package pacing_test

import (
	"io"
	"net"
	"net/url"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/etcdfleet/etcdfleet/test/sandbox/objstore"
)

// slowS3Delay is how long the slow endpoint holds each new connection
// before it reaches the object store. A snapshot Pod of the suite's tiny
// etcd otherwise ends in a few hundred milliseconds, so ten snapshots
// asked within a second or two could run one after the other without
// ever reaching snapshots.maxConcurrent (CI once saw at most 1 of 3 at
// once): a pacing check that proves nothing. Held this long, every Pod
// outlives the spread of asks made together, so the limit is reached.
// It stays well below the agent's 5 s connect and first-byte limits.
const slowS3Delay = 2 * time.Second

// startSlowS3 serves the object store on another port of its loopback
// address (which the workload policy admits as an S3 endpoint), holding
// every connection slowS3Delay before forwarding it. It is never closed:
// snapshots keep their endpoint, and their cleanup Jobs may reach it
// after the spec that made them.
func startSlowS3() string {
	GinkgoHelper()
	target, err := url.Parse(s3.Endpoint)
	Expect(err).NotTo(HaveOccurred())
	ln, err := net.Listen("tcp", objstore.IP+":0")
	Expect(err).NotTo(HaveOccurred())
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go forwardLate(c, target.Host)
		}
	}()
	return "http://" + ln.Addr().String()
}

// forwardLate waits slowS3Delay, then copies c to and from host.
func forwardLate(c net.Conn, host string) {
	defer c.Close()
	time.Sleep(slowS3Delay)
	up, err := net.Dial("tcp", host)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// Half-close, so that the other side sees the end of the request
		// or response, as it would on a direct connection.
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
}
