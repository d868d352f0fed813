package local

import (
	"encoding/json"
	"runtime"
	"sync"

	"github.com/thaw-dev/thaw/revision"
)

// parsedRevision is parseRevision's result for one entry of the file.
type parsedRevision struct {
	rc   RevisionConfig
	key  revision.Key
	errs []error
}

// parseRevisions runs parseRevision on every entry, spread over up to
// GOMAXPROCS goroutines (each entry is independent: at 10,000 revisions the
// per-entry decoding and checks are most of a file's parse time). The
// result is in the file's order.
func parseRevisions(raws []json.RawMessage, baseDir string, defaults revision.Spec, lim revision.Limits) []parsedRevision {
	out := make([]parsedRevision, len(raws))
	workers := min(runtime.GOMAXPROCS(0), len(raws)/parseChunk+1)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Chunks interleaved by worker: each entry is parsed once.
			for lo := w * parseChunk; lo < len(raws); lo += workers * parseChunk {
				for i := lo; i < min(lo+parseChunk, len(raws)); i++ {
					rc, key, errs := parseRevision(raws[i], baseDir, defaults, lim)
					out[i] = parsedRevision{rc: rc, key: key, errs: errs}
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// parseChunk is how many consecutive entries one goroutine parses at a time.
const parseChunk = 64

// revisionKey is the key an entry names (DefaultNamespace when it names
// none).
func revisionKey(rf revisionFile) revision.Key {
	key := revision.Key{Namespace: rf.Namespace, Name: rf.Name}
	if key.Namespace == "" {
		key.Namespace = DefaultNamespace
	}
	return key
}
