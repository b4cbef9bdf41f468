package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The memory a page costs ragmem serve, measured from outside: the peak
// resident set (VmHWM in /proc/PID/status) of a fresh server process after
// it has indexed, or refused, one page, minus its resident set before.
//
//	go test -run TestServeBombsRSS -v ./cmd/ragmem                      # 1 MiB pages (the suite)
//	RAGMEM_BOMB_MIB=10 go test -run TestServeBombsRSS -v ./cmd/ragmem   # the 10 MiB pages of docs/server.md
//
// Without -race, each page must cost at most 256 MiB; a -race build only
// reports (its memory is several times larger).

// bomb is one page to send: a JSON body for POST /v1/pages.
type bomb struct {
	name string
	page map[string]any
}

func bombs(size int) []bomb {
	// The largest ordinary pages accepted: sections of prose of about a
	// chunk each, up to the chunk limit (about 6 MiB), and an HTML article
	// of paragraphs up to the chunk limit.
	var prose strings.Builder
	for i := 0; prose.Len() < size && i < 4000; i++ {
		fmt.Fprintf(&prose, "## Section %d\n\n", i)
		for j := 0; j < 14; j++ {
			fmt.Fprintf(&prose, "Herons wade in shallow water and wait for fish, part %d of section %d, with patience and a sharp bill. ", j, i)
		}
		prose.WriteString("\n\n")
	}
	var article strings.Builder
	article.WriteString("<html><body><article><h1>Many paragraphs</h1>")
	for i := 0; article.Len() < size && article.Len() < 5<<20 && i < 100_000; i++ {
		fmt.Fprintf(&article, "<p>Storks and herons nest in colonies near the water, paragraph %d of a long article about birds.</p>", i)
	}
	article.WriteString("</article></body></html>")
	return []bomb{
		{"markdown headings", map[string]any{"format": "markdown", "text": strings.Repeat("# t\n", size/4)}},
		{"html headings", map[string]any{"html": strings.Repeat("<h1>t</h1>", size/10)}},
		{"html formatting", map[string]any{"html": strings.Repeat("<p><b><i><u>x", size/14)}},
		{"text paragraphs", map[string]any{"text": strings.Repeat("t\n\n", size/3)}},
		{"largest markdown", map[string]any{"format": "markdown", "text": prose.String()}},
		{"largest html", map[string]any{"html": article.String()}},
	}
}

// procStatus reads a field of /proc/PID/status in bytes.
func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

func TestServeBombsRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	mib := 1
	if v := os.Getenv("RAGMEM_BOMB_MIB"); v != "" {
		mib, _ = strconv.Atoi(v)
	}
	size := mib << 20
	all := bombs(size)
	if os.Getenv("RAGMEM_BOMB_MIB") == "" {
		all = []bomb{all[0], all[2], all[4]} // the suite: one of each kind
	}
	for _, b := range all {
		s := startServe(t, t.TempDir(), "--max-body", strconv.Itoa(2*size+65536), "--rate-limit", "0")
		pid := s.cmd.Process.Pid
		time.Sleep(200 * time.Millisecond) // let the start settle
		before := procStatus(t, pid, "VmRSS")
		pageBytes := len(fmt.Sprint(b.page["text"])) + len(fmt.Sprint(b.page["html"])) - len("<nil>")
		b.page["url"] = "https://bomb.example/" + strings.ReplaceAll(b.name, " ", "-")
		var body bytes.Buffer
		enc := json.NewEncoder(&body)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(b.page); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		r := s.call("POST", "/v1/pages", body.Bytes(), false)
		var outcome string
		switch r.status {
		case http.StatusAccepted:
			var acc struct{ JobID string }
			decode(t, r, &acc)
			for {
				var job struct {
					State, Error string
					Chunks       int
				}
				decode(t, s.call("GET", "/v1/jobs/"+acc.JobID, nil, false), &job)
				if job.State == "done" {
					outcome = fmt.Sprintf("indexed, %d chunks", job.Chunks)
					break
				}
				if job.State == "dead" || time.Since(start) > 5*time.Minute {
					t.Fatalf("%s: job %+v", b.name, job)
				}
				time.Sleep(50 * time.Millisecond)
			}
		case http.StatusUnprocessableEntity:
			var e struct{ Error struct{ Code string } }
			decode(t, r, &e)
			outcome = "422 " + e.Error.Code
		default:
			t.Fatalf("%s: %d %s", b.name, r.status, r.body)
		}
		took := time.Since(start)
		peak := procStatus(t, pid, "VmHWM")
		s.stop()
		grew := peak - before
		t.Logf("%-18s %5.1f MiB page: %-26s in %6.2fs, peak RSS +%4d MiB (from %d MiB)", b.name, float64(pageBytes)/(1<<20), outcome, took.Seconds(), grew>>20, before>>20)
		if !raceEnabled && grew > 256<<20 {
			t.Errorf("%s: the server's peak RSS grew by %d MiB; the bound is 256 MiB", b.name, grew>>20)
		}
	}
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		t.Logf("load average: %s", strings.TrimSpace(string(la)))
	}
}
