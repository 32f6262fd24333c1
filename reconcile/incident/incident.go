// Package incident derives, from the events in the store, what spores did
// to the things they share: the files several of them edited (collisions)
// and the pushes and deploys they made (from Bash tool calls and from
// `mycologist report`), and names each incident by a key that stays the
// same whoever derives it and whenever (docs/mycologists.md "Collisions",
// "Deploys", "The automatic summons").
//
// It is pure apart from RecentEvents, which reads a bounded tail of one
// log inside a transaction it is given. It never writes, never asks a
// bridge, and knows nothing of who may see what: `serve` (package
// mycelia) applies reach, and reconcile raises the summons.
package incident

import (
	"bytes"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/sporectl/sporectl/bridge/streamjson"
	"github.com/sporectl/sporectl/internal/lazy"
	"github.com/sporectl/sporectl/state"
)

// Bounds of an activity scan.
const (
	// DefaultWindow is how far back collisions and deploys look.
	DefaultWindow = 24 * time.Hour
	// MaxWindow bounds a caller's window.
	MaxWindow = 7 * 24 * time.Hour
	// ScanPage is how many events one read takes, from the end of a log
	// backwards.
	ScanPage = 512
	// MaxScanEvents bounds the events read from one spore's log per scan,
	// whatever the window: a spore whose window holds more is reported
	// cut, and its oldest activity in the window is missed.
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
	failedSuffix       = "-failed"
)

// ReportAction is the action of a report event.
func ReportAction(kind string, failed bool) string {
	a := ReportActionPrefix + kind
	if failed {
		a += failedSuffix
	}
	return a
}

// ParseReportAction reads a report event's action; ok is false for any
// other action.
func ParseReportAction(action string) (kind string, failed, ok bool) {
	rest, is := strings.CutPrefix(action, ReportActionPrefix)
	if !is {
		return "", false, false
	}
	kind, failed = strings.CutSuffix(rest, failedSuffix)
	if kind != ReportPush && kind != ReportDeploy {
		return "", false, false
	}
	return kind, failed, true
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

// Sources of a Deploy.
const (
	SourceTool   = "tool"
	SourceReport = "report"
)

// editTools are the tools whose FilePath is an edit.
var editTools = map[string]bool{"Edit": true, "Write": true, "MultiEdit": true, "NotebookEdit": true}

// Command patterns of Bash calls (docs/mycologists.md "Deploys"), compiled
// on first use: only a pass that ingested a Bash call matches them.
var (
	pushPattern = lazy.New("incident.pushPattern", func() *regexp.Regexp {
		return regexp.MustCompile(`(?:^|[\s;&|(])git\s+(?:(?:-C|-c)\s+\S+\s+|--?[a-zA-Z][\w-]*(?:=\S+)?\s+)*push(?:\s|$)`)
	})
	deployPatterns = lazy.New("incident.deployPatterns", func() []*regexp.Regexp {
		return []*regexp.Regexp{
			regexp.MustCompile(`(?:^|[\s;&|(])kubectl\s+(?:[^;&|\n]*\s)?(?:apply|set\s+image|rollout\s+restart)(?:\s|$)`),
			regexp.MustCompile(`(?:^|[\s;&|(])helm\s+(?:[^;&|\n]*\s)?(?:install|upgrade)(?:\s|$)`),
			regexp.MustCompile(`(?:^|[\s;&|(])(?:terraform|tofu)\s+(?:[^;&|\n]*\s)?apply(?:\s|$)`),
			regexp.MustCompile(`(?:^|[\s;&|(])make\s+(?:[^;&|\n]*\s)?deploy[\w.-]*(?:\s|$)`),
			regexp.MustCompile(`(?:^|[\s;&|(])(?:fly|flyctl|gcloud\s+(?:[^;&|\n]*\s)?|vercel|netlify|railway|heroku)\s*deploy(?:\s|$)`),
			regexp.MustCompile(`(?:^|[\s;&|(])vercel\s+(?:[^;&|\n]*\s)?--prod(?:\s|$)`),
			regexp.MustCompile(`(?:^|[;&|(]\s*|^\s*)(?:\S*/)?deploy(?:\.sh)?(?:\s|$)`),
		}
	})
)

// CommandKind is "push", "deploy" or "" for a Bash command.
func CommandKind(cmd string) string {
	if pushPattern().MatchString(cmd) {
		return ReportPush
	}
	for _, p := range deployPatterns() {
		if p.MatchString(cmd) {
			return ReportDeploy
		}
	}
	return ""
}

// Edits gathers, spore by spore, which files each edited; Collisions
// then names the files edited by more than one.
type Edits struct {
	files map[string]map[string]*FileEdit
}

// NewEdits is an empty gathering.
func NewEdits() *Edits { return &Edits{files: map[string]map[string]*FileEdit{}} }

// Add takes one spore's events, oldest first: its Edit/Write/MultiEdit/
// NotebookEdit tool calls, with paths made relative to the working
// directory its last init line named.
func (e *Edits) Add(id string, evs []state.Event) {
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
				if e.files[key] == nil {
					e.files[key] = map[string]*FileEdit{}
				}
				fe := e.files[key][id]
				if fe == nil {
					fe = &FileEdit{ID: id, FirstAt: ev.At}
					e.files[key][id] = fe
				}
				fe.Edits++
				fe.LastAt = ev.At
			}
		}
	}
}

