package ui

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile/outbox"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// DefaultWakeWait is Handler.WakeWait's default: long enough for a local
// spore to come up, short enough for a browser to wait.
const DefaultWakeWait = 15 * time.Second

// maxPromptForm bounds the prompt box's body: the text URL-encoded (at
// most three bytes per byte) and the other fields.
const maxPromptForm = 3*bridge.MaxPromptBytes + 4<<10

// promptBox is what the prompt box of a spore page needs.
type promptBox struct {
	// Action is where the form posts; "" draws no box (a page rendered
	// without a request, as the static export does).
	Action string
	CSRF   string
	// From is who the prompt is sent as.
	From string
	// Asleep: the spore's desired state is not Running, so a prompt needs
	// "wake it"; not for one a budget put to sleep, which takes every
	// message (docs/budgets.md "Waking").
	Asleep  bool
	Desired string
	// Over is the budget the spore has reached today, in words ("24/20
	// tokens today", "colony lab: $2.10/$2.00 today"; outbox.OverBudgetNow),
	// "" within it. Then the box offers "deliver even though over budget".
	Over string
	// MaxBytes is the cap on the text.
	MaxBytes int
	Nonce    string
}

// promptBox is the box for sp, over the budget over (sporePage.Over).
func (h *Handler) promptBox(r *http.Request, sp state.Spore, over string) promptBox {
	a, ok := accessOf(r)
	if !ok || a.CSRF == "" {
		return promptBox{}
	}
	asleep := !policy.TakesEveryMessage(sp)
	return promptBox{Action: sporeHref(sp.ID) + "/prompt", CSRF: a.CSRF, From: h.sender(a),
		Asleep: asleep, Desired: string(sp.Desired), Over: over, MaxBytes: bridge.MaxPromptBytes, Nonce: nonceOf(r)}
}

func (h *Handler) promptRoutes(m pageMux) {
	m.HandleFunc("POST /ui/spores/{id}/prompt", h.postPrompt)
}

// postPrompt is POST /ui/spores/{id}/prompt: the prompt box. It goes the
// way of `sporectl prompt`: outbox.Send records the prompt (the event
// and the outbox entry, in one transaction), then Pass.Deliver posts it,
// and whatever that does not finish the next reconcile does. Everything
// is checked before anything is written: where the form came from, its
// CSRF token, the text; a sleeping spore without "wake it" is refused
// (409). A spore over its budget gets the prompt only with "deliver even
// though over budget" (over_budget: Message.OverBudget, an operator's
// decision as `prompt --over-budget` is); without it the prompt is
// queued and the answer is 409. It answers 303 to the spore's page
// (post/redirect/get).
func (h *Handler) postPrompt(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	if state.ValidateID(id) != nil {
		h.error(w, r, http.StatusNotFound, "no such spore")
		return
	}
	a, _ := accessOf(r)
	if err := checkOrigin(r); err != nil {
		h.error(w, r, http.StatusForbidden, err.Error())
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxPromptForm)
	if err := parseForm(r); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.error(w, r, http.StatusRequestEntityTooLarge, "the prompt is too long: at most 256 KiB")
			return
		}
		h.error(w, r, http.StatusBadRequest, "the form could not be read: "+err.Error())
		return
	}
	if err := checkCSRF(r, a); err != nil {
		h.error(w, r, http.StatusForbidden, err.Error())
		return
	}
	// A textarea sends CRLF line ends; the terminal's prompt has LF.
	text := strings.ReplaceAll(r.PostForm.Get("text"), "\r\n", "\n")
	// The one check every text passes (what a bridge takes).
	if e := bridge.CheckText(text, bridge.MaxPromptBytes); e != nil {
		if e.Problem == bridge.TextTooLarge {
			h.error(w, r, http.StatusRequestEntityTooLarge, "the prompt is too long: at most 256 KiB")
			return
		}
		h.error(w, r, http.StatusBadRequest, e.Of("the prompt"))
		return
	}
	// The bound holds for what the bridge is given: the text with each
	// "[from" rewritten, which can be longer (outbox.CheckFramed).
	if e := outbox.CheckFramed(outbox.Message{To: id, Kind: state.KindPrompt, Text: text}); e != nil {
		h.error(w, r, http.StatusRequestEntityTooLarge, framedTooLong(e))
		return
	}
	wake := r.PostForm.Get("wake") != ""
	// Every login of the page is an operator's: theirs to decide.
	overBudget := r.PostForm.Get("over_budget") != ""
	from := h.sender(a)
	// The operator's name stays in the store (From): a person's prompt has
	// no Mark, and Send rewrites a mark-shaped part of the text.
	entry, err := outbox.Send(ctx, h.Store, outbox.Message{To: id, From: from, Kind: state.KindPrompt, Text: text, Wake: wake, OverBudget: overBudget}, h.now())
	var asleep *outbox.AsleepError
	var over *outbox.OverBudgetError
	var tooLarge *outbox.TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		h.error(w, r, http.StatusRequestEntityTooLarge, framedTooLong(tooLarge))
		return
	case errors.As(err, &over):
		// Recorded: sent again with the box ticked, it would be there twice.
		h.error(w, r, http.StatusConflict, "spore "+id+" is over budget ("+over.Over+"): the prompt is queued and is delivered the next UTC day or once its budget is raised. "+
			"To deliver a prompt now, tick \"deliver even though over budget\" and send it (this one stays queued).")
		return
	case errors.As(err, &asleep):
		h.error(w, r, http.StatusConflict, "spore "+id+" is asleep (desired "+string(asleep.Desired)+"): nothing was sent. Tick \"wake it if asleep\" to wake it and deliver.")
		return
	case errors.Is(err, state.ErrNotFound):
		h.error(w, r, http.StatusNotFound, "no such spore")
		return
	case err != nil:
		h.internal(w, r, err)
		return
	}
	h.logger().Info("ui: prompt sent", "spore", id, "prompt", entry.ID, "from", from, "wake", wake, "over_budget", overBudget)
	if h.Pass != nil {
		// As `sporectl prompt`: one try for an awake spore; a woken one is
		// given WakeWait to come up. What is not delivered now stays in the
		// outbox for the next pass, so a failure here is only logged.
		wait := time.Duration(0)
		// Woken: by the box, or idle-slept in a colony that wakes on a
		// message (Send marks the entry).
		wake := entry.Wake
		if wake {
			wait = h.WakeWait
			if wait <= 0 {
				wait = DefaultWakeWait
			}
		}
		d, err := h.Pass.Deliver(ctx, entry, wake, wait)
		if err != nil {
			h.logger().Warn("ui: prompt left in the outbox", "spore", id, "prompt", entry.ID, "err", err)
		} else {
			h.logger().Info("ui: prompt delivery", "spore", id, "prompt", entry.ID, "state", d.State, "position", d.Position, "detail", d.Detail)
		}
	}
	http.Redirect(w, r, sporeHref(id), http.StatusSeeOther)
}

// framedTooLong is the page's refusal of a prompt whose text is within
// the bound but not once its marks are rewritten.
func framedTooLong(e *outbox.TooLargeError) string {
	return fmt.Sprintf("the prompt is too long: at most 256 KiB as the agent reads it, where each \"[from\" becomes %q (this one would be %d bytes); nothing was sent", outbox.Quoted, e.Framed)
}
