// Package demo is the fixture `greenlight demo` runs: the bundled
// campaign, and greenlight itself playing the vLLM server and its
// benchmark client, printing vLLM's real log formats, so the demo needs
// no GPU, Python or network.
package demo

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/greenlight-run/greenlight/examples"
	"github.com/greenlight-run/greenlight/internal/safe"
)

// The hidden subcommands that play the server and the client.
const (
	ServerCommand = "__demo-server"
	ClientCommand = "__demo-client"
)

// Campaign is the bundled demo with its port and the path of this
// binary written in, so the file runs again as it is (`greenlight run`),
// from any shell.
func Campaign(exe string, port int) []byte {
	p := strconv.Itoa(port)
	r := strings.NewReplacer(
		"${DEMO_PORT}", p,
		`"$DEMO_PORT"`, p,
		`"$GREENLIGHT_BIN"`, safe.Shell(exe),
		"# $GREENLIGHT_BIN and $DEMO_PORT are set by `greenlight demo`.", "# Written by `greenlight demo`: the simulated server listens on "+p+".")
	return []byte(r.Replace(string(examples.Demo)))
}

// FreePort is a loopback port free now, for the simulated server.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func vlog(w io.Writer, src, msg string, a ...any) {
	fmt.Fprintf(w, "INFO %s [%s] %s\n", time.Now().Format("01-02 15:04:05"), src, fmt.Sprintf(msg, a...))
}

