package eventlog

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func openTemp(t testing.TB) (*Log, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.log")
	l, err := Open(context.Background(), path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l, path
}

func lines(prefix string, n int) []json.RawMessage {
	out := make([]json.RawMessage, n)
	for i := range out {
		out[i] = json.RawMessage(fmt.Sprintf(`{"type":%q,"i":%d}`, prefix, i))
	}
	return out
}

func readAll(t testing.TB, l *Log, after uint64) []Record {
	t.Helper()
	var all []Record
	for {
		recs, _, err := l.Read(context.Background(), after, 1000, 1<<20)
		require.NoError(t, err)
		if len(recs) == 0 {
			return all
		}
		all = append(all, recs...)
		after = recs[len(recs)-1].Seq
	}
}

func TestAppendNumbersAcrossReopen(t *testing.T) {
	ctx := context.Background()
	l, path := openTemp(t)
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	first, last, err := l.Append(ctx, at, lines("a", 3))
	require.NoError(t, err)
	require.Equal(t, []uint64{1, 3}, []uint64{first, last})
	require.NoError(t, l.Close())

	l2, err := Open(ctx, path, nil)
	require.NoError(t, err)
	defer l2.Close()
	require.EqualValues(t, 3, l2.Last())
	first, last, err = l2.Append(ctx, at, lines("b", 2))
	require.NoError(t, err)
	require.Equal(t, []uint64{4, 5}, []uint64{first, last})

	recs := readAll(t, l2, 0)
	require.Len(t, recs, 5)
	for i, r := range recs {
		require.EqualValues(t, i+1, r.Seq)
		require.True(t, r.At.Equal(at))
	}
	require.JSONEq(t, `{"type":"b","i":1}`, string(recs[4].Line))
}

func TestReadAcrossIndexSlots(t *testing.T) {
	ctx := context.Background()
	l, _ := openTemp(t)
	total := 3*IndexEvery + 7
	for done := 0; done < total; {
		n := min(100, total-done)
		_, _, err := l.Append(ctx, time.Now(), lines("x", n))
		require.NoError(t, err)
		done += n
	}
	for _, after := range []uint64{0, 1, IndexEvery - 1, IndexEvery, IndexEvery + 1, uint64(total) - 1} {
		recs, last, err := l.Read(ctx, after, 3, 1<<20)
		require.NoError(t, err)
		require.EqualValues(t, total, last)
		require.NotEmpty(t, recs)
		require.Equal(t, after+1, recs[0].Seq, "after=%d", after)
		for i := 1; i < len(recs); i++ {
			require.Equal(t, recs[i-1].Seq+1, recs[i].Seq)
		}
	}
	recs, _, err := l.Read(ctx, uint64(total), 10, 1<<20)
	require.NoError(t, err)
	require.Empty(t, recs)

	// maxBytes stops a page early but never returns nothing.
	recs, _, err = l.Read(ctx, 0, 1000, 1)
	require.NoError(t, err)
	require.Len(t, recs, 1)
}

func TestTornTailIsDropped(t *testing.T) {
	tests := []struct {
		name string
		tail string
	}{
		{"unfinished record", "4 2026-01-01T00:00:00Z 0000"},
		{"zeros a power cut left", "\x00\x00\x00\x00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			l, path := openTemp(t)
			_, _, err := l.Append(ctx, time.Now(), lines("a", 3))
			require.NoError(t, err)
			require.NoError(t, l.Close())
			good, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, append(append([]byte(nil), good...), tt.tail...), 0o600))

			l2, err := Open(ctx, path, nil)
			require.NoError(t, err)
			defer l2.Close()
			require.EqualValues(t, 3, l2.Last())
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, good, after, "the torn tail is cut from the file")
			first, _, err := l2.Append(ctx, time.Now(), lines("b", 1))
			require.NoError(t, err)
			require.EqualValues(t, 4, first)
			require.Len(t, readAll(t, l2, 0), 4)
		})
	}
}

// TestCorruptLastRecordIsAnError: a complete last record (LF included) was
// fsync'd and maybe served, so damage to it is an error, not a torn tail
// whose number would be given again.
func TestCorruptLastRecordIsAnError(t *testing.T) {
	for _, tail := range []string{"4 2026-01-01T00:00:00Z 00000000 {}\n", "\x00\x00\x00\x00\n"} {
		ctx := context.Background()
		l, path := openTemp(t)
		_, _, err := l.Append(ctx, time.Now(), lines("a", 3))
		require.NoError(t, err)
		require.NoError(t, l.Close())
		good, err := os.ReadFile(path)
		require.NoError(t, err)
		damaged := append(append([]byte(nil), good...), tail...)
		require.NoError(t, os.WriteFile(path, damaged, 0o600))
		_, err = Open(ctx, path, nil)
		require.Error(t, err)
		require.Contains(t, err.Error(), "line 4")
		after, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, damaged, after, "nothing is cut from a damaged log")
	}
}

