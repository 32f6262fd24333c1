package mycelia

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/sporectl/sporectl/bridge/streamjson"
	"github.com/sporectl/sporectl/state"
)

// Collisions, deploys and reports (docs/mycologists.md): what the spores
// in a mycologist's reach did, derived from the tool calls ingested into
// the store (so a sleeping spore counts too) and from the reports spores
// write into their own logs. Nothing here asks a bridge.

// Bounds of an activity scan.
const (
	// DefaultWindow is how far back collisions and deploys look.
	DefaultWindow = 24 * time.Hour
	// MaxWindow bounds ?window=.
	MaxWindow = 7 * 24 * time.Hour
	// ScanPage is how many events one read takes, from the end of a log
	// backwards.
	ScanPage = 512
	// MaxScanEvents bounds the events read from one spore's log per
	// request, whatever the window: a spore whose window holds more is
	// reported in "cut", and its oldest activity in the window is missed.
	MaxScanEvents = 20000
)

// Report kinds and the actions of their events.
const (
	ReportPush   = "push"
	ReportDeploy = "deploy"
	// ReportActionPrefix starts the action of a report's lifecycle event
	// in the reporter's log: "report-push", "report-deploy",
	// "report-push-failed", "report-deploy-failed".
	ReportActionPrefix = "report-"
)

// ReportRequest is the body of POST /api/mycologist/report.
type ReportRequest struct {
	// Kind is "push" or "deploy".
	Kind   string `json:"kind"`
	Failed bool   `json:"failed,omitempty"`
	Text   string `json:"text"`
}

// ReportResponse answers it (201).
type ReportResponse struct {
	Spore  string `json:"spore"`
	Seq    uint64 `json:"seq"`
	Action string `json:"action"`
}

// Collision is one file edited by several spores in the window.
type Collision struct {
	// Path is relative to each spore's working directory when it was
	// under it (from Claude Code's init line), else as the tool got it.
	Path   string     `json:"path"`
	Spores []FileEdit `json:"spores"`
}

// FileEdit is one spore's edits of a file in the window.
type FileEdit struct {
	ID      string    `json:"id"`
	Edits   int       `json:"edits"`
	FirstAt time.Time `json:"first_at"`
	LastAt  time.Time `json:"last_at"`
}

// CollisionList answers GET /api/mycologist/collisions.
type CollisionList struct {
	Since time.Time   `json:"since"`
	Files []Collision `json:"files"`
	// Cut names the spores whose scan stopped at MaxScanEvents before
	// reaching Since.
	Cut []string `json:"cut,omitempty"`
}

// Deploy is one push or deploy, from a tool call or a report.
type Deploy struct {
	Spore string    `json:"spore"`
	At    time.Time `json:"at"`
	Seq   uint64    `json:"seq"`
	// Kind is "push" or "deploy"; Source "tool" (a Bash call) or
	// "report" (`mycologist report`).
	Kind   string `json:"kind"`
	Source string `json:"source"`
	// Failed: the tool call's result was an error, or the report said so.
	Failed bool `json:"failed,omitempty"`
	// What is the command, or the report's text.
	What string `json:"what"`
}

// DeployList answers GET /api/mycologist/deploys.
type DeployList struct {
	Since   time.Time `json:"since"`
	Deploys []Deploy  `json:"deploys"`
	Cut     []string  `json:"cut,omitempty"`
}

// editTools are the tools whose FilePath is an edit.
var editTools = map[string]bool{"Edit": true, "Write": true, "MultiEdit": true, "NotebookEdit": true}

// Command patterns of Bash calls (docs/mycologists.md "Deploys").
var (
	pushPattern    = regexp.MustCompile(`(?:^|[\s;&|(])git\s+(?:(?:-C|-c)\s+\S+\s+|--?[a-zA-Z][\w-]*(?:=\S+)?\s+)*push(?:\s|$)`)
	deployPatterns = []*regexp.Regexp{
		regexp.MustCompile(`(?:^|[\s;&|(])kubectl\s+(?:[^;&|\n]*\s)?(?:apply|set\s+image|rollout\s+restart)(?:\s|$)`),
		regexp.MustCompile(`(?:^|[\s;&|(])helm\s+(?:[^;&|\n]*\s)?(?:install|upgrade)(?:\s|$)`),
		regexp.MustCompile(`(?:^|[\s;&|(])(?:terraform|tofu)\s+(?:[^;&|\n]*\s)?apply(?:\s|$)`),
		regexp.MustCompile(`(?:^|[\s;&|(])make\s+(?:[^;&|\n]*\s)?deploy[\w.-]*(?:\s|$)`),
		regexp.MustCompile(`(?:^|[\s;&|(])(?:fly|flyctl|gcloud\s+(?:[^;&|\n]*\s)?|vercel|netlify|railway|heroku)\s*deploy(?:\s|$)`),
		regexp.MustCompile(`(?:^|[\s;&|(])vercel\s+(?:[^;&|\n]*\s)?--prod(?:\s|$)`),
		regexp.MustCompile(`(?:^|[;&|(]\s*|^\s*)(?:\S*/)?deploy(?:\.sh)?(?:\s|$)`),
	}
)

