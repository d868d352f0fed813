package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// cpuShare is what cpuProfileShare found in a CPU profile.
type cpuShare struct {
	// Total is the CPU time of every sample; Matched that of the samples
	// whose stack holds a function named with the prefix asked for.
	Total, Matched time.Duration
}

// Field numbers of pprof's profile.proto
// (github.com/google/pprof/proto/profile.proto), the format of Go's
// /debug/pprof/profile.
const (
	profSampleType  = 1
	profSample      = 2
	profLocation    = 4
	profFunction    = 5
	profStringTable = 6

	valueTypeType = 1
	valueTypeUnit = 2

	sampleLocationID = 1
	sampleValue      = 2

	locationID   = 1
	locationLine = 4

	lineFunctionID = 1

	functionID   = 1
	functionName = 2
)

// cpuProfileShare reads a Go CPU profile (gzipped profile.proto, as
// /debug/pprof/profile serves it) and sums the CPU time of its samples, in
// all and for those whose stack holds a function whose name starts with
// prefix (for example "github.com/thaw-dev/thaw/autoscaler.(*loopShard)."),
// inlined frames included. Errors: not gzip, not a profile, no CPU time
// value.
func cpuProfileShare(data []byte, prefix string) (cpuShare, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return cpuShare{}, fmt.Errorf("cpu profile: %w", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return cpuShare{}, fmt.Errorf("cpu profile: %w", err)
	}
	var (
		strs      []string
		types     [][2]int64 // (type, unit) string indexes
		samples   [][]byte
		locFuncs  = map[uint64][]uint64{}
		funcNames = map[uint64]int64{}
	)
	err = eachField(raw, func(num protowire.Number, v []byte) error {
		var err error
		switch num {
		case profStringTable:
			strs = append(strs, string(v))
		case profSampleType:
			var t [2]int64
			err = eachField(v, func(n protowire.Number, w []byte) error {
				x, err := varint(w)
				if n == valueTypeType {
					t[0] = int64(x)
				} else if n == valueTypeUnit {
					t[1] = int64(x)
				}
				return err
			})
			types = append(types, t)
		case profSample:
			samples = append(samples, v)
		case profLocation:
			var id uint64
			var fns []uint64
			err = eachField(v, func(n protowire.Number, w []byte) error {
				switch n {
				case locationID:
					x, err := varint(w)
					id = x
					return err
				case locationLine:
					return eachField(w, func(n protowire.Number, u []byte) error {
						if n != lineFunctionID {
							return nil
						}
						x, err := varint(u)
						fns = append(fns, x)
						return err
					})
				}
				return nil
			})
			locFuncs[id] = fns
		case profFunction:
			var id uint64
			var name int64
			err = eachField(v, func(n protowire.Number, w []byte) error {
				x, err := varint(w)
				switch n {
				case functionID:
					id = x
				case functionName:
					name = int64(x)
				}
				return err
			})
			funcNames[id] = name
		}
		return err
	})
	if err != nil {
		return cpuShare{}, fmt.Errorf("cpu profile: %w", err)
	}
	str := func(i int64) string {
		if i < 0 || int(i) >= len(strs) {
			return ""
		}
		return strs[i]
	}
	vi := -1
	for i, t := range types {
		if str(t[0]) == "cpu" && str(t[1]) == "nanoseconds" {
			vi = i
		}
	}
	if vi < 0 {
		return cpuShare{}, errors.New("cpu profile: no cpu/nanoseconds sample type")
	}
	matchFn := map[uint64]bool{}
	for id, name := range funcNames {
		matchFn[id] = strings.HasPrefix(str(name), prefix)
	}
	var out cpuShare
	for _, s := range samples {
		var locs []uint64
		var vals []int64
		err := eachField(s, func(n protowire.Number, w []byte) error {
			switch n {
			case sampleLocationID:
				return eachVarint(w, func(x uint64) { locs = append(locs, x) })
			case sampleValue:
				return eachVarint(w, func(x uint64) { vals = append(vals, int64(x)) })
			}
			return nil
		})
		if err != nil {
			return cpuShare{}, fmt.Errorf("cpu profile sample: %w", err)
		}
		if vi >= len(vals) {
			continue
		}
		d := time.Duration(vals[vi])
		out.Total += d
	stack:
		for _, l := range locs {
			for _, fn := range locFuncs[l] {
				if matchFn[fn] {
					out.Matched += d
					break stack
				}
			}
		}
	}
	return out, nil
}

// eachField calls f with every field of the protobuf message b: the field
// number and, for a varint, its encoding, for a length-delimited field,
// its contents. Fixed-size fields are skipped.
func eachField(b []byte, f func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var v []byte
		keep := true
		switch typ {
		case protowire.VarintType:
			_, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			v, n = b[:m], m
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			n, keep = protowire.ConsumeFieldValue(num, typ, b), false
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if keep {
			if err := f(num, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// varint decodes one varint field's encoding.
func varint(b []byte) (uint64, error) {
	x, n := protowire.ConsumeVarint(b)
	if n < 0 {
		return 0, protowire.ParseError(n)
	}
	return x, nil
}

// eachVarint calls f for every varint in b: one (an unpacked repeated
// field's element) or several (a packed one).
func eachVarint(b []byte, f func(uint64)) error {
	for len(b) > 0 {
		x, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		f(x)
		b = b[n:]
	}
	return nil
}
