package units

import "testing"

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"10MiB": 10 << 20, "512KiB": 512 << 10, "1GiB": 1 << 30, "2048": 2048, " 3 MB ": 3e6} {
		if got, err := ParseBytes("--max-body", in); err != nil || got != want {
			t.Errorf("%q: %d %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "-1", "0", "ten", "1.5MiB", "99999999999GiB"} {
		if _, err := ParseBytes("--max-body", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 10 << 20: "10.0 MiB", 3 << 30: "3.0 GiB", 1 << 60: "1.0 EiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
