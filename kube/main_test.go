package kube_test

import (
	"os"
	"testing"

	"github.com/sporectl/sporectl/kube/kubetest"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }
