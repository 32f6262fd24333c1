package ui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// How an answer goes on the wire: gzip for a client that takes it, and
// the fleet page's validator (docs/page.md "On the wire").

// minGzip is the smallest body worth compressing: below it gzip's
// header and the work cost more than they save.
const minGzip = 1024

// renderFleet answers the fleet page p. It is the page's one answer that
// a browser may keep (Cache-Control: private, no-cache: kept, and asked
// again each time), so it carries an ETag: a digest of the body as sent
// but for the answer's script nonce. A request whose If-None-Match names
// it gets 304 without the body.
func (h *Handler) renderFleet(w http.ResponseWriter, r *http.Request, p fleetPage) {
	body, ok := h.execute("fleet.html", p)
	if !ok {
		h.send(w, r, http.StatusInternalServerError, body)
		return
	}
	body = withAccount(body, r)
	hdr := w.Header()
	tag := etagOf(body, p.Nonce)
	hdr.Set("ETag", tag)
	hdr.Set("Cache-Control", "private, no-cache")
	hdr.Add("Vary", "Accept-Encoding")
	if matchesETag(r.Header.Values("If-None-Match"), tag) {
		// The kept copy's Content-Security-Policy names the nonce its
		// script carries; one with this answer's new nonce would replace
		// it and block that script. A 304 without one leaves the kept one.
		hdr.Del("Content-Security-Policy")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.sendBody(w, r, http.StatusOK, body)
}

// etagOf is a weak validator of body without nonce (weak: the same for
// the gzipped and the plain bytes, which mean the same page).
func etagOf(body, nonce string) string {
	if nonce != "" {
		body = strings.ReplaceAll(body, nonce, "")
	}
	sum := sha256.Sum256([]byte(body))
	return `W/"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`
}

// matchesETag says whether an If-None-Match header names tag, by weak
// comparison (RFC 9110 §13.1.2), or is "*".
func matchesETag(headers []string, tag string) bool {
	want := strings.TrimPrefix(tag, "W/")
	for _, h := range headers {
		for _, t := range strings.Split(h, ",") {
			t = strings.TrimSpace(t)
			if t == "*" || strings.TrimPrefix(t, "W/") == want {
				return true
			}
		}
	}
	return false
}

// acceptsGzip says whether the request's Accept-Encoding takes gzip
// (named, with a q above 0).
func acceptsGzip(r *http.Request) bool {
	for _, h := range r.Header.Values("Accept-Encoding") {
		for _, part := range strings.Split(h, ",") {
			name, params, _ := strings.Cut(part, ";")
			if name = strings.TrimSpace(name); !strings.EqualFold(name, "gzip") && !strings.EqualFold(name, "x-gzip") {
				continue
			}
			q := 1.0
			for _, p := range strings.Split(params, ";") {
				k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
				if strings.EqualFold(k, "q") {
					if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
						q = f
					}
				}
			}
			return q > 0
		}
	}
	return false
}

var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

// sendBody writes body with status, gzipped when the client takes it and
// it is worth it. A HEAD gets the headers alone.
func (h *Handler) sendBody(w http.ResponseWriter, r *http.Request, status int, body string) {
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	if !strings.Contains(strings.Join(hdr.Values("Vary"), ","), "Accept-Encoding") {
		hdr.Add("Vary", "Accept-Encoding")
	}
	out := []byte(body)
	if len(out) >= minGzip && acceptsGzip(r) {
		var b bytes.Buffer
		zw := gzipWriters.Get().(*gzip.Writer)
		zw.Reset(&b)
		_, _ = zw.Write(out)
		if err := zw.Close(); err == nil {
			out = b.Bytes()
			hdr.Set("Content-Encoding", "gzip")
		}
		gzipWriters.Put(zw)
	}
	hdr.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(out)
	}
}
