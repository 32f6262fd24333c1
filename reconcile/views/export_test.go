package views

// SetReplaceFile replaces the write seam for a test of package
// views_test (which drives the CLI); restore puts the real one back.
func SetReplaceFile(fn func(path string, data []byte) error) (restore func()) {
	old := replaceFile
	replaceFile = fn
	return func() { replaceFile = old }
}

// ReplaceFile is the real write seam, for a replacement to call on.
var ReplaceFile = replaceFile
