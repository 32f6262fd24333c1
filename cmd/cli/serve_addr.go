package cli

import (
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/state"
)

// checkListenAddr refuses an --addr serve could never listen on, before
// it tries (exit 2, not 15: the command line is wrong, nothing is taken):
// not host:port, a port that is no number from 0 to 65535, a host that is
// neither an IP address nor a host name. It returns the host.
func checkListenAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", usageErrorf("invalid value %s for --addr: want host:port, e.g. 127.0.0.1:7070: %v", quote.Value(addr), err)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || strconv.FormatUint(n, 10) != port {
		return "", usageErrorf("invalid value %s for --addr: the port must be a number from 0 to 65535", quote.Value(addr))
	}
	if host != "" && net.ParseIP(host) == nil && !isHostName(host) {
		return "", usageErrorf("invalid value %s for --addr: %s is neither an IP address nor a host name", quote.Value(addr), quote.Value(host))
	}
	return host, nil
}

// isHostName: dot-separated labels of letters, digits and dashes, none
// empty or longer than 63 bytes, 253 bytes at most (RFC 1123).
func isHostName(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// apiURLMismatch says why spores could not reach serve listening on
// listen (the listener's address, its real port) with or without TLS,
// when the store's settings tell them another address; "" when they
// can, or when no comparison would be fair. Only the local runtime is
// judged: its spores dial the URL as written, on this machine, while on
// Kubernetes a Service (the default api-url, port 80) stands between
// them and serve's port. Compared: the scheme (https exactly when serve
// has TLS); the port (the URL's, else its scheme's); and the host, unless
// serve listens on every interface (""/0.0.0.0/::), which answers any host
// of the machine — equal names (in any case), or two loopback hosts
// (localhost and 127.0.0.1 reach the same serve), match.
func apiURLMismatch(s state.Settings, listen string, tls bool) string {
	if s.Runtime != "local" {
		return ""
	}
	api := s.APIURL
	if api == "" {
		api = "http://" + defaultServeAddr
	}
	u, err := url.Parse(api)
	if err != nil || u.Host == "" {
		return "it is not a URL"
	}
	lhost, lport, err := net.SplitHostPort(listen)
	if err != nil {
		return ""
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	if u.Scheme != scheme {
		return "its scheme is " + u.Scheme + ", serve speaks " + scheme
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if port != lport {
		return "its port is " + port + ", serve listens on " + lport
	}
	if ip := net.ParseIP(lhost); lhost == "" || ip != nil && ip.IsUnspecified() {
		return ""
	}
	host := u.Hostname()
	if strings.EqualFold(host, lhost) || isLoopback(host) && isLoopback(lhost) {
		return ""
	}
	return "its host is " + host + ", serve listens on " + lhost + " only"
}
