package kube

import (
	"testing"

	"github.com/sporectl/sporectl/bridge/server"
)

// The bridge must accept the header the pod-proxy path moves its token to.
func TestBridgeTokenHeaderMatchesTheBridge(t *testing.T) {
	if BridgeTokenHeader != server.TokenHeader {
		t.Fatalf("kube sends the bridge token in %q, the bridge reads %q", BridgeTokenHeader, server.TokenHeader)
	}
}