// Server prints what `vllm serve` prints while it loads, then answers
// /health, /v1/completions and the profiler endpoints on loopback.
func Server(args []string) int {
	fs := flag.NewFlagSet(ServerCommand, flag.ContinueOnError)
	port := fs.Int("port", 8000, "")
	shards := fs.Int("shards", 64, "")
	load := fs.Duration("load", 30*time.Second, "")
	tp := fs.Int("tensor-parallel-size", 7, "")
	if fs.Parse(args) != nil {
		return 2
	}
	out, errw := os.Stdout, os.Stderr
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sigs
		fmt.Fprintln(out, "INFO:     Shutting down")
		fmt.Fprintln(out, "INFO:     Finished server process")
		os.Exit(0)
	}()
	model := "moonshotai/Kimi-K2.5"
	vlog(out, "__init__.py:241", "Automatically detected platform cuda.")
	vlog(out, "api_server.py:1805", "vLLM API server version 0.11.0")
	vlog(out, "core.py:74", "Initializing a V1 LLM engine (v0.11.0) with config: model='%s', tensor_parallel_size=%d, quantization=compressed-tensors", model, *tp)
	time.Sleep(*load / 10)
	vlog(out, "gpu_model_runner.py:2007", "Starting to load model %s...", model)
	start := time.Now()
	per := *load * 6 / 10 / time.Duration(*shards)
	for i := 0; i <= *shards; i++ {
		el := time.Since(start)
		rate := "?it/s"
		if i > 0 {
			rate = fmt.Sprintf("%.2fs/it", el.Seconds()/float64(i))
		}
		left := time.Duration(*shards-i) * per
		fmt.Fprintf(errw, "\rLoading safetensors checkpoint shards: %3d%% Completed | %d/%d [%s<%s, %s]", i*100 / *shards, i, *shards, mmss(el), mmss(left), rate)
		if i < *shards {
			// Shards are not all the same size.
			time.Sleep(per * time.Duration(70+(i*37)%60) / 100)
		}
	}
	fmt.Fprintln(errw)
	vlog(out, "default_loader.py:267", "Loading weights took %.2f seconds", time.Since(start).Seconds())
	vlog(out, "gpu_model_runner.py:2039", "Model loading took 71.43 GiB and %.2f seconds", time.Since(start).Seconds()+1.2)
	vlog(out, "gpu_worker.py:276", "Available KV cache memory: 48.17 GiB")
	graphs := 67
	for i := 0; i <= graphs; i += 4 {
		fmt.Fprintf(errw, "\rCapturing CUDA graph shapes: %3d%%|%-10s| %d/%d [00:02<00:01, 22.10it/s]", i*100/graphs, "##########"[:i*10/graphs], i, graphs)
		time.Sleep(*load * 15 / 100 / time.Duration(graphs/4+1))
	}
	fmt.Fprintln(errw)
	vlog(out, "gpu_model_runner.py:2765", "Graph capturing finished in 3 secs, took 1.37 GiB")
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintf(errw, "ERROR: [Errno 98] error while attempting to bind on address ('127.0.0.1', %d): address already in use\n", *port)
		return 1
	}
	vlog(out, "api_server.py:1880", "Starting vLLM API server 0 on http://127.0.0.1:%d", *port)
	fmt.Fprintf(out, "INFO:     Started server process [%d]\nINFO:     Waiting for application startup.\nINFO:     Application startup complete.\n", os.Getpid())
	var profiling atomic.Bool
	mux := http.NewServeMux()
	access := func(r *http.Request, code int) {
		fmt.Fprintf(out, "INFO:     %s - \"%s %s HTTP/1.1\" %d OK\n", r.RemoteAddr, r.Method, r.URL.Path, code)
	}
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) })
	mux.HandleFunc("/start_profile", func(w http.ResponseWriter, r *http.Request) {
		profiling.Store(true)
		vlog(out, "api_server.py:1210", "Starting profiler...")
		access(r, 200)
	})
	mux.HandleFunc("/stop_profile", func(w http.ResponseWriter, r *http.Request) {
		vlog(out, "api_server.py:1218", "Stopping profiler...")
		time.Sleep(time.Second)
		profiling.Store(false)
		vlog(out, "api_server.py:1220", "Profiler stopped.")
		access(r, 200)
	})
	// vLLM's /metrics, as its V1 engine names them: the window's service
	// line and each phase's Server table read it.
	var running, done atomic.Int64
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		run, n := running.Load(), done.Load()
		for _, m := range []struct {
			name, kind string
			v          float64
		}{
			{"vllm:num_requests_running", "gauge", float64(run)},
			{"vllm:num_requests_waiting", "gauge", 0},
			{"vllm:kv_cache_usage_perc", "gauge", 0.05 + 0.1*float64(run)},
			{"vllm:num_preemptions", "counter", 0},
			{"vllm:prompt_tokens", "counter", 128 * float64(n)},
			{"vllm:generation_tokens", "counter", 16 * float64(n)},
		} {
			suffix := ""
			if m.kind == "counter" {
				suffix = "_total"
			}
			fmt.Fprintf(w, "# TYPE %s %s\n%s%s{engine=\"0\",model_name=%q} %g\n", m.name, m.kind, m.name, suffix, model, m.v)
		}
	})
	mux.HandleFunc("/v1/completions", func(w http.ResponseWriter, r *http.Request) {
		running.Add(1)
		defer running.Add(-1)
		time.Sleep(250 * time.Millisecond)
		done.Add(1)
		access(r, 200)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"cmpl-demo","object":"text_completion","model":"`+model+`","choices":[{"index":0,"text":" ok","finish_reason":"length"}],"usage":{"prompt_tokens":128,"completion_tokens":16,"total_tokens":144}}`)
	})
	http.Serve(l, mux)
	return 0
}

func mmss(d time.Duration) string {
	s := int(d.Seconds())
	return fmt.Sprintf("%02d:%02d", s/60, s%60)
}

// Client is the decode load and the profiler calls of the demo.
func Client(args []string) int {
	fs := flag.NewFlagSet(ClientCommand, flag.ContinueOnError)
	url := fs.String("url", "", "")
	requests := fs.Int("requests", 0, "")
	trace := fs.String("trace", "", "")
	if fs.Parse(args) != nil || *url == "" {
		return 2
	}
	client := &http.Client{Timeout: 30 * time.Second}
	if *requests == 0 {
		resp, err := client.Post(*url, "application/json", nil)
		if err != nil {
			fmt.Fprintf(os.Stderr, "curl: (7) Failed to connect: %v\n", err)
			return 7
		}
		resp.Body.Close()
		fmt.Printf("POST %s: HTTP %d\n", *url, resp.StatusCode)
		if *trace != "" {
			// The traces are flushed in pieces after the call returns, one
			// per rank, as vLLM's are; the last of the 7 ranks' never comes
			// (a rank lost in the flush: the guarded capture names it).
			done := make(chan error, 1)
			go func() { done <- writeTraces(*trace, 6) }()
			time.Sleep(300 * time.Millisecond)
			fmt.Println("trace flush started:", *trace)
			if err := <-done; err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		return 0
	}
	start := time.Now()
	tokens := 0
	for i := 1; i <= *requests; i++ {
		resp, err := client.Post(*url, "application/json", nil)
		if err != nil {
			fmt.Fprintf(os.Stderr, "request %d failed: %v\n", i, err)
			return 1
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		tokens += 16
		el := time.Since(start)
		fmt.Fprintf(os.Stderr, "\r%3d%%|%-10s| %d/%d [%s<%s, %.2fit/s]", i*100 / *requests, "##########"[:i*10 / *requests], i, *requests, mmss(el), mmss(el/time.Duration(i)*time.Duration(*requests-i)), float64(i)/el.Seconds())
	}
	el := time.Since(start).Seconds()
	fmt.Fprintln(os.Stderr)
	fmt.Println("============ Serving Benchmark Result ============")
	fmt.Printf("%-40s %d\n", "Successful requests:", *requests)
	fmt.Printf("%-40s %.2f\n", "Benchmark duration (s):", el)
	fmt.Printf("%-40s %.2f\n", "Output token throughput (tok/s):", float64(tokens)/el)
	fmt.Printf("%-40s %.2f\n", "Mean TPOT (ms):", el*1000/float64(tokens))
	fmt.Println("==================================================")
	return 0
}
