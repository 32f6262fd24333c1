package cli

import (
	"context"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/internal/selector"
	"github.com/sporectl/sporectl/state"
)

type listOptions struct {
	f        *Factory
	Colony   string
	Selector string
	sel      selector.Selector
}

// newCmdList builds the command; runF, when not nil, is called instead of
// running it (tests of what the flags parse into).
func newCmdList(f *Factory, runF func(context.Context, *listOptions) error) *cobra.Command {
	o := &listOptions{f: f}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List spores and their desired state",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Colony != "" {
				if err := state.ValidateName("--colony", o.Colony); err != nil {
					return err
				}
			}
			if o.Selector != "" {
				var err error
				if o.sel, err = parseSporeSelector(o.Selector); err != nil {
					return err
				}
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.Colony, "colony", "", "only spores of this colony")
	cmd.Flags().StringVarP(&o.Selector, "selector", "l", "", "only the spores this selector matches: colony=lab, rank!=arch, a pod label (see \"Selecting spores\" in the docs)")
	return cmd
}

func (o *listOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	var out sporeList
	err = st.View(ctx, func(tx state.Tx) error {
		all, err := tx.Spores(ctx)
		if err != nil {
			return err
		}
		for _, s := range all {
			if (o.Colony == "" || s.Colony == o.Colony) && o.sel.Matches(sporeFields(&s)) {
				out.Spores = append(out.Spores, s)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if out.Spores == nil {
		out.Spores = []state.Spore{}
	}
	out.now = o.f.Now()
	return o.f.Print(out)
}

type sporeList struct {
	Spores []state.Spore `json:"spores"`
	now    time.Time
}

func (l sporeList) Table(wide bool) ([]string, [][]string) {
	h := []string{"ID", "COLONY", "RANK", "DESIRED", "AGE"}
	if wide {
		h = append(h, "SWARM", "ROLE", "IMAGE", "CPU", "MEMORY", "STORAGE")
	}
	rows := make([][]string, 0, len(l.Spores))
	for _, s := range l.Spores {
		r := []string{s.ID, s.Colony, string(s.Rank), string(s.Desired), age(l.now, s.Created)}
		if wide {
			r = append(r, orDash(s.Swarm), orDash(s.Role), orDash(s.Spec.Image), orDash(s.Spec.CPU), orDash(s.Spec.Memory), orDash(s.Spec.Storage))
		}
		rows = append(rows, r)
	}
	return h, rows
}

func (l sporeList) Names() []string {
	out := make([]string, len(l.Spores))
	for i, s := range l.Spores {
		out[i] = "spore/" + s.ID
	}
	return out
}

// age prints a duration the way kubectl does: 45s, 12m, 5h, 3d.
func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < 2*time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < 2*time.Hour:
		return strconv.Itoa(int(d.Minutes())) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d.Hours())) + "h"
	}
	return strconv.Itoa(int(d.Hours()/24)) + "d"
}
