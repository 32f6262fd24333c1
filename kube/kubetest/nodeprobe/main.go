// Command nodeprobe is the one program in the real-node tests' images: the
// pod sandbox's pause process, a small web server, a memory hog and a
// writer to its home directory, chosen by its first argument. It is built
// static (CGO_ENABLED=0) so a one-file image runs it.
//
//	nodeprobe pause  sleep until SIGTERM or SIGINT
//	nodeprobe serve  answer HTTP on :8080 (GET / says hello, /healthz ok)
//	nodeprobe hog    allocate and touch memory until the kernel kills it
//	nodeprobe home   append a line to $HOME/history, print the file, then serve
package main

import (
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	mode := "pause"
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	var err error
	switch mode {
	case "pause":
		waitForSignal()
	case "serve":
		err = serve()
	case "hog":
		hog()
	case "home":
		if err = appendHistory(); err == nil {
			err = serve()
		}
	default:
		err = fmt.Errorf("unknown mode %q (pause, serve, hog, home)", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "nodeprobe:", err)
		os.Exit(1)
	}
}

func waitForSignal() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	<-ch
}

func serve() error {
	host, _ := os.Hostname()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from nodeprobe on %s\n", host)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	srv := &http.Server{Addr: ":8080", Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		waitForSignal()
		_ = srv.Close()
	}()
	fmt.Println("nodeprobe serving on :8080")
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// hog keeps every chunk referenced and writes each page, so the memory is
// resident and the cgroup's limit, not the Go heap's, decides the end.
func hog() {
	const chunk = 1 << 20
	var kept [][]byte
	for i := 1; ; i++ {
		b := make([]byte, chunk)
		for j := 0; j < len(b); j += 4096 {
			b[j] = byte(i)
		}
		kept = append(kept, b)
		if i%16 == 0 {
			fmt.Printf("nodeprobe holds %d MiB\n", i)
		}
	}
}

func appendHistory() error {
	home := os.Getenv("HOME")
	if home == "" {
		return fmt.Errorf("HOME is not set")
	}
	p := filepath.Join(home, "history")
	old, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("read %s: %w", p, err)
	}
	n := strings.Count(string(old), "\n") + 1
	line := fmt.Sprintf("boot %d\n", n)
	if err := os.WriteFile(p, append(old, line...), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	fmt.Print(string(old) + line)
	return nil
}
