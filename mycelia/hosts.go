package mycelia

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// Bounds of GET /api/mycologist/hosts/{name}/logs. Its text is at most
// reconcile.MaxHostLogBytes.
const (
	DefaultHostTail = 100
	MaxHostTail     = 5000
)

// HostLogs answers GET /api/mycologist/hosts/{name}/logs?tail=N.
type HostLogs struct {
	Name  string `json:"name"`
	Spore string `json:"spore,omitempty"`
	Tail  int    `json:"tail"`
	Text  string `json:"text"`
	// Cut: the text was cut to reconcile.MaxHostLogBytes.
	Cut bool `json:"cut,omitempty"`
}

// CodeNotImplemented: the store's runtime offers no hosts (501).
const CodeNotImplemented = "not_implemented"

// hostRuntime is the store's runtime, built as a pass builds it, when it
// offers hosts.
func (s *Server) hostRuntime(ctx context.Context) (reconcile.HostRuntime, error) {
	var settings state.Settings
	err := s.Store.View(ctx, func(tx state.Tx) error {
		var err error
		settings, err = tx.Settings(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	rt, err := s.Pass.Runtime(ctx, settings)
	if err != nil {
		s.logger().Warn("hosts: build the runtime", "err", err)
		return nil, errorf(http.StatusServiceUnavailable, CodeUnavailable, "the runtime cannot be reached now; try again")
	}
	hr, ok := rt.(reconcile.HostRuntime)
	if !ok {
		return nil, errorf(http.StatusNotImplemented, CodeNotImplemented, "the %s runtime does not list its hosts", settings.Runtime)
	}
	return hr, nil
}

// hosts: GET /api/mycologist/hosts — sporectl's own pods or processes.
func (s *Server) hosts(c *call) (int, any, error) {
	hr, err := s.hostRuntime(c.ctx())
	if err != nil {
		return 0, nil, err
	}
	l, err := hr.Hosts(c.ctx())
	if err != nil {
		s.logger().Warn("hosts: list", "err", err)
		return 0, nil, errorf(http.StatusServiceUnavailable, CodeUnavailable, "the runtime could not list its hosts now; try again")
	}
	if l.Hosts == nil {
		l.Hosts = []reconcile.Host{}
	}
	return http.StatusOK, l, nil
}

// hostLogs: GET /api/mycologist/hosts/{name}/logs?tail=N — the last lines
// of one host's runtime log. A name that is not one of sporectl's hosts
// is 404 without detail.
func (s *Server) hostLogs(c *call) (int, any, error) {
	tail := DefaultHostTail
	if v, ok := c.r.URL.Query()["tail"]; ok {
		n, err := strconv.Atoi(strings.Join(v, ","))
		if err != nil || n < 1 || n > MaxHostTail {
			return 0, nil, errorf(http.StatusBadRequest, CodeBadRequest, "tail must be a number from 1 to %d", MaxHostTail)
		}
		tail = n
	}
	notFound := errorf(http.StatusNotFound, CodeNotFound, "not found")
	hr, err := s.hostRuntime(c.ctx())
	if err != nil {
		return 0, nil, err
	}
	l, err := hr.Hosts(c.ctx())
	if err != nil {
		s.logger().Warn("host-logs: list", "err", err)
		return 0, nil, errorf(http.StatusServiceUnavailable, CodeUnavailable, "the runtime could not list its hosts now; try again")
	}
	var host *reconcile.Host
	for i := range l.Hosts {
		if h := &l.Hosts[i]; h.Name == c.id || (h.Spore != "" && h.Spore == c.id) {
			host = h
			break
		}
	}
	if host == nil {
		return 0, nil, notFound
	}
	text, err := hr.HostLogs(c.ctx(), host.Name, tail)
	if errors.Is(err, state.ErrNotFound) {
		return 0, nil, notFound
	}
	if err != nil {
		s.logger().Warn("host-logs: read", "host", host.Name, "err", err)
		return 0, nil, errorf(http.StatusServiceUnavailable, CodeUnavailable, "the logs of %s cannot be read now; try again", host.Name)
	}
	res := HostLogs{Name: host.Name, Spore: host.Spore, Tail: tail}
	res.Text, res.Cut = reconcile.TailText(text, tail, reconcile.MaxHostLogBytes)
	return http.StatusOK, res, nil
}
