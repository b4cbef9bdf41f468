package settings

import (
	"maps"
	"slices"
	"strings"

	"github.com/ragmem/ragmem/index"
	"github.com/spf13/cobra"
)

// FileInfo describes the config file for `config show`: its path, where
// the path came from and whether it was found.
func (s *Settings) FileInfo() map[string]string {
	info := map[string]string{"path": "(none)", "source": "", "status": "not found"}
	if s.Cfg == nil {
		return info
	}
	info["path"], info["source"] = s.Cfg.Path, s.Cfg.Source
	if s.Cfg.Found {
		info["status"] = "found (" + s.Cfg.Source + ")"
	} else {
		info["status"] = "not found (" + s.Cfg.Source + ")"
	}
	return info
}

// Row is one line of `config show`.
type Row struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

const redacted = "[redacted]"

// Effective lists every setting with its value and source, for cmd: the
// data directory dir, the memories directory mem, the store's embedder
// record rec (storeNote says what was found) and what the rest resolve to.
func (s *Settings) Effective(cmd *cobra.Command, dir, mem string, rec *index.EmbedderRecord, storeNote string) ([]Row, error) {
	var rows []Row
	dirSrc := s.Sources["dir"]
	if s.Dir != "" && dirSrc == SrcDefault {
		dirSrc = "--dir"
	}
	rows = append(rows, Row{"dir", dir, dirSrc})
	rows = append(rows, Row{"memories", mem, s.Sources["memories"]})

	// The store, and the embedder resolved with it.
	rows = append(rows, Row{"store", storeNote, dir})
	c, err := s.ResolveEmbedder(rec)
	if err != nil {
		return nil, err
	}
	rows = append(rows, Row{"embedder", c.Spec.String(), c.From})
	for _, k := range slices.Sorted(maps.Keys(c.Spec.Options)) {
		rows = append(rows, Row{"embedder." + k, c.Spec.Options[k], c.OptionFrom[k]})
	}
	if c.Spec.Kind == "openai" {
		base := c.Spec.BaseURL
		if base == "" {
			base = "https://api.openai.com/v1"
		}
		pub, _ := c.Spec.Public()
		if pub.BaseURL != "" {
			base = pub.BaseURL
		}
		rows = append(rows, Row{"openai.base_url", base, c.BaseFrom})
		rows = append(rows, Row{"openai.api_key_env", c.KeyEnv, c.KeyEnvFrom})
		key, keyFrom := "(not set)", SrcDefault
		if c.Build.APIKey != "" {
			key, keyFrom = redacted, c.KeyFrom
		}
		rows = append(rows, Row{"openai.api_key", key, keyFrom})
		for _, h := range slices.Sorted(maps.Keys(c.Build.Headers)) {
			rows = append(rows, Row{"openai.headers." + h, redacted, c.HeadersFrom})
		}
	}

	// Every other key: flags of this command (the persistent ones), else the
	// environment, the config file, the flag's default.
	for _, k := range s.Schema.Keys() {
		if EmbedderKeys[k.Name] || k.Name == "dir" || k.Name == "memories" || strings.HasPrefix(k.Name, "openai.") {
			continue
		}
		val, src := s.describe(cmd, k)
		if k.Secret && val != "" {
			val = redacted
		}
		rows = append(rows, Row{k.Name, val, src})
	}
	return rows, nil
}

// describe returns a non-embedder key's effective value and its source.
func (s *Settings) describe(cmd *cobra.Command, k Key) (string, string) {
	sec, _, _ := strings.Cut(k.Name, ".")
	if s.Schema.Sections[sec] == nil && k.Flag != "" {
		if f := cmd.Flags().Lookup(k.Flag); f != nil {
			return f.Value.String(), s.Sources[k.Name] // applySettings resolved it
		}
	}
	if name, v, ok := FirstEnv(k.Env); ok {
		return v, "$" + name
	}
	if v, ok := s.Cfg.Get(k.Name); ok {
		if k.Kind == ListValue {
			return strings.Join(v.List, ","), s.Cfg.Where(v)
		}
		if k.Kind == MapValue {
			return strings.Join(slices.Sorted(maps.Keys(v.Map)), ","), s.Cfg.Where(v)
		}
		return v.Scalar, s.Cfg.Where(v)
	}
	if k.Flag != "" {
		if f := s.Schema.ScratchFlags(k).Lookup(k.Flag); f != nil {
			return f.DefValue, SrcDefault
		}
	}
	return "", SrcDefault
}
