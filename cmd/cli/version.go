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
			return f.Print(currentVersion(f))
		},
	}
}

func currentVersion(f *Factory) versionInfo {
	return versionInfo{Version: f.Version, Go: runtime.Version(), StoreFormat: dirstore.FormatVersion}
}

// setVersionFlag makes `sporectl --version` print what `sporectl version`
// prints as a table. Like --help, it opens nothing.
func setVersionFlag(root *cobra.Command, f *Factory) {
	root.Version = f.Version
	// The line as a quoted template constant: whatever the build stamped
	// as the version is printed as is, never read as a template.
	root.Flags().Bool("version", false, "print the version of sporectl (as 'sporectl version' does)")
	root.SetVersionTemplate(`{{` + strconv.Quote(currentVersion(f).line()) + "}}\n")
}

type versionInfo struct {
	Version     string `json:"version"`
	Go          string `json:"go"`
	StoreFormat int    `json:"store_format"`
}

func (v versionInfo) Table(bool) ([]string, [][]string) {
	return nil, [][]string{{v.line()}}
}

func (v versionInfo) line() string {
	return "sporectl " + v.Version + " (" + v.Go + ", store format " + strconv.Itoa(v.StoreFormat) + ")"
}

func (v versionInfo) Names() []string { return []string{"sporectl/" + v.Version} }
