package ui

import (
	"time"

	"github.com/sporectl/sporectl/internal/digest"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// exportStamp is the stamp, naming no file, of everything an export's
// pages are made from but the records: the store's revision (which fixes
// the records), the hour, the orphans and each spore's health.
const exportStamp = ".export"

// exportAtRest can be turned off by tests, to check that an export that
// takes atRest makes what one that stamps every page makes.
var exportAtRest = true

// fleetStamp is the stamp of what every page of an export is made from,
// given the records at revision rev: each page's stamp and each line's of
// the index are functions of it and of the records' digests.
func fleetStamp(res reconcile.Result, hour time.Time, rev string) string {
	return stampWith(func(d *digest.Digest) {
		d.Str(rev)
		d.Time(hour)
		d.Uint(uint64(len(res.Orphans)))
		for _, o := range res.Orphans {
			d.Str(o)
		}
		d.Uint(uint64(len(res.Spores)))
		for i := range res.Spores {
			res.Spores[i].AddTo(d)
		}
	})
}

// atRest says whether the export prev describes is what one of res would
// make now, every page unchanged, without stamping each page: the store
// at prev's revision (so the records are those prev has digests of, which
// knowsRecords checked), the same fleet stamp, and prev holding exactly
// the stamps an export makes of res, its pages all there (ReadExportStamps
// drops those of pages gone). Then each page's stamp and the index's
// would come out as prev's, and nothing is rendered or rewritten: an
// export of a fleet at rest costs one digest of the fleet, not 20,000.
func atRest(prev map[string]string, res reconcile.Result, fleet string) bool {
	if !exportAtRest || prev[exportStamp] != fleet || prev[ExportIndex] == "" {
		return false
	}
	want := 3 + len(res.Spores) // the revision, the fleet, the index, a record each
	for _, s := range res.Spores {
		if state.ValidateID(s.ID) != nil {
			continue
		}
		want++
		if prev[ExportSpores+"/"+s.ID+".html"] == "" {
			return false
		}
	}
	return len(prev) == want
}

// keptExport is what Export returns for an export at rest: every page and
// the stamps kept as they are.
func keptExport(res reconcile.Result) map[string][]byte {
	files := make(map[string][]byte, len(res.Spores)+8)
	files[ExportIndex] = nil
	files[ExportStamps] = nil
	for _, s := range res.Spores {
		if state.ValidateID(s.ID) == nil {
			files[ExportSpores+"/"+s.ID+".html"] = nil
		}
	}
	return files
}
