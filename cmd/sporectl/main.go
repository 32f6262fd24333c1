// Command sporectl is the control plane for a colony of AI coding agents.
package main

import (
	"os"

	"github.com/sporectl/sporectl/cmd/cli"
)

func main() {
	os.Exit(cli.Main())
}
