// Package sandboxdns answers DNS queries in process from a hosts-style file, so
// that real etcd members in the sandbox can use Kubernetes DNS names
// (<pod>.<subdomain>.<ns>.svc[.cluster.local]) on loopback IPs without
// touching /etc/hosts and without a DNS server.
//
// # Setup
//
// The sandbox's etcd binary is etcdmain.Main wrapped by a main that calls
// InstallFromEnv first; the file is named by $SANDBOX_HOSTS_FILE. Each sandbox
// cluster has its own file, written with Hosts.Set as Pods get their IPs.
//
// # Implementation details
//
// Install replaces net.DefaultResolver's Dial with an in-memory pipe served by
// a tiny DNS responder. A pipe is a stream connection, so Go's resolver uses
// TCP framing (a 2-byte length prefix). PreferGo is forced because a cgo
// resolver would ignore Dial. The file is re-read on every query so a new
// Pod is visible at once; Hosts writes it atomically (temp file + rename) so
// a query never sees half a file. Unknown names get NXDOMAIN at once, which
// lets the resolver move on through resolv.conf search domains.
package sandboxdns