// Collisions are the files more than one spore edited, by path, each
// with its spores by id.
func (e *Edits) Collisions() []Collision {
	out := []Collision{}
	for p, by := range e.files {
		if len(by) < 2 {
			continue
		}
		col := Collision{Path: p}
		for _, fe := range by {
			col.Spores = append(col.Spores, *fe)
		}
		sort.Slice(col.Spores, func(i, j int) bool { return col.Spores[i].ID < col.Spores[j].ID })
		out = append(out, col)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Touch says which incidents a batch of lines may be part of.
type Touch struct {
	// Edits: an edit tool call (a collision may have begun).
	Edits bool
	// Deploys: a Bash push or deploy, or a failed tool result (which may
	// be a push's or a deploy's, called in an earlier batch).
	Deploys bool
}

// Substrings a line must hold to be parsed by Touches: most lines (text,
// thinking, successful results) cost a scan, not a decode.
var (
	markToolUse = []byte(`tool_use"`) // a tool_use block, not "tool_use_id"
	markIsError = []byte(`is_error`)
)

// Touches is the cheap test a pass makes on the lines it ingested, in
// memory, before reading anything.
func Touches(evs []state.Event) Touch {
	var t Touch
	for _, ev := range evs {
		if ev.Kind != state.KindAgent || len(ev.Line) == 0 {
			continue
		}
		if !bytes.Contains(ev.Line, markToolUse) && !bytes.Contains(ev.Line, markIsError) {
			continue
		}
		for _, p := range streamjson.Parse(ev.Line) {
			switch {
			case p.Kind == streamjson.KindToolUse && p.ToolUse != nil && editTools[p.ToolUse.Name] && p.ToolUse.FilePath != "":
				t.Edits = true
			case p.Kind == streamjson.KindToolUse && p.ToolUse != nil && p.ToolUse.Name == "Bash" && CommandKind(p.ToolUse.Command) != "":
				t.Deploys = true
			case p.Kind == streamjson.KindToolResult && p.ToolResult != nil && p.ToolResult.IsError:
				t.Deploys = true
			}
		}
		if t.Edits && t.Deploys {
			break
		}
	}
	return t
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

// Deploys are one spore's pushes and deploys in evs (oldest first), from
// its Bash calls (failed when their result was an error) and its reports.
func Deploys(id string, evs []state.Event) []Deploy {
	failed := map[string]bool{}
	type use struct {
		d  Deploy
		id string
	}
	var uses []use
	for _, ev := range evs {
		switch {
		case ev.Kind == state.KindLifecycle:
			kind, fail, ok := ParseReportAction(ev.Action)
			if !ok {
				continue
			}
			uses = append(uses, use{d: Deploy{Spore: id, At: ev.At, Seq: ev.Seq, Kind: kind, Source: SourceReport, Failed: fail, What: ev.Text}})
		case ev.Kind == state.KindAgent && len(ev.Line) > 0:
			for _, p := range streamjson.Parse(ev.Line) {
				switch {
				case p.Kind == streamjson.KindToolResult && p.ToolResult != nil && p.ToolResult.IsError:
					failed[p.ToolResult.ToolUseID] = true
				case p.Kind == streamjson.KindToolUse && p.ToolUse != nil && p.ToolUse.Name == "Bash":
					if k := CommandKind(p.ToolUse.Command); k != "" {
						uses = append(uses, use{id: p.ToolUse.ID, d: Deploy{Spore: id, At: ev.At, Seq: ev.Seq, Kind: k, Source: SourceTool, What: p.ToolUse.Command}})
					}
				}
			}
		}
	}
	out := make([]Deploy, 0, len(uses))
	for _, u := range uses {
		if u.id != "" && failed[u.id] {
			u.d.Failed = true
		}
		out = append(out, u.d)
	}
	return out
}

// SortDeploys orders deploys by time, keeping each spore's own order.
func SortDeploys(ds []Deploy) {
	sort.SliceStable(ds, func(i, j int) bool { return ds[i].At.Before(ds[j].At) })
}
