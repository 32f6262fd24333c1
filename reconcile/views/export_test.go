package views

// SetStageFile replaces the write seam (stageFile) for a test of package
// views_test (which drives the CLI); restore puts the real one back.
func SetStageFile(fn func(path string, data []byte) (string, error)) (restore func()) {
	old := stageFile
	stageFile = fn
	return func() { stageFile = old }
}

// StageFile is the real write seam, for a replacement to call on.
var StageFile = stageFile