// commandKind is "push", "deploy" or "" for a Bash command.
func commandKind(cmd string) string {
	if pushPattern.MatchString(cmd) {
		return ReportPush
	}
	for _, p := range deployPatterns {
		if p.MatchString(cmd) {
			return ReportDeploy
		}
	}
	return ""
}

// window reads ?window= (a Go duration, up to MaxWindow).
func window(c *call) (time.Duration, error) {
	v, ok := c.r.URL.Query()["window"]
	if !ok {
		return DefaultWindow, nil
	}
	d, err := time.ParseDuration(strings.Join(v, ","))
	if err != nil || d <= 0 || d > MaxWindow {
		return 0, errorf(http.StatusBadRequest, CodeBadRequest, "window must be a duration such as 24h, more than 0 and at most %s", MaxWindow)
	}
	return d, nil
}

// scanBound is MaxScanEvents (tests lower it).
var scanBound = MaxScanEvents

// recentEvents is the spore's events at or after since, oldest first,
// read from the end of its log in pages of ScanPage and never more than
// MaxScanEvents of them; cut says the bound stopped it before since.
func recentEvents(ctx context.Context, tx state.Tx, id string, since time.Time) ([]state.Event, bool, error) {
	h, err := tx.Head(ctx, id)
	if err != nil {
		return nil, false, err
	}
	var pages [][]state.Event
	hi, scanned := h.LastSeq, 0
	for hi > 0 {
		if scanned >= scanBound {
			return flatten(pages), true, nil
		}
		n := min(uint64(ScanPage), uint64(scanBound-scanned), hi)
		evs, err := tx.Events(ctx, id, hi-n, int(n))
		if err != nil {
			return nil, false, err
		}
		scanned += len(evs)
		hi -= n
		i := sort.Search(len(evs), func(i int) bool { return !evs[i].At.Before(since) })
		pages = append(pages, evs[i:])
		if i > 0 || len(evs) == 0 {
			break
		}
	}
	return flatten(pages), false, nil
}

// flatten joins pages read newest first into one slice, oldest first.
func flatten(pages [][]state.Event) []state.Event {
	var out []state.Event
	for i := len(pages) - 1; i >= 0; i-- {
		out = append(out, pages[i]...)
	}
	return out
}

// scanReach calls fn with the recent events of every spore in the
// caller's reach, in one read-only transaction.
func (s *Server) scanReach(c *call, since time.Time, fn func(sp state.Spore, evs []state.Event)) (cut []string, err error) {
	err = s.Store.View(c.ctx(), func(tx state.Tx) error {
		all, err := tx.Spores(c.ctx())
		if err != nil {
			return err
		}
		for _, sp := range InReach(c.caller, all) {
			evs, wasCut, err := recentEvents(c.ctx(), tx, sp.ID, since)
			if err != nil {
				return err
			}
			if wasCut {
				cut = append(cut, sp.ID)
			}
			fn(sp, evs)
		}
		return nil
	})
	return cut, err
}

// collisions: GET /api/mycologist/collisions?window=D — files that
// several spores in reach edited in the window.
func (s *Server) collisions(c *call) (int, any, error) {
	win, err := window(c)
	if err != nil {
		return 0, nil, err
	}
	since := s.now().Add(-win)
	files := map[string]map[string]*FileEdit{}
	cut, err := s.scanReach(c, since, func(sp state.Spore, evs []state.Event) {
		cwd := ""
		for _, ev := range evs {
			if ev.Kind != state.KindAgent || len(ev.Line) == 0 {
				continue
			}
			for _, p := range streamjson.Parse(ev.Line) {
				switch {
				case p.Kind == streamjson.KindInit && p.CWD != "":
					cwd = p.CWD
				case p.Kind == streamjson.KindToolUse && p.ToolUse != nil && editTools[p.ToolUse.Name] && p.ToolUse.FilePath != "":
					key := filePath(cwd, p.ToolUse.FilePath)
					if files[key] == nil {
						files[key] = map[string]*FileEdit{}
					}
					fe := files[key][sp.ID]
					if fe == nil {
						fe = &FileEdit{ID: sp.ID, FirstAt: ev.At}
						files[key][sp.ID] = fe
					}
					fe.Edits++
					fe.LastAt = ev.At
				}
			}
		}
	})
	if err != nil {
		return 0, nil, err
	}
	res := CollisionList{Since: since, Files: []Collision{}, Cut: cut}
	for p, by := range files {
		if len(by) < 2 {
			continue
		}
		col := Collision{Path: p}
		for _, fe := range by {
			col.Spores = append(col.Spores, *fe)
		}
		sort.Slice(col.Spores, func(i, j int) bool { return col.Spores[i].ID < col.Spores[j].ID })
		res.Files = append(res.Files, col)
	}
	sort.Slice(res.Files, func(i, j int) bool { return res.Files[i].Path < res.Files[j].Path })
	return http.StatusOK, res, nil
}

