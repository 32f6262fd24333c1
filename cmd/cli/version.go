package cli

import (
	"runtime"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/state/dirstore"
)

func newCmdVersion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of sporectl",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.Print(versionInfo{Version: f.Version, Go: runtime.Version(), StoreFormat: dirstore.FormatVersion})
		},
	}
}

type versionInfo struct {
	Version     string `json:"version"`
	Go          string `json:"go"`
	StoreFormat int    `json:"store_format"`
}

func (v versionInfo) Table(bool) ([]string, [][]string) {
	return nil, [][]string{{"sporectl " + v.Version + " (" + v.Go + ", store format " + strconv.Itoa(v.StoreFormat) + ")"}}
}

func (v versionInfo) Names() []string { return []string{"sporectl/" + v.Version} }
