package embed

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixtureModel assembles a Model2Vec directory from testdata/model2vec: the
// dtype's config and weights with the shared potion-base-8M tokenizer (the
// vocabulary-quantized fixture has its own tokenizer).
func fixtureModel(t testing.TB, name string) string {
	t.Helper()
	src := filepath.Join("testdata", "model2vec", name)
	dir := filepath.Join(t.TempDir(), "test-model-"+name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"config.json":       filepath.Join(src, "config.json"),
		"modules.json":      filepath.Join(src, "modules.json"),
		"model.safetensors": filepath.Join(src, "model.safetensors"),
		"tokenizer.json":    filepath.Join("testdata", "model2vec", "tokenizer.json"),
	}
	if _, err := os.Stat(filepath.Join(src, "tokenizer.json")); err == nil {
		files["tokenizer.json"] = filepath.Join(src, "tokenizer.json")
	}
	for dst, from := range files {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// rawTensor decodes a tensor of a safetensors file by hand (header length,
// JSON header, little-endian data), independently of internal/safetensors.
func rawTensor(t *testing.T, path, name string) (dtype string, shape []int, data []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b)
	var h map[string]struct {
		DType   string `json:"dtype"`
		Shape   []int  `json:"shape"`
		Offsets []int  `json:"data_offsets"`
	}
	if err := json.Unmarshal(b[8:8+n], &h); err != nil {
		t.Fatal(err)
	}
	e := h[name]
	return e.DType, e.Shape, b[8+int(n)+e.Offsets[0] : 8+int(n)+e.Offsets[1]]
}

func f32At(data []byte, i int) float64 {
	return float64(math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:])))
}

func unit(v []float64) []float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x / math.Sqrt(s)
	}
	return out
}

