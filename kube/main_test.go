package kube_test

import (
	"os"
	"testing"

	"github.com/sporectl/sporectl/kube/images/imagestest"
	"github.com/sporectl/sporectl/kube/kubetest"
)

func TestMain(m *testing.M) {
	code := kubetest.Main(m)
	imagestest.RemoveAll()
	os.Exit(code)
}
