//go:build tools

// Package tools pins the container runtime the real-node tests run:
// containerd, its ctr client and the runc shim. The command and shim
// packages are imported (not only the main packages) so `go mod tidy`
// records every dependency their builds need.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/manager"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/task/plugin"
	_ "github.com/containerd/containerd/v2/cmd/containerd/builtins"
	_ "github.com/containerd/containerd/v2/cmd/containerd/command"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
	_ "github.com/containerd/containerd/v2/pkg/shim"
)
