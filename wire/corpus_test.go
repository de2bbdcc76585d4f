package wire

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var genCorpus = flag.Bool("wire.gencorpus", false,
	"rewrite the checked-in seed corpora under testdata/fuzz from the seed functions")

// fuzzTarget describes one Fuzz function: its seeds and, for the
// truncation test, its decoder with the value erased.
type fuzzTarget struct {
	seeds func() [][]byte
	parse func([]byte) (int, error) // nil: no truncation property (not a plain decoder)
	whole bool                      // the decoder consumes its whole input
}

func erase[T any](c codec[T]) func([]byte) (int, error) {
	return func(b []byte) (int, error) {
		_, n, err := c.parse(b)
		return n, err
	}
}

// fuzzTargets lists every Fuzz function in the package. TestFuzzTargetsListed
// fails when one is missing, so a new target cannot ship without seeds in
// testdata/fuzz.
func fuzzTargets() map[string]fuzzTarget {
	return map[string]fuzzTarget{
		"FuzzFixedInts":               {seedsFixed, erase(uint64Codec), false},
		"FuzzUvarint":                 {seedsUvarint, erase(uvarintCodec), false},
		"FuzzVarint":                  {seedsVarint, erase(varintCodec), false},
		"FuzzReader":                  {seedsReader, nil, false},
		"FuzzParsePacketKind":         {seedsPacketKind, erase(packetKindCodec), false},
		"FuzzParseSessionHeader":      {seedsSessionHeader, erase(sessionCodec), false},
		"FuzzParseChannelHeader":      {seedsChannelHeader, erase(channelCodec), false},
		"FuzzParseUnreliableFrame":    {seedsUnreliableFrame, erase(unreliableCodec), false},
		"FuzzParseSequencedFrame":     {seedsSequencedFrame, erase(sequencedCodec), false},
		"FuzzParseReliableFrame":      {seedsReliableFrame, erase(reliableCodec), false},
		"FuzzParseFragmentFrame":      {seedsFragmentFrame, erase(fragmentCodec), false},
		"FuzzParseReliablePieceFrame": {seedsReliablePieceFrame, erase(reliablePieceCodec), false},
		"FuzzParseKeepAliveFrame":     {seedsKeepAliveFrame, erase(keepAliveCodec), false},
		"FuzzParseDisconnectFrame":    {seedsDisconnectFrame, erase(disconnectCodec), false},
		"FuzzParseActionStreamFrame":  {seedsActionStreamFrame, erase(actionStreamCodec), false},
		"FuzzSkipFrame": {seedsSkipFrame, func(b []byte) (int, error) {
			_, n, err := SkipFrame(b)
			return n, err
		}, false},
		"FuzzParseActionRecord":      {seedsActionRecord, erase(actionRecordCodec), false},
		"FuzzParseActionSliceHeader": {seedsActionSliceHeader, erase(actionSliceHeaderCodec), false},
		"FuzzParseActionSlice":       {seedsActionSlice, erase(actionSliceCodec), false},
		"FuzzParseConnectRequest":    {seedsConnectRequest, erase(connectRequestCodec), false},
		"FuzzParseChallenge":         {seedsChallenge, erase(challengeCodec), false},
		"FuzzParseConnectResponse":   {seedsConnectResponse, erase(connectResponseCodec), true}, // whole: a token runs to the end
		"FuzzParseAccept":            {seedsAccept, erase(acceptCodec), false},
		"FuzzParseAcceptBody":        {seedsAcceptBody, erase(acceptBodyCodec), false},
		"FuzzParseReject":            {seedsReject, erase(rejectCodec), false},
		"FuzzParseDatagram":          {seedsDatagram, erase(datagramCodec), true},
	}
}

// TestTruncation: for every format, every strict prefix of every valid
// seed encoding is rejected with ErrShort or ErrMalformed and n = 0 — never
// accepted, never a panic. (roundTrip checks the same for every value the
// randomized tests generate.) For a whole-datagram parse, a prefix is
// either rejected or ends on a frame boundary.
func TestTruncation(t *testing.T) {
	for name, ft := range fuzzTargets() {
		if ft.parse == nil {
			continue
		}
		checked := 0
		for _, s := range ft.seeds() {
			n, err := ft.parse(s)
			if err != nil || n != len(s) {
				continue // a deliberately invalid seed
			}
			checked++
			for k := 0; k < len(s); k++ {
				n, err := ft.parse(s[:k:k])
				if ft.whole && err == nil && n == k {
					continue
				}
				if (err != ErrShort && err != ErrMalformed) || n != 0 {
					t.Fatalf("%s: prefix %d of % x: n=%d err=%v", name, k, s, n, err)
				}
			}
		}
		if checked == 0 {
			t.Errorf("%s: no valid seed to truncate", name)
		}
	}
}

// corpusFile renders one []byte input in the Go fuzzing corpus format.
func corpusFile(b []byte) []byte {
	return []byte("go test fuzz v1\n[]byte(" + strconv.Quote(string(b)) + ")\n")
}

// TestFuzzCorpus checks that every fuzz target has its seed corpus checked
// in under testdata/fuzz (plain `go test` runs those files too). Run
//
//	go test -run TestFuzzCorpus -wire.gencorpus ./wire
//
// to regenerate them from the seed functions after changing a format.
func TestFuzzCorpus(t *testing.T) {
	for name, ft := range fuzzTargets() {
		dir := filepath.Join("testdata", "fuzz", name)
		if *genCorpus {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, s := range ft.seeds() {
				data := corpusFile(s)
				file := fmt.Sprintf("%x", sha256.Sum256(data))[:16]
				if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) == 0 {
			t.Errorf("%s: no checked-in seed corpus in %s (run with -wire.gencorpus): %v", name, dir, err)
			continue
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil || !strings.HasPrefix(string(data), "go test fuzz v1\n") {
				t.Errorf("%s/%s: not a corpus file: %v", name, e.Name(), err)
			}
		}
	}
}

// TestFuzzTargetsListed checks that fuzzTargets names exactly the Fuzz
// functions defined in this package's test files.
func TestFuzzTargetsListed(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(f \*testing\.F\)`)
	var defined []string
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			defined = append(defined, m[1])
		}
	}
	listed := fuzzTargets()
	sort.Strings(defined)
	for _, name := range defined {
		if _, ok := listed[name]; !ok {
			t.Errorf("%s is not in fuzzTargets", name)
		}
	}
	if len(defined) != len(listed) {
		t.Errorf("%d Fuzz functions defined, %d listed", len(defined), len(listed))
	}
}
