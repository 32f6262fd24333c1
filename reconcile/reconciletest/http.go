package reconciletest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile"
)

// HTTP serves a fake runtime's bridges over loopback HTTP at
// /b/{id}/v1/…, the bridge contract's status, events and prompts, with
// their tokens checked: a pass reaches them with the real client
// (reconcile.DialHTTP) and pays for encoding, the network and decoding as
// with real bridges.
type HTTP struct {
	rt *Runtime
	ts *httptest.Server

	mu   sync.Mutex
	last *http.Transport
}

// NewHTTP starts the server; Close stops it.
func NewHTTP(rt *Runtime) *HTTP {
	h := &HTTP{rt: rt}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /b/{id}/v1/status", func(w http.ResponseWriter, r *http.Request) {
		if br := h.auth(w, r); br != nil {
			st, err := br.Status(r.Context())
			reply(w, st, err)
		}
	})
	mux.HandleFunc("GET /b/{id}/v1/events", func(w http.ResponseWriter, r *http.Request) {
		if br := h.auth(w, r); br != nil {
			after, _ := strconv.ParseUint(r.URL.Query().Get("after"), 10, 64)
			limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
			evs, err := br.Events(r.Context(), after, limit, 0)
			reply(w, evs, err)
		}
	})
	mux.HandleFunc("POST /b/{id}/v1/prompts", func(w http.ResponseWriter, r *http.Request) {
		if br := h.auth(w, r); br != nil {
			var p bridge.PromptRequest
			if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
				writeBridgeError(w, http.StatusBadRequest, err)
				return
			}
			a, err := br.Prompt(r.Context(), p)
			reply(w, a, err)
		}
	})
	h.ts = httptest.NewServer(mux)
	return h
}

func (h *HTTP) auth(w http.ResponseWriter, r *http.Request) *Bridge {
	id := r.PathValue("id")
	ep, err := h.rt.Bridge(r.Context(), id)
	if err != nil {
		writeBridgeError(w, http.StatusNotFound, err)
		return nil
	}
	if r.Header.Get("Authorization") != "Bearer "+ep.Token {
		writeBridgeError(w, http.StatusUnauthorized, errors.New("bad token"))
		return nil
	}
	return h.rt.BridgeOf(id)
}

func reply(w http.ResponseWriter, v any, err error) {
	switch {
	case errors.Is(err, bridge.ErrAhead):
		writeBridgeError(w, http.StatusConflict, err)
	case err != nil:
		writeBridgeError(w, http.StatusServiceUnavailable, err)
	default:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
}

func writeBridgeError(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(bridge.ErrorBody{Error: err.Error()})
}

// Runtime is the fake runtime with endpoints on the HTTP server, and a
// client with a connection pool of its own (the previous pass's closed),
// as each command's process has.
func (h *HTTP) Runtime() reconcile.Runtime {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last != nil {
		h.last.CloseIdleConnections()
	}
	h.last = &http.Transport{MaxIdleConnsPerHost: 64}
	return &httpRuntime{Runtime: h.rt, base: h.ts.URL, client: &http.Client{Transport: h.last}}
}

// Close stops the server.
func (h *HTTP) Close() {
	h.mu.Lock()
	if h.last != nil {
		h.last.CloseIdleConnections()
	}
	h.mu.Unlock()
	h.ts.Close()
}

type httpRuntime struct {
	*Runtime
	base   string
	client *http.Client
}

func (r *httpRuntime) Bridge(ctx context.Context, id string) (reconcile.BridgeEndpoint, error) {
	ep, err := r.Runtime.Bridge(ctx, id)
	if err != nil {
		return ep, err
	}
	return reconcile.BridgeEndpoint{BaseURL: r.base + "/b/" + id, Token: ep.Token, Client: r.client}, nil
}
