package soak

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tickwire/tickwire/ackmap"
)

// WriteText writes the human-readable summary of a soak result: per phase,
// per direction, what was checked per size class and per stream, what the
// sender still holds and the channels' drop counters, then the violations
// and the verdict.
func (r Result) WriteText(w io.Writer) {
	fmt.Fprintf(w, "S-I1 soak: %d reliable messages per phase, both ways, over %s, seed %d\n", r.Count, r.Link, r.Seed)
	for _, p := range r.Phases {
		p.WriteText(w)
	}
	verdict := "PASS"
	if !r.OK {
		verdict = "FAIL"
	}
	var per []string
	for _, p := range r.Phases {
		v := "pass"
		if !p.OK {
			v = fmt.Sprintf("FAIL (%d violations)", p.Violations)
		}
		per = append(per, p.Name+" "+v)
	}
	fmt.Fprintf(w, "verdict: %s — %s; %.2f s wall\n", verdict, strings.Join(per, ", "), r.Wall.Seconds())
}

// WriteText writes one phase's part of Result.WriteText.
func (p PhaseResult) WriteText(w io.Writer) {
	fmt.Fprintf(w, "\nphase %s: %s\n", p.Name, p.About)
	if p.MTU == 0 {
		for _, v := range p.ViolationList {
			fmt.Fprintf(w, "  VIOLATION: %s\n", v)
		}
		return
	}
	fmt.Fprintf(w, "  channel: MTU %d, RedundancyBytes %d, MaxSinglePayload %d, in-flight %d, reliable window %d, MaxPartial %d\n",
		p.MTU, p.RedundancyBytes, p.MaxSinglePayload, p.MaxInFlight, p.ReliableWindow, p.MaxPartial)
	for _, f := range p.Flows {
		fmt.Fprintf(w, "  %s: %s sends, %s receives; %d of %d messages delivered, %d sent and missing, %d sends deferred by back-pressure\n",
			f.Name, f.From, f.To, f.Delivered, f.Share, f.Missing, f.QueueFull)
		fmt.Fprintf(w, "    %-10s %-12s %9s %9s %9s\n", "class", "bytes", "sent", "delivered", "missing")
		for i, c := range f.Classes {
			sc := p.Classes[i]
			fmt.Fprintf(w, "    %-10s %-12s %9d %9d %9d\n", c.Class, fmt.Sprintf("%d–%d", sc.Min, sc.Max), c.Sent, c.Delivered, c.Missing)
		}
		for _, s := range f.Streams {
			kind := "unordered"
			if s.Ordered {
				kind = "ordered"
			}
			fmt.Fprintf(w, "    stream %d (%-9s) sent %d of %d, delivered %d, missing %d; duplicates %d, out-of-order %d, out-of-range %d, corrupt %d; reordered %d\n",
				s.Stream, kind, s.Sent, s.Share, s.Delivered, s.Missing, s.Duplicates, s.OutOfOrder, s.OutOfRange, s.Corrupt, s.Reordered)
			if s.Missing != 0 {
				var by []string
				for _, c := range s.Classes {
					if c.Missing != 0 {
						by = append(by, fmt.Sprintf("%s %d/%d", c.Class, c.Missing, c.Sent))
					}
				}
				m := s.FirstMissing
				fmt.Fprintf(w, "      missing by class (missing/sent): %s; first missing #%d (id %d, %d B, %s)\n",
					strings.Join(by, ", "), m.Seq, m.ID, m.Bytes, m.Class)
			}
		}
		ss, rs := f.Sender, f.Receiver
		fmt.Fprintf(w, "    sender %s at the end: holds %d reliable messages (%d B), %d datagrams pending; %d datagrams sent, %d re-sends, %d redundant copies, %d fragments sent, %d stalls\n",
			f.From[:1], f.Held, f.HeldBytes, f.Pending, ss.DatagramsSent, ss.ReliableResent, ss.RedundantCopies, ss.FragmentsSent, ss.Stalls)
		fmt.Fprintf(w, "      loss verdicts: %d (reorder %d, window %d, evicted %d, timeout %d); link sent %d, lost %d, duplicated %d\n",
			ss.Ack.Lost, ss.Ack.LostBy(ackmap.CauseReorder), ss.Ack.LostBy(ackmap.CauseWindow), ss.Ack.LostBy(ackmap.CauseEvicted), ss.Ack.LostBy(ackmap.CauseTimeout),
			f.Link.Sent, f.Link.Dropped(), f.Link.Duplicated)
		fmt.Fprintf(w, "    receiver %s drops: malformed %d, duplicate datagrams %d, too old %d, bad stream %d, reliable duplicates %d, outside window %d, overflow %d, fragments refused %d; buffered %d behind gaps\n",
			f.To[:1], rs.Malformed, rs.Duplicates, rs.TooOld, rs.BadStream, rs.ReliableDuplicates, rs.ReliableOutside, rs.ReliableOverflow, rs.FragmentsRefused, rs.ReliableBuffered)
		fr := rs.Fragments
		fmt.Fprintf(w, "      fragments: %d pieces, %d completed, %d expired, %d late, %d stale, %d duplicate; at the end %d assemblies partly received, %d B buffered out of order (at most %d of the missing messages)\n",
			fr.Pieces, fr.Completed, fr.Expired, fr.LatePieces, fr.StalePieces, fr.DuplicatePieces, rs.PartialAssemblies, rs.ReliableBufferedIn, f.MaxBuffered)
	}
	at := func(d time.Duration) string {
		if d == 0 {
			return "never"
		}
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	fmt.Fprintf(w, "  time: %.1f s virtual (all delivered %s, senders empty and action stream settled %s), %.2f s wall, %d wake-ups\n",
		p.Virtual.Seconds(), at(p.AllDeliveredAt), at(p.SettledAt), p.Wall.Seconds(), p.Wakes)
	if p.Incomplete != "" {
		fmt.Fprintf(w, "  ended early by the %s\n", p.Incomplete)
	}
	a := p.Action
	fmt.Fprintf(w, "  action stream: %d frames, confirmed %d, checksums verified %d, desyncs %d, last-frame checksum client %#x server %#x; inputs %d (late %d, dropped %d), rewinds server %d client %d, converged %v\n",
		a.Frames, a.Confirmed, a.ChecksumsVerified, a.Desyncs, a.ClientSum, a.ServerSum, a.Inputs, a.InputsLate, a.InputsDropped, a.ServerRewinds, a.ClientRewinds, a.Converged)
	if p.HeapLimit != 0 {
		fmt.Fprintf(w, "  memory: heap in use %.1f MiB at %.0f%% -> %.1f MiB at 100%% (limit %.1f MiB, of which %.1f MiB the windows' reused buffers may keep); goroutines %d -> %d\n",
			mib(p.First.HeapInuse), p.First.Progress*100, mib(p.Last.HeapInuse), mib(p.HeapLimit), mib(p.Retain), p.First.Goroutines, p.Last.Goroutines)
	} else {
		fmt.Fprintln(w, "  memory: not compared (the phase never delivered every message)")
	}
	for _, v := range p.ViolationList {
		fmt.Fprintf(w, "  VIOLATION: %s\n", v)
	}
	if p.Violations > uint64(len(p.ViolationList)) {
		fmt.Fprintf(w, "  ... %d violations in all\n", p.Violations)
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