func TestCorruptMiddleIsAnError(t *testing.T) {
	ctx := context.Background()
	l, path := openTemp(t)
	_, _, err := l.Append(ctx, time.Now(), lines("a", 3))
	require.NoError(t, err)
	require.NoError(t, l.Close())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	recs := strings.SplitAfter(string(data), "\n")
	recs[1] = strings.Replace(recs[1], `"a"`, `"b"`, 1)
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(recs, "")), 0o600))

	_, err = Open(ctx, path, nil)
	require.ErrorIs(t, err, ErrBadRecord)
	require.ErrorContains(t, err, "line 2")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, strings.Join(recs, ""), string(after), "nothing is rewritten")
}

func TestDiskFullLosesNothingNumbered(t *testing.T) {
	ctx := context.Background()
	l, path := openTemp(t)
	_, _, err := l.Append(ctx, time.Now(), lines("a", 5))
	require.NoError(t, err)

	for _, fail := range []string{"write", "fsync"} {
		t.Run(fail, func(t *testing.T) {
			origWrite, origSync := writeAt, syncFile
			t.Cleanup(func() { writeAt, syncFile = origWrite, origSync })
			if fail == "write" {
				// Half the batch reaches the disk before it fills up.
				writeAt = func(f *os.File, b []byte, off int64) (int, error) {
					n, _ := f.WriteAt(b[:len(b)/2], off)
					return n, syscall.ENOSPC
				}
			} else {
				syncFile = func(*os.File) error { return syscall.ENOSPC }
			}
			before := l.Last()
			_, _, err := l.Append(ctx, time.Now(), lines("lost", 4))
			require.ErrorIs(t, err, syscall.ENOSPC)
			require.Equal(t, before, l.Last(), "a failed batch is not visible")
			require.Len(t, readAll(t, l, 0), int(before))

			writeAt, syncFile = origWrite, origSync
			first, last, err := l.Append(ctx, time.Now(), lines("retry", 4))
			require.NoError(t, err)
			require.Equal(t, before+1, first, "the failed numbers are reused by the retry, none skipped")
			require.Equal(t, before+4, last)
		})
	}
	require.NoError(t, l.Close())
	l2, err := Open(ctx, path, nil)
	require.NoError(t, err)
	defer l2.Close()
	recs := readAll(t, l2, 0)
	require.Len(t, recs, 13)
	for i, r := range recs {
		require.EqualValues(t, i+1, r.Seq)
		require.NotContains(t, string(r.Line), "lost")
	}
}

// A failed batch longer than its retry must not leave whole stale records
// behind the retry (found when times of different lengths made the retry
// shorter by chance).
func TestDiskFullRetryShorterThanTheFailedBatch(t *testing.T) {
	ctx := context.Background()
	l, path := openTemp(t)
	orig := writeAt
	t.Cleanup(func() { writeAt = orig })
	writeAt = func(f *os.File, b []byte, off int64) (int, error) {
		n, _ := f.WriteAt(b, off) // all of it reached the disk, then ENOSPC
		return n, syscall.ENOSPC
	}
	_, _, err := l.Append(ctx, time.Now(), lines(strings.Repeat("long", 50), 6))
	require.ErrorIs(t, err, syscall.ENOSPC)
	writeAt = orig
	_, _, err = l.Append(ctx, time.Now(), lines("x", 1))
	require.NoError(t, err)
	require.NoError(t, l.Close())
	l2, err := Open(ctx, path, nil)
	require.NoError(t, err, "the retry left the failed batch's records behind it")
	defer l2.Close()
	require.Len(t, readAll(t, l2, 0), 1)
}

func TestWaitWakesOnAppend(t *testing.T) {
	ctx := context.Background()
	l, _ := openTemp(t)
	done := make(chan uint64)
	go func() {
		last, _ := l.Wait(ctx, 0)
		done <- last
	}()
	select {
	case <-done:
		t.Fatal("Wait returned before any line")
	case <-time.After(20 * time.Millisecond):
	}
	_, _, err := l.Append(ctx, time.Now(), lines("a", 1))
	require.NoError(t, err)
	select {
	case last := <-done:
		require.EqualValues(t, 1, last)
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not wake")
	}

	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	last, err := l.Wait(short, 1)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.EqualValues(t, 1, last)
}

func TestAppendRejectsNonJSON(t *testing.T) {
	l, _ := openTemp(t)
	_, _, err := l.Append(context.Background(), time.Now(), []json.RawMessage{json.RawMessage("not json")})
	require.Error(t, err)
	require.EqualValues(t, 0, l.Last())
}
