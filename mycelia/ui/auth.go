package ui

import "net/http"

// authRoutes registers the operator login's pages.
func (h *Handler) authRoutes(m *http.ServeMux) {}
