package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"
)

// Output formats accepted by -o.
var outputFormats = []string{"table", "wide", "json", "yaml", "name"}

func validateOutput(o string) error {
	for _, f := range outputFormats {
		if o == f {
			return nil
		}
	}
	return usageErrorf("unknown output format %q for -o: use one of %s", o, strings.Join(outputFormats, ", "))
}

// Printable is what a command hands the printer: a value that marshals to
// the documented JSON shape, and its table and name forms.
type Printable interface {
	// Table returns the header and rows; wide adds columns.
	Table(wide bool) (header []string, rows [][]string)
	// Names returns one "kind/name" per object, for -o name.
	Names() []string
}

// Print writes v to w in the format chosen by -o. Every command prints
// through here, so the formats behave the same everywhere.
func (f *Factory) Print(v Printable) error {
	return printTo(f.IO.Out, f.Global.Output, f.Global.NoHeaders, v)
}

func printTo(w io.Writer, format string, noHeaders bool, v Printable) error {
	switch format {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("encode json: %w", err)
		}
		b = append(b, '\n')
		_, err = w.Write(b)
		return err
	case "yaml":
		j, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode yaml: %w", err)
		}
		b, err := yaml.JSONToYAML(j)
		if err != nil {
			return fmt.Errorf("encode yaml: %w", err)
		}
		_, err = w.Write(b)
		return err
	case "name":
		for _, n := range v.Names() {
			if _, err := fmt.Fprintln(w, n); err != nil {
				return err
			}
		}
		return nil
	default:
		header, rows := v.Table(format == "wide")
		tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
		if !noHeaders && header != nil {
			fmt.Fprintln(tw, strings.Join(header, "\t"))
		}
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		return tw.Flush()
	}
}

// orDash shows an empty cell as "-" so columns stay aligned for awk.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
