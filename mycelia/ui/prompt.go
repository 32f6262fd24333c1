package ui

import (
	"net/http"

	"github.com/sporectl/sporectl/state"
)

// promptBox is what the prompt box of a spore page needs.
type promptBox struct{}

func (h *Handler) promptBox(r *http.Request, sp state.Spore) promptBox { return promptBox{} }