// filePath is p relative to cwd when under it, else p, cleaned.
func filePath(cwd, p string) string {
	p = path.Clean(p)
	if cwd != "" {
		cwd = path.Clean(cwd)
		if rel, ok := strings.CutPrefix(p, cwd+"/"); ok {
			return rel
		}
	}
	return p
}

// deploys: GET /api/mycologist/deploys?window=D — pushes and deploys of
// the spores in reach, from Bash calls and reports.
func (s *Server) deploys(c *call) (int, any, error) {
	win, err := window(c)
	if err != nil {
		return 0, nil, err
	}
	since := s.now().Add(-win)
	res := DeployList{Since: since, Deploys: []Deploy{}}
	res.Cut, err = s.scanReach(c, since, func(sp state.Spore, evs []state.Event) {
		failed := map[string]bool{}
		type use struct {
			d  Deploy
			id string
		}
		var uses []use
		for _, ev := range evs {
			switch {
			case ev.Kind == state.KindLifecycle && strings.HasPrefix(ev.Action, ReportActionPrefix):
				kind, fail := strings.CutSuffix(strings.TrimPrefix(ev.Action, ReportActionPrefix), "-failed")
				if kind != ReportPush && kind != ReportDeploy {
					continue
				}
				uses = append(uses, use{d: Deploy{Spore: sp.ID, At: ev.At, Seq: ev.Seq, Kind: kind, Source: "report", Failed: fail, What: ev.Text}})
			case ev.Kind == state.KindAgent && len(ev.Line) > 0:
				for _, p := range streamjson.Parse(ev.Line) {
					switch {
					case p.Kind == streamjson.KindToolResult && p.ToolResult != nil && p.ToolResult.IsError:
						failed[p.ToolResult.ToolUseID] = true
					case p.Kind == streamjson.KindToolUse && p.ToolUse != nil && p.ToolUse.Name == "Bash":
						if k := commandKind(p.ToolUse.Command); k != "" {
							uses = append(uses, use{id: p.ToolUse.ID, d: Deploy{Spore: sp.ID, At: ev.At, Seq: ev.Seq, Kind: k, Source: "tool", What: p.ToolUse.Command}})
						}
					}
				}
			}
		}
		for _, u := range uses {
			if u.id != "" && failed[u.id] {
				u.d.Failed = true
			}
			res.Deploys = append(res.Deploys, u.d)
		}
	})
	if err != nil {
		return 0, nil, err
	}
	sort.SliceStable(res.Deploys, func(i, j int) bool { return res.Deploys[i].At.Before(res.Deploys[j].At) })
	return http.StatusOK, res, nil
}

// report: POST /api/mycologist/report — a spore says it pushed or
// deployed (or failed to), as a lifecycle event in its own log.
func (s *Server) report(c *call) (int, any, error) {
	var req ReportRequest
	raw, err := decodeBody(c.w, c.r, &req)
	if err != nil {
		return 0, nil, err
	}
	if req.Kind != ReportPush && req.Kind != ReportDeploy {
		return 0, nil, errorf(http.StatusBadRequest, CodeBadRequest, "kind must be %q or %q", ReportPush, ReportDeploy)
	}
	if err := checkText("text", req.Text, raw); err != nil {
		return 0, nil, err
	}
	action := ReportActionPrefix + req.Kind
	if req.Failed {
		action += "-failed"
	}
	var seq uint64
	err = s.Store.Update(c.ctx(), func(tx state.Tx) error {
		evs, err := tx.Append(c.ctx(), c.caller.ID, []state.Event{{Kind: state.KindLifecycle, Action: action, From: From(c.caller), At: s.now(), Text: req.Text}})
		if err == nil && len(evs) == 1 {
			seq = evs[0].Seq
		}
		return err
	})
	if err != nil {
		return 0, nil, fmt.Errorf("record the report of %s: %w", c.caller.ID, err)
	}
	return http.StatusCreated, ReportResponse{Spore: c.caller.ID, Seq: seq, Action: action}, nil
}