func TestModel2VecLoadsEveryDType(t *testing.T) {
	ref, err := LoadModel2Vec(fixtureModel(t, "float32"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if ref.Dimension() != 2 || ref.rows != 29528 {
		t.Fatalf("float32: %d rows of %d, want 29528 of 2", ref.rows, ref.Dimension())
	}
	maxAbs := 0.0
	for _, x := range ref.emb {
		maxAbs = math.Max(maxAbs, math.Abs(float64(x)))
	}
	for _, dt := range []string{"float16", "int8"} {
		m, err := LoadModel2Vec(fixtureModel(t, dt), nil)
		if err != nil {
			t.Fatalf("%s: %v", dt, err)
		}
		if m.Dimension() != 2 || m.rows != 29528 {
			t.Fatalf("%s: %d rows of %d", dt, m.rows, m.Dimension())
		}
		for i, want := range ref.emb {
			got := float64(m.emb[i])
			switch dt {
			case "float16": // the same weights rounded to half precision
				if math.Abs(got-float64(want)) > 1e-3*math.Max(1, math.Abs(float64(want))) {
					t.Fatalf("float16 element %d = %v, float32 has %v", i, got, want)
				}
			case "int8": // the same weights scaled to [-127, 127] and rounded
				if math.Abs(got-float64(want)*127/maxAbs) > 0.51 {
					t.Fatalf("int8 element %d = %v, float32 scaled is %v", i, got, float64(want)*127/maxAbs)
				}
			}
		}
		if m.Identity() == ref.Identity() {
			t.Errorf("%s has the identity of float32: %s", dt, m.Identity())
		}
	}
	if !strings.HasPrefix(ref.Identity(), "model2vec/test-model-float32/") || !strings.HasSuffix(ref.Identity(), "/d2/t512") {
		t.Errorf("identity %q", ref.Identity())
	}
}

// "hello world" is tokens 6598 and 1094 (hello, world: see the hftok
// tests); its embedding is the normalised mean of those two rows, read here
// straight from the file's bytes.
func TestModel2VecEmbedsAsTheMeanOfTokenRows(t *testing.T) {
	dir := fixtureModel(t, "float32")
	m, err := LoadModel2Vec(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, data := rawTensor(t, filepath.Join(dir, "model.safetensors"), "embeddings")
	want := unit([]float64{f32At(data, 6598*2) + f32At(data, 1094*2), f32At(data, 6598*2+1) + f32At(data, 1094*2+1)})
	vs, err := m.Embed(context.Background(), []string{"hello world", "Hello,   WORLD ☃"})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs[:1] {
		for j := range want {
			if math.Abs(float64(v[j])-want[j]) > 1e-6 {
				t.Fatalf("embedding %v, want %v", v, want)
			}
		}
	}
	// Punctuation tokens count, the unknown snowman does not.
	comma := 16
	want2 := unit([]float64{
		f32At(data, 6598*2) + f32At(data, comma*2) + f32At(data, 1094*2),
		f32At(data, 6598*2+1) + f32At(data, comma*2+1) + f32At(data, 1094*2+1),
	})
	for j := range want2 {
		if math.Abs(float64(vs[1][j])-want2[j]) > 1e-6 {
			t.Fatalf("embedding %v, want %v", vs[1], want2)
		}
	}
}

// The vocabulary-quantized layout: each token's row is embeddings[mapping[id]]
// scaled by weights[id] (F64 in the file).
func TestModel2VecVocabQuantized(t *testing.T) {
	dir := fixtureModel(t, "vocab-quantized")
	m, err := LoadModel2Vec(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Dimension() != 64 || m.rows != 128 || m.mapping == nil || m.weights == nil {
		t.Fatalf("dim %d rows %d mapping %v weights %v", m.Dimension(), m.rows, m.mapping != nil, m.weights != nil)
	}
	path := filepath.Join(dir, "model.safetensors")
	_, _, emb := rawTensor(t, path, "embeddings")
	_, _, wts := rawTensor(t, path, "weights")
	_, _, mp := rawTensor(t, path, "mapping")
	ids := []int{6594, 1091} // ▁hello ▁world
	sum := make([]float64, 64)
	for _, id := range ids {
		w := math.Float64frombits(binary.LittleEndian.Uint64(wts[8*id:]))
		row := int(int32(binary.LittleEndian.Uint32(mp[4*id:])))
		for j := range sum {
			sum[j] += w * f32At(emb, row*64+j)
		}
	}
	want := unit(sum)
	v, err := m.Embed(context.Background(), []string{"hello world"})
	if err != nil {
		t.Fatal(err)
	}
	for j := range want {
		if math.Abs(float64(v[0][j])-want[j]) > 1e-5 {
			t.Fatalf("element %d = %v, want %v", j, v[0][j], want[j])
		}
	}
}

func TestModel2VecEdgeCases(t *testing.T) {
	m, err := LoadModel2Vec(fixtureModel(t, "float32"), &Model2VecOptions{MaxTokens: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Tokenize("hello world hello world"); len(got) != 3 {
		t.Errorf("MaxTokens 3: %d tokens", len(got))
	}
	vs, err := m.Embed(context.Background(), []string{"", "☃☃", "\xff\xfe", strings.Repeat("word ", 100000)})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if math.Abs(n-1) > 1e-5 {
			t.Errorf("text %d: norm² %v", i, n)
		}
	}
	if vs[0][0] != 1 || vs[1][0] != 1 {
		t.Errorf("texts without known tokens: %v %v, want the unit vector (1, 0)", vs[0], vs[1])
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Embed(ctx, []string{"x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestModel2VecLoadErrors(t *testing.T) {
	good := fixtureModel(t, "float32")
	broken := func(name string, edit func(dir string)) string {
		dir := filepath.Join(t.TempDir(), name)
		os.MkdirAll(dir, 0o755)
		for _, f := range []string{"config.json", "tokenizer.json", "model.safetensors"} {
			b, _ := os.ReadFile(filepath.Join(good, f))
			os.WriteFile(filepath.Join(dir, f), b, 0o644)
		}
		edit(dir)
		return dir
	}
	cases := map[string]string{
		"no-config": broken("a", func(d string) { os.Remove(filepath.Join(d, "config.json")) }),
		"bad-config": broken("b", func(d string) {
			os.WriteFile(filepath.Join(d, "config.json"), []byte(`{"model_type":"bert"}`), 0o644)
		}),
		"no-tokenizer": broken("c", func(d string) { os.Remove(filepath.Join(d, "tokenizer.json")) }),
		"truncated-weights": broken("d", func(d string) {
			b, _ := os.ReadFile(filepath.Join(d, "model.safetensors"))
			os.WriteFile(filepath.Join(d, "model.safetensors"), b[:len(b)/2], 0o644)
		}),
		"wrong-tensor": broken("e", func(d string) {
			os.WriteFile(filepath.Join(d, "model.safetensors"), append([]byte{2, 0, 0, 0, 0, 0, 0, 0}, "{}"...), 0o644)
		}),
		"small-matrix": broken("f", func(d string) {
			// A 4×2 F32 matrix for a 29,528-token vocabulary.
			hdr := `{"embeddings":{"dtype":"F32","shape":[4,2],"data_offsets":[0,32]}}`
			b := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
			b = append(append(b, hdr...), make([]byte, 32)...)
			os.WriteFile(filepath.Join(d, "model.safetensors"), b, 0o644)
		}),
	}
	for name, dir := range cases {
		if _, err := LoadModel2Vec(dir, nil); !errors.Is(err, ErrModel) {
			t.Errorf("%s: %v, want ErrModel", name, err)
		}
	}
}

func TestParseModel2Vec(t *testing.T) {
	dir := fixtureModel(t, "int8")
	e, err := Parse("model2vec:" + dir + ",maxtokens=64")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(e.Identity(), "/d2/t64") {
		t.Errorf("identity %q", e.Identity())
	}
	t.Setenv("RAGMEM_MODELS", t.TempDir())
	for _, spec := range []string{"model2vec:", "model2vec:" + dir + ",bogus=1", "model2vec:minishlab/not-pulled", "model2vec:../../etc"} {
		if _, err := Parse(spec); !errors.Is(err, ErrBadSpec) {
			t.Errorf("Parse(%q) = %v, want ErrBadSpec", spec, err)
		}
	}
}

func BenchmarkModel2VecEmbed(b *testing.B) {
	m, err := LoadModel2Vec(fixtureModel(b, "float32"), nil)
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("Hybrid search runs two retrievers over the same collection and merges what they find. ", 20)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.Embed(context.Background(), []string{text}); err != nil {
			b.Fatal(err)
		}
	}
}
