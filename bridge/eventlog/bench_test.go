package eventlog

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

func benchLine(i int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"line %d, about one hundred and fifty bytes of agent output in all"}]}}`, i))
}

// BenchmarkAppend: lines/s into the log in batches of 1000, one fsync each.
func BenchmarkAppend(b *testing.B) {
	l, _ := openTemp(b)
	ctx := context.Background()
	batch := make([]json.RawMessage, 1000)
	for i := range batch {
		batch[i] = benchLine(i)
	}
	b.ResetTimer()
	start := time.Now()
	for done := 0; done < b.N; done += len(batch) {
		n := min(len(batch), b.N-done)
		if _, _, err := l.Append(ctx, time.Now(), batch[:n]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "lines/s")
}

// BenchmarkMillionLineLog: a log of 1,000,000 lines. Reports the heap the
// open log keeps (the sparse index), the time to open it (one checking
// scan), and per read near the end: time and allocations, which must not
// grow with the log.
func BenchmarkMillionLineLog(b *testing.B) {
	const total = 1_000_000
	ctx := context.Background()
	path := millionLineLog(b, total)

	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := time.Now()
	l, err := Open(ctx, path, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	openTime := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&m1)
	if l.Last() != total {
		b.Fatalf("last = %d", l.Last())
	}

	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		after := uint64(total - 100 - i%IndexEvery)
		recs, _, err := l.Read(ctx, after, 100, 1<<20)
		if err != nil || len(recs) != 100 || recs[0].Seq != after+1 {
			b.Fatalf("read after %d: %d records, %v", after, len(recs), err)
		}
	}
	b.StopTimer()
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	b.ReportMetric(float64(int64(m1.HeapInuse)-int64(m0.HeapInuse))/1024, "open-heap-KiB")
	b.ReportMetric(openTime.Seconds()*1000, "open-ms")
	b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MiB")
}

// The million-line log is built once per test process (it takes seconds)
// and removed by TestMain.
var (
	bigLogOnce sync.Once
	bigLogDir  string
	bigLogErr  error
)

func millionLineLog(b *testing.B, total int) string {
	bigLogOnce.Do(func() {
		if bigLogDir, bigLogErr = os.MkdirTemp("", "eventlog-bench-"); bigLogErr != nil {
			return
		}
		ctx := context.Background()
		l, err := Open(ctx, filepath.Join(bigLogDir, "events.log"), nil)
		if err != nil {
			bigLogErr = err
			return
		}
		defer l.Close()
		batch := make([]json.RawMessage, 10_000)
		for done := 0; done < total; done += len(batch) {
			for i := range batch {
				batch[i] = benchLine(done + i)
			}
			if _, _, err := l.Append(ctx, time.Now(), batch); err != nil {
				bigLogErr = err
				return
			}
		}
	})
	if bigLogErr != nil {
		b.Fatal(bigLogErr)
	}
	return filepath.Join(bigLogDir, "events.log")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bigLogDir != "" {
		os.RemoveAll(bigLogDir)
	}
	os.Exit(code)
}
