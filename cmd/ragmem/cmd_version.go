package main

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// buildDate is the build's date, for release builds that set it:
//
//	go build -ldflags "-X main.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)" ./cmd/ragmem
//
// The Go toolchain records no build date; without it, version reports the
// commit's time.
var buildDate string

// versionInfo is what `ragmem version --json` prints.
type versionInfo struct {
	// Version is the module version: a release (v1.2.0), a pseudo-version
	// for a commit between releases (what Go 1.24 and later stamp on a
	// build in a git clone, "+dirty" with uncommitted changes), or
	// "(devel)" when the build recorded no version.
	Version string `json:"version"`
	// Commit is the VCS revision ("" when unknown), Modified whether the
	// checkout had uncommitted changes.
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	// CommitTime is the commit's time (RFC 3339, "" when unknown);
	// BuildDate the build's, when the build set it.
	CommitTime string `json:"commitTime,omitempty"`
	BuildDate  string `json:"buildDate,omitempty"`
	Go         string `json:"go"`
	Platform   string `json:"platform"`
}

// pseudoVersion matches a Go pseudo-version (vX.Y.Z-yyyymmddhhmmss-abcdefabcdef,
// and the forms with a pre-release or a base release before the time),
// whose last two parts are the commit's UTC time and revision prefix.
var pseudoVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+-(?:.*\.)?([0-9]{14})-([0-9a-f]{12})(?:\+incompatible)?(?:\+dirty)?$`)

// readVersion reads the version from the binary's build information: a
// checkout build (go build, go run) records the VCS revision, its time and
// whether the tree was modified; a `go install module@version` build
// records the module version, whose pseudo-version names the commit.
func readVersion(bi *debug.BuildInfo, ok bool) versionInfo {
	v := versionInfo{Version: "unknown", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, BuildDate: buildDate}
	if !ok || bi == nil {
		return v
	}
	if bi.GoVersion != "" {
		v.Go = bi.GoVersion
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	if m := pseudoVersion.FindStringSubmatch(v.Version); m != nil && v.Commit == "" {
		v.Commit = m[2]
		if t, err := time.Parse("20060102150405", m[1]); err == nil {
			v.CommitTime = t.UTC().Format(time.RFC3339)
		}
	}
	return v
}

// write prints v for a person.
func (v versionInfo) write(w io.Writer) {
	fmt.Fprintf(w, "ragmem %s\n", v.Version)
	commit := v.Commit
	switch {
	case commit == "":
		commit = "unknown"
	case v.Modified:
		commit += " (modified: built with uncommitted changes)"
	}
	fmt.Fprintf(w, "  commit: %s\n", commit)
	switch {
	case v.BuildDate != "":
		fmt.Fprintf(w, "  built:  %s\n", v.BuildDate)
	case v.CommitTime != "":
		fmt.Fprintf(w, "  built:  unknown (commit of %s)\n", v.CommitTime)
	default:
		fmt.Fprintf(w, "  built:  unknown\n")
	}
	fmt.Fprintf(w, "  go:     %s %s\n", v.Go, v.Platform)
}

func (v versionInfo) String() string {
	var b strings.Builder
	v.write(&b)
	return b.String()
}

// currentVersion is the running binary's version.
func currentVersion() versionInfo { return readVersion(debug.ReadBuildInfo()) }

func newVersionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print ragmem's version, commit and build date",
		Long: "version prints the module version (a pseudo-version naming the commit for a build from a clone), the commit it was\n" +
			"built from (marked when the checkout had uncommitted changes), the build date when the build\n" +
			"recorded one (else the commit's time), and the Go version and platform. `ragmem --version`\n" +
			"prints the same.",
		Args: cobra.NoArgs,
		// Neither the config file nor the data directory matter here: a
		// broken config must not hide the version.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE: func(cmd *cobra.Command, args []string) error {
			v := currentVersion()
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(v)
			}
			v.write(cmd.OutOrStdout())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// addVersion gives root the version command and the --version flag.
func addVersion(root *cobra.Command) {
	root.Version = currentVersion().Version
	root.SetVersionTemplate(currentVersion().String())
	root.AddCommand(newVersionCmd())
}
