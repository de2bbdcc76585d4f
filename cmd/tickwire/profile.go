package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	rpprof "runtime/pprof"
	"runtime/trace"
)

// profileFlags are the profiling flags every subcommand takes.
type profileFlags struct {
	cpu, mem, trace, pprof string
}

// declare adds the profiling flags to fs.
func (p *profileFlags) declare(fs *flag.FlagSet) {
	fs.StringVar(&p.cpu, "cpuprofile", "", "write a CPU profile to `FILE`")
	fs.StringVar(&p.mem, "memprofile", "", "write a heap profile to `FILE` at the end")
	fs.StringVar(&p.trace, "trace", "", "write an execution trace to `FILE`")
	fs.StringVar(&p.pprof, "pprof", "", "serve net/http/pprof on `ADDR` (e.g. 127.0.0.1:6060) while running")
}

// start starts what the flags ask for and returns the function that stops
// it all and writes the files.
func (p *profileFlags) start(stderr io.Writer) (stop func() error, err error) {
	var stops []func() error
	stopAll := func() error {
		var errs []error
		for i := len(stops) - 1; i >= 0; i-- {
			errs = append(errs, stops[i]())
		}
		return errors.Join(errs...)
	}
	defer func() {
		if err != nil {
			stopAll()
		}
	}()
	if p.cpu != "" {
		fh, err := os.Create(p.cpu)
		if err != nil {
			return nil, err
		}
		if err := rpprof.StartCPUProfile(fh); err != nil {
			fh.Close()
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		stops = append(stops, func() error { rpprof.StopCPUProfile(); return fh.Close() })
	}
	if p.trace != "" {
		fh, err := os.Create(p.trace)
		if err != nil {
			return nil, err
		}
		if err := trace.Start(fh); err != nil {
			fh.Close()
			return nil, fmt.Errorf("trace: %w", err)
		}
		stops = append(stops, func() error { trace.Stop(); return fh.Close() })
	}
	if p.pprof != "" {
		ln, err := net.Listen("tcp", p.pprof)
		if err != nil {
			return nil, fmt.Errorf("pprof: %w", err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		srv := &http.Server{Handler: mux}
		go srv.Serve(ln)
		fmt.Fprintf(stderr, "pprof: http://%s/debug/pprof/\n", ln.Addr())
		stops = append(stops, srv.Close)
	}
	if p.mem != "" {
		path := p.mem
		stops = append(stops, func() error {
			fh, err := os.Create(path)
			if err != nil {
				return err
			}
			runtime.GC()
			if err := rpprof.Lookup("allocs").WriteTo(fh, 0); err != nil {
				fh.Close()
				return err
			}
			return fh.Close()
		})
	}
	return stopAll, nil
}
