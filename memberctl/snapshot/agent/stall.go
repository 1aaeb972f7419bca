package agent

import (
	"crypto/x509"
	"net"
	"net/http"
	"time"

	"github.com/minio/minio-go/v7"
)

// DefaultStallTimeout ends a transfer with object storage that moved no
// byte either way for this long. A healthy store, even over a slow link,
// moves bytes every second; one that accepts a connection and then stops
// reading or answering (overloaded, or a tarpit a snapshot's location
// points at) would otherwise keep the run, and the fleet-wide snapshot
// slot it holds, until the whole run's timeout (25 min): with a fleet-wide
// backup template, every cluster's snapshot at once, and every slot of the
// fleet with them.
const DefaultStallTimeout = time.Minute

// s3Retries is how many times a request to object storage is tried:
// minio-go's default of 10 would make a stalled store cost ten stall
// timeouts; three ride out a store's brief hiccup.
const s3Retries = 3

// stallTransport is minio's default transport whose connections fail a
// read or write that makes no progress within stall, and whose every
// stage is bounded by lim (meteredTransport, dialer).
// With roots, only they verify the store's certificate (a private CA).
func stallTransport(secure bool, stall time.Duration, lim S3Limits, roots *x509.CertPool) (http.RoundTripper, error) {
	t, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, err
	}
	d := dialer{lim: lim, stall: stall}
	t.DialContext = d.dial
	if secure {
		if roots != nil {
			t.TLSClientConfig.RootCAs = roots
		}
		d.tls = t.TLSClientConfig
		t.DialTLSContext = d.dialTLS
		// Through a proxy the transport does the handshake itself.
		t.TLSHandshakeTimeout = lim.ConnectTimeout
	}
	// meteredTransport times the first byte itself, naming the stage.
	t.ResponseHeaderTimeout = 0
	return meteredTransport{next: t, lim: lim}, nil
}

// progressConn sets a fresh deadline before every read and write, so that
// each one must move a byte within stall: a slow but live transfer goes
// on, a stalled one fails.
type progressConn struct {
	net.Conn
	stall time.Duration
}

func (c *progressConn) Read(p []byte) (int, error) {
	_ = c.Conn.SetReadDeadline(time.Now().Add(c.stall))
	return c.Conn.Read(p)
}

func (c *progressConn) Write(p []byte) (int, error) {
	_ = c.Conn.SetWriteDeadline(time.Now().Add(c.stall))
	return c.Conn.Write(p)
}
