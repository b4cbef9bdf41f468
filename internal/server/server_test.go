package server_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

const article = `<html><head><title>Otters of the Pacific | Wildlife Notes</title></head><body>
<nav><a href="/">Home</a> NAVIGATIONWORD</nav>
<article><h1>Otters of the Pacific</h1>
<p>Sea otters hold hands while they sleep so that they do not drift apart. A group of resting otters is called a raft,
and rafts of more than a hundred animals have been seen off the coast of California.</p>
<h2>Tools</h2>
<p>Sea otters use stones as anvils to crack open clams and urchins. Each otter keeps a favourite stone in a pouch of loose
skin under its foreleg and carries it from one dive to the next.</p>
<div class="advert">ADVERTWORD buy otter plushies</div>
</article><footer>FOOTERWORD</footer><script>trackingword()</script></body></html>`

func TestAuth(t *testing.T) {
	ts := newTestServer(t, nil)
	r := ts.must(http.StatusUnauthorized, "GET", "/v1/stats", nil, "Authorization", "")
	if r.errCode() != server.CodeUnauthorized || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("no token: %s %v", r.body, r.header)
	}
	if r.header.Get("X-Request-Id") == "" {
		t.Error("no request id")
	}
	ts.must(http.StatusUnauthorized, "GET", "/v1/stats", nil, "Authorization", "Bearer rgm_wrong")
	ts.must(http.StatusUnauthorized, "GET", "/v1/stats", nil, "Authorization", "Basic "+ts.token)
	ts.must(http.StatusUnauthorized, "GET", "/v1/openapi.json", nil, "Authorization", "")
	// Unknown /v1 routes do not reveal themselves before authentication.
	ts.must(http.StatusUnauthorized, "GET", "/v1/nothing", nil, "Authorization", "")
	ts.must(http.StatusOK, "GET", "/v1/stats", nil)
	if r := ts.must(http.StatusNotFound, "GET", "/v1/nothing", nil); r.errCode() != server.CodeNotFound {
		t.Errorf("404 body: %s", r.body)
	}
	r = ts.must(http.StatusMethodNotAllowed, "PUT", "/v1/search", "{}")
	if r.errCode() != server.CodeMethodNotAllowed || !strings.Contains(r.header.Get("Allow"), "POST") {
		t.Errorf("405: %s %v", r.body, r.header)
	}
	// Public endpoints need no token; metrics do, unless MetricsPublic.
	for _, p := range []string{"/healthz", "/readyz", "/", "/ui/app.js"} {
		ts.must(http.StatusOK, "GET", p, nil, "Authorization", "")
	}
	ts.must(http.StatusUnauthorized, "GET", "/metrics", nil, "Authorization", "")
	ts.must(http.StatusOK, "GET", "/metrics", nil)
	pub := newTestServer(t, &server.Options{MetricsPublic: true})
	pub.must(http.StatusOK, "GET", "/metrics", nil, "Authorization", "")
	// The Bearer scheme is case-insensitive (RFC 9110).
	for _, scheme := range []string{"bearer", "BEARER", "BeArEr"} {
		ts.must(http.StatusOK, "GET", "/v1/stats", nil, "Authorization", scheme+" "+ts.token)
	}
	// A client-supplied request id is echoed; a malformed one replaced.
	if got := ts.req("GET", "/healthz", nil, "X-Request-Id", "abc-123").header.Get("X-Request-Id"); got != "abc-123" {
		t.Errorf("request id %q", got)
	}
	if got := ts.req("GET", "/healthz", nil, "X-Request-Id", "bad id\"<>").header.Get("X-Request-Id"); got == "" || strings.ContainsAny(got, " \"<>") {
		t.Errorf("request id %q", got)
	}
}

func TestTokenRotation(t *testing.T) {
	ts := newTestServer(t, nil)
	old := ts.token
	tok, err := server.RotateToken(ts.dir, "")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(server.TokenPath(ts.dir))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v %v", fi.Mode(), err)
	}
	if again, created, err := server.EnsureToken(ts.dir); err != nil || created || again != tok {
		t.Fatalf("EnsureToken after rotate: %q %v %v", again, created, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for ts.req("GET", "/v1/stats", nil, "Authorization", "Bearer "+old).status != http.StatusUnauthorized {
		if time.Now().After(deadline) {
			t.Fatal("old token still accepted 5 s after rotation")
		}
		time.Sleep(100 * time.Millisecond)
	}
	ts.must(http.StatusOK, "GET", "/v1/stats", nil, "Authorization", "Bearer "+tok)
}

func TestCORS(t *testing.T) {
	const good, bad = "chrome-extension://abcdefghijklmnopabcdefghijklmnop", "https://evil.example"
	ts := newTestServer(t, &server.Options{AllowOrigins: []string{good}})

	pre := func(origin string) response {
		return ts.req("OPTIONS", "/v1/search", nil, "Authorization", "", "Origin", origin,
			"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type, x-ragmem-namespace")
	}
	r := pre(good)
	if r.status != http.StatusNoContent || r.header.Get("Access-Control-Allow-Origin") != good ||
		!strings.Contains(r.header.Get("Access-Control-Allow-Headers"), "Authorization") ||
		!strings.Contains(r.header.Get("Access-Control-Allow-Methods"), "POST") {
		t.Errorf("allowed preflight: %d %v", r.status, r.header)
	}
	r = pre(bad)
	if r.status != http.StatusForbidden || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("refused preflight: %d %v", r.status, r.header)
	}

	r = ts.req("POST", "/v1/search", map[string]any{"query": "otters"}, "Origin", good)
	if r.status != http.StatusOK || r.header.Get("Access-Control-Allow-Origin") != good || !strings.Contains(r.header.Get("Vary"), "Origin") {
		t.Errorf("allowed origin: %d %v", r.status, r.header)
	}
	r = ts.req("POST", "/v1/search", map[string]any{"query": "otters"}, "Origin", bad)
	if r.status != http.StatusForbidden || r.errCode() != server.CodeOriginNotAllowed || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("refused origin: %d %s %v", r.status, r.body, r.header)
	}
	// The web UI's own origin, and clients that send no Origin, are fine and get no CORS headers.
	r = ts.req("POST", "/v1/search", map[string]any{"query": "otters"}, "Origin", ts.url)
	if r.status != http.StatusOK || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("same origin: %d %v", r.status, r.header)
	}
	if _, err := server.New(context.Background(), ts.dir, &server.Options{AllowOrigins: []string{"chrome-extension://x/path"}}); err == nil {
		t.Error("an origin with a path was accepted")
	}
}

func TestHostCheck(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, h := range []string{"evil.example", "evil.example:7437", "10.0.0.1"} {
		if r := ts.req("GET", "/healthz", nil, "Host", h); r.status != http.StatusForbidden || r.errCode() != server.CodeHostNotAllowed {
			t.Errorf("Host %s: %d %s", h, r.status, r.body)
		}
	}
	for _, h := range []string{"localhost:7437", "127.0.0.1", "[::1]:7437", "app.localhost"} {
		ts.must(http.StatusOK, "GET", "/healthz", nil, "Host", h)
	}
	any := newTestServer(t, &server.Options{AllowedHosts: []string{"*"}})
	any.must(http.StatusOK, "GET", "/healthz", nil, "Host", "memory.example.org")
}

func TestBodyLimit(t *testing.T) {
	ts := newTestServer(t, &server.Options{MaxBodyBytes: 4096})
	big := `{"url":"https://a.example/","text":"` + strings.Repeat("x", 5000) + `"}`
	r := ts.must(http.StatusRequestEntityTooLarge, "POST", "/v1/pages", big)
	if r.errCode() != server.CodeTooLarge {
		t.Errorf("413 body: %s", r.body)
	}
	// Without a Content-Length (chunked), the limit bites while reading.
	req, _ := http.NewRequest("POST", ts.url+"/v1/pages", io.MultiReader(strings.NewReader(big)))
	req.ContentLength = -1
	req.Header.Set("Authorization", "Bearer "+ts.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked: %d", res.StatusCode)
	}
	small := `{"url":"https://a.example/","text":"` + strings.Repeat("x", 3000) + `"}`
	ts.must(http.StatusAccepted, "POST", "/v1/pages", small)
}

func TestRateLimit(t *testing.T) {
	ts := newTestServer(t, &server.Options{RateLimit: 0.5, RateBurst: 3})
	for i := 0; i < 3; i++ {
		ts.must(http.StatusOK, "GET", "/v1/stats", nil)
	}
	r := ts.must(http.StatusTooManyRequests, "GET", "/v1/stats", nil)
	if r.errCode() != server.CodeRateLimited || r.header.Get("Retry-After") == "" {
		t.Errorf("429: %s %v", r.body, r.header)
	}
	// Probes are not rate limited; failed authentication is, per address.
	ts.must(http.StatusOK, "GET", "/healthz", nil)
	codes := map[int]int{}
	for i := 0; i < 5; i++ {
		codes[ts.req("GET", "/v1/stats", nil, "Authorization", "Bearer rgm_guess").status]++
	}
	if codes[http.StatusUnauthorized] != 3 || codes[http.StatusTooManyRequests] != 2 {
		t.Errorf("guessing tokens: %v", codes)
	}
}

func TestPageLifecycle(t *testing.T) {
	ts := newTestServer(t, nil)
	const url = "https://wildlife.example/otters"
	job := ts.indexPage(map[string]any{"url": url, "html": article})
	if job.State != "done" || job.Chunks == 0 || job.URL != url {
		t.Fatalf("job: %+v", job)
	}
	// Same URL, same content: a no-op reported as such.
	r := ts.must(http.StatusOK, "POST", "/v1/pages", map[string]any{"url": url, "html": article})
	var acc rag.PageAccepted
	r.json(t, &acc)
	if acc.Status != "unchanged" || acc.JobID != "" || acc.Chunks != job.Chunks {
		t.Errorf("re-post: %+v", acc)
	}

	s := ts.search("otters sleep holding hands")
	if len(s.Results) == 0 || s.Results[0].URL != url {
		t.Fatalf("search: %+v", s)
	}
	top := s.Results[0]
	if top.Title != "Otters of the Pacific" || top.Score <= 0 || top.Explanation.Method == "" || top.Age == "" || top.CreatedAt.IsZero() {
		t.Errorf("result: %+v", top)
	}
	if top.Attrs["extractor"] != "readability" {
		t.Errorf("attrs: %v", top.Attrs)
	}
	for _, res := range ts.search("NAVIGATIONWORD ADVERTWORD FOOTERWORD trackingword").Results {
		t.Errorf("furniture was indexed: %q", res.Content)
	}

	var c rag.ContextJSON
	ts.must(http.StatusOK, "POST", "/v1/context", map[string]any{"query": "What do sea otters use stones for?", "model": "gpt-4o"}).json(t, &c)
	if c.Empty || !strings.Contains(c.Text, "anvils") || !strings.Contains(c.Text, `url="`+url+`"`) {
		t.Errorf("context text: %s", c.Text)
	}
	if c.Message.Role != "assistant" || !strings.HasPrefix(c.Message.Content, rag.UntrustedPrefix) || !strings.Contains(c.Message.Content, c.Text) {
		t.Errorf("message: %+v", c.Message)
	}
	if c.Tokens.Total <= 0 || c.Tokens.Total != c.Tokens.Knowledge+c.Tokens.Profile || c.Tokens.Knowledge > c.Budgets.KnowledgeBudget || len(c.Sources) == 0 {
		t.Errorf("tokens %+v budgets %+v sources %d", c.Tokens, c.Budgets, len(c.Sources))
	}

	var page rag.PageJSON
	ts.must(http.StatusOK, "GET", "/v1/pages?url="+url, nil).json(t, &page)
	if len(page.Chunks) != job.Chunks || page.Title != "Otters of the Pacific" {
		t.Errorf("page: %+v", page)
	}
	var srcs rag.SourcesJSON
	ts.must(http.StatusOK, "GET", "/v1/sources", nil).json(t, &srcs)
	if srcs.Total != 1 || srcs.Sources[0].URL != url || srcs.Sources[0].Chunks != job.Chunks {
		t.Errorf("sources: %+v", srcs)
	}

	ts.must(http.StatusOK, "DELETE", "/v1/pages?url="+url, nil)
	if hasURL(ts.search("otters sleep holding hands"), url) {
		t.Error("deleted page still found")
	}
	ts.must(http.StatusNotFound, "GET", "/v1/pages?url="+url, nil)
	ts.must(http.StatusNotFound, "DELETE", "/v1/pages?url="+url, nil)

	// Changed content replaces the page.
	job = ts.indexPage(map[string]any{"url": url, "text": "Otters groom their fur for hours.", "title": "Otter grooming"})
	if job.State != "done" {
		t.Fatalf("text job %+v", job)
	}
	if s := ts.search("otters groom fur"); len(s.Results) == 0 || s.Results[0].Title != "Otter grooming" {
		t.Errorf("text page: %+v", s)
	}
}

func TestPagesRejectBadInput(t *testing.T) {
	ts := newTestServer(t, nil)
	cases := []struct {
		name   string
		body   string
		ctype  string
		status int
		code   string
	}{
		{"not json", `{"url":`, "", 400, server.CodeInvalidJSON},
		{"empty body", ``, "", 400, server.CodeInvalidJSON},
		{"unknown field", `{"url":"https://a.example/","text":"x","colour":1}`, "", 400, server.CodeInvalidJSON},
		{"trailing data", `{"url":"https://a.example/","text":"x"} {}`, "", 400, server.CodeInvalidJSON},
		{"wrong type", `{"url":5,"text":"x"}`, "", 400, server.CodeInvalidJSON},
		{"form body", `url=x`, "application/x-www-form-urlencoded", 415, server.CodeUnsupportedMedia},
		{"no url", `{"text":"x"}`, "", 400, server.CodeBadRequest},
		{"relative url", `{"url":"/page","text":"x"}`, "", 400, server.CodeBadRequest},
		{"reserved scheme", `{"url":"preference://user","text":"x"}`, "", 403, server.CodeReserved},
		{"reserved attribute", `{"url":"https://a.example/","text":"x","attrs":{"memoryDir":"/tmp/m"}}`, "", 403, server.CodeReserved},
		{"both", `{"url":"https://a.example/","text":"x","html":"<p>y</p>"}`, "", 400, server.CodeBadRequest},
		{"neither", `{"url":"https://a.example/"}`, "", 422, server.CodeNoContent},
		{"blank text", `{"url":"https://a.example/","text":"  \n "}`, "", 422, server.CodeNoContent},
		{"only furniture", `{"url":"https://a.example/","html":"<nav>menu</nav><script>x()</script>"}`, "", 422, server.CodeNoContent},
		{"bad format", `{"url":"https://a.example/","text":"x","format":"pdf"}`, "", 400, server.CodeBadRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ts.req("POST", "/v1/pages", c.body, "Content-Type", c.ctype)
			if c.ctype == "" {
				r = ts.req("POST", "/v1/pages", c.body)
			}
			if r.status != c.status || r.errCode() != c.code {
				t.Errorf("status %d code %q, want %d %q: %s", r.status, r.errCode(), c.status, c.code, r.body)
			}
		})
	}
	for _, q := range []string{"", "?url=", "?url=relative", "?url=%00"} {
		if r := ts.req("GET", "/v1/pages"+q, nil); r.status != 400 {
			t.Errorf("GET /v1/pages%s: %d", q, r.status)
		}
	}
	for _, b := range []string{`{"query":""}`, `{"query":"x","topK":1000}`, `{"query":"x","mode":"magic"}`, `{"query":"x","filters":{"docTypes":["secret"]}}`} {
		if r := ts.req("POST", "/v1/search", b); r.status != 400 {
			t.Errorf("search %s: %d %s", b, r.status, r.body)
		}
	}
	if r := ts.req("POST", "/v1/context", `{"query":"x","modelContextLimit":-5}`); r.status != 400 {
		t.Errorf("context: %d", r.status)
	}
	if r := ts.req("GET", "/v1/sources?limit=0", nil); r.status != 400 {
		t.Errorf("sources limit: %d", r.status)
	}
	ts.must(http.StatusNotFound, "GET", "/v1/jobs/job_nope", nil)
}

func TestPreferences(t *testing.T) {
	ts := newTestServer(t, nil)
	var added struct {
		Preference struct{ ID, Type, Content string }
	}
	ts.must(http.StatusCreated, "POST", "/v1/preferences", map[string]any{"type": "style", "content": "Prefers concise answers with code"}).json(t, &added)
	if added.Preference.ID == "" || added.Preference.Type != "style" {
		t.Fatalf("added %+v", added)
	}
	ts.must(http.StatusBadRequest, "POST", "/v1/preferences", map[string]any{"type": "mood", "content": "x"})
	ts.must(http.StatusBadRequest, "POST", "/v1/preferences", map[string]any{"type": "style", "content": "  "})

	var det rag.DetectJSON
	ts.must(http.StatusOK, "POST", "/v1/preferences/detect", map[string]any{"message": "I'm a data engineer. How do I tune BM25?", "save": true}).json(t, &det)
	if !det.Detected || det.Intent.Type != "expertise" || det.Saved == nil {
		t.Fatalf("detect: %+v", det)
	}
	ts.must(http.StatusOK, "POST", "/v1/preferences/detect", map[string]any{"message": "What is BM25?"}).json(t, &det)
	if det.Detected {
		t.Errorf("detected in a question: %+v", det)
	}

	var list struct {
		Preferences []struct{ ID, Content string }
	}
	ts.must(http.StatusOK, "GET", "/v1/preferences", nil).json(t, &list)
	if len(list.Preferences) != 2 {
		t.Fatalf("list: %+v", list)
	}
	// The profile goes first into the context.
	var c rag.ContextJSON
	ts.must(http.StatusOK, "POST", "/v1/context", map[string]any{"query": "anything"}).json(t, &c)
	if !strings.Contains(c.Profile, "concise answers") || c.Tokens.Profile == 0 {
		t.Errorf("profile: %+v", c)
	}

	ts.must(http.StatusBadRequest, "DELETE", "/v1/preferences", nil)
	ts.must(http.StatusOK, "DELETE", "/v1/preferences?id="+added.Preference.ID, nil)
	ts.must(http.StatusNotFound, "DELETE", "/v1/preferences?id="+added.Preference.ID, nil)
	ts.must(http.StatusOK, "DELETE", "/v1/preferences?all=true", nil)
	ts.must(http.StatusOK, "GET", "/v1/preferences", nil).json(t, &list)
	if len(list.Preferences) != 0 {
		t.Errorf("after clear: %+v", list)
	}
	// A page cannot overwrite the preferences' source.
	ts.must(http.StatusCreated, "POST", "/v1/preferences", map[string]any{"type": "custom", "content": "Likes otters"})
	if r := ts.req("POST", "/v1/pages", map[string]any{"url": "Preference://user", "text": "hijack"}); r.status != 403 {
		t.Errorf("reserved scheme: %d", r.status)
	}
}

func TestNamespaces(t *testing.T) {
	ts := newTestServer(t, &server.Options{MaxNamespaces: 3})
	alice, err := server.RotateToken(ts.dir, "alice")
	if err != nil {
		t.Fatal(err)
	}
	asAlice := []string{"Authorization", "Bearer " + alice}
	asBob := []string{server.NamespaceHeader, "bob"}

	const secret = "https://alice.example/diary"
	ts.indexPage(map[string]any{"url": secret, "text": "Alice hid the quartz key under the blue flowerpot."}, asAlice...)
	if !hasURL(ts.search("quartz key flowerpot", asAlice...), secret) {
		t.Fatal("alice cannot find her own page")
	}
	// Neither bob nor the default namespace can see it.
	if hasURL(ts.search("quartz key flowerpot", asBob...), secret) {
		t.Error("bob sees alice's page")
	}
	if hasURL(ts.search("quartz key flowerpot"), secret) {
		t.Error("the default namespace sees alice's page")
	}
	ts.must(http.StatusNotFound, "GET", "/v1/pages?url="+secret, nil, asBob...)
	ts.must(http.StatusNotFound, "DELETE", "/v1/pages?url="+secret, nil, asBob...)
	// Alice's token cannot reach bob's namespace, even by asking.
	r := ts.must(http.StatusForbidden, "GET", "/v1/stats", nil, append(asAlice, server.NamespaceHeader, "bob")...)
	if r.errCode() != server.CodeForbidden {
		t.Errorf("cross-namespace: %s", r.body)
	}
	ts.must(http.StatusOK, "GET", "/v1/stats", nil, append(asAlice, server.NamespaceHeader, "alice")...)
	// The main token may pick alice's namespace explicitly.
	if !hasURL(ts.search("quartz key flowerpot", server.NamespaceHeader, "alice"), secret) {
		t.Error("main token with the namespace header cannot see alice's page")
	}
	for _, bad := range []string{"../etc", "Alice", "a/b", "-x", strings.Repeat("a", 65), "a.b"} {
		if r := ts.req("GET", "/v1/stats", nil, server.NamespaceHeader, bad); r.status != http.StatusBadRequest {
			t.Errorf("namespace %q: %d", bad, r.status)
		}
	}
	if _, err := os.Stat(filepath.Join(ts.dir, "namespaces", "alice")); err != nil {
		t.Errorf("alice's store: %v", err)
	}
	// Jobs are per namespace too.
	acc := ts.must(http.StatusAccepted, "POST", "/v1/pages", map[string]any{"url": "https://alice.example/2", "text": "more"}, asAlice...)
	var a rag.PageAccepted
	acc.json(t, &a)
	ts.must(http.StatusNotFound, "GET", "/v1/jobs/"+a.JobID, nil, asBob...)
	ts.waitJob(a.JobID, asAlice...)

	// More namespaces than MaxNamespaces: idle ones are closed and reopened.
	for _, ns := range []string{"c1", "c2", "c3", "c4"} {
		ts.indexPage(map[string]any{"url": "https://" + ns + ".example/", "text": "page of " + ns}, server.NamespaceHeader, ns)
	}
	if !hasURL(ts.search("quartz key flowerpot", asAlice...), secret) {
		t.Error("alice's page lost after her store was closed and reopened")
	}
}

func TestStatsAndMetrics(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.indexPage(map[string]any{"url": "https://wildlife.example/otters", "html": article})
	ts.search("otters")
	var st server.StatsJSON
	ts.must(http.StatusOK, "GET", "/v1/stats", nil).json(t, &st)
	if st.Store.DocumentCount != 1 || st.Store.ChunkCount == 0 || st.Server.NamespacesOpen != 1 {
		t.Errorf("stats: %+v", st)
	}
	m := string(ts.must(http.StatusOK, "GET", "/metrics", nil).body)
	for _, want := range []string{
		`ragmem_http_requests_total{code="200",method="POST",route="POST /v1/search"} 1`,
		`ragmem_http_request_duration_seconds_count{method="POST",route="POST /v1/search"} 1`,
		`ragmem_index_queue_depth 0`,
		`ragmem_index_jobs_done_total 1`,
		`ragmem_index_chunks ` + itoa(st.Store.ChunkCount),
		`ragmem_namespaces_open 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	ts.req("GET", "/v1/stats", nil, "Authorization", "")
	m = string(ts.must(http.StatusOK, "GET", "/metrics", nil).body)
	if !strings.Contains(m, `ragmem_http_errors_total{code="unauthorized",route="GET /v1/stats"} 1`) {
		t.Error("error counter missing")
	}
}

func itoa(n int) string {
	b := []byte{}
	if n == 0 {
		return "0"
	}
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func TestOpenAPI(t *testing.T) {
	ts := newTestServer(t, nil)
	var spec struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	ts.must(http.StatusOK, "GET", "/v1/openapi.json", nil).json(t, &spec)
	if !strings.HasPrefix(spec.OpenAPI, "3.") || len(spec.Paths) < 10 {
		t.Fatalf("spec: %v", spec.OpenAPI)
	}
	// Every documented operation exists: it answers something other than 404 or 405.
	for path, ops := range spec.Paths {
		for method := range ops {
			if method == "parameters" {
				continue
			}
			p := strings.ReplaceAll(path, "{id}", "job_x")
			r := ts.req(strings.ToUpper(method), p, nil)
			if r.status == http.StatusMethodNotAllowed || strings.Contains(string(r.body), "no route for") {
				t.Errorf("%s %s documented but not served: %d %s", method, path, r.status, r.body)
			}
		}
	}
}

func TestGracefulShutdownFinishesQueuedIndexing(t *testing.T) {
	dir := t.TempDir()
	ts, _, stop := runServer(t, dir, &server.Options{Logger: quietLogger(), RateLimit: -1})
	const pages = 40
	for i := 0; i < pages; i++ {
		ts.must(http.StatusAccepted, "POST", "/v1/pages", map[string]any{
			"url": "https://shutdown.example/" + itoa(i), "text": strings.Repeat("Page number "+itoa(i)+" talks about graceful shutdown. ", 200),
		})
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := http.Get(ts.url + "/healthz"); err == nil {
		t.Error("still serving after shutdown")
	}
	eng, err := rag.Open(context.Background(), dir, &rag.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	_, n, err := eng.Store().Sources(context.Background(), index.Filter{DocTypes: []string{index.DocKnowledge}}, 0, 1)
	if err != nil || n != pages {
		t.Fatalf("%d of %d queued pages indexed (%v)", n, pages, err)
	}
}

func TestHandleMountsBehindMiddleware(t *testing.T) {
	ts := newTestServer(t, &server.Options{AllowOrigins: []string{"moz-extension://1234"}})
	err := ts.srv.Handle("POST /v1/memories", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		eng, err := ts.srv.Engine(r)
		if err != nil {
			server.WriteError(w, r, http.StatusServiceUnavailable, server.CodeUnavailable, err.Error())
			return
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			server.WriteError(w, r, http.StatusRequestEntityTooLarge, server.CodeTooLarge, err.Error())
			return
		}
		st, _ := eng.Stats(r.Context())
		server.WriteJSON(w, http.StatusOK, map[string]any{"namespace": server.Namespace(r), "bytes": len(b), "chunks": st.ChunkCount})
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.srv.Handle("POST /v1/memories", http.NotFoundHandler()); !errors.Is(err, server.ErrRouteConflict) {
		t.Errorf("duplicate route: %v", err)
	}
	ts.must(http.StatusUnauthorized, "POST", "/v1/memories", "{}", "Authorization", "")
	var out struct {
		Namespace string
		Bytes     int
	}
	ts.must(http.StatusOK, "POST", "/v1/memories", "{}", server.NamespaceHeader, "team").json(t, &out)
	if out.Namespace != "team" || out.Bytes != 2 {
		t.Errorf("mounted handler saw %+v", out)
	}
	if r := ts.req("POST", "/v1/memories", "{}", "Origin", "https://evil.example"); r.status != http.StatusForbidden {
		t.Errorf("mounted route ignores CORS: %d", r.status)
	}
	m := string(ts.must(http.StatusOK, "GET", "/metrics", nil).body)
	if !strings.Contains(m, `route="POST /v1/memories"`) {
		t.Error("mounted route not in metrics")
	}
}

func TestSlowClientsAreCut(t *testing.T) {
	ts, addr, stop := runServer(t, t.TempDir(), &server.Options{Logger: quietLogger(), ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: 600 * time.Millisecond})
	defer func() { _ = stop() }()
	tok := ts.token
	for name, partial := range map[string]string{
		"headers": "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n", // never ends its headers
		"body": "POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + tok +
			"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"query\":\"slow", // never ends its body
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte(partial)); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = io.ReadAll(c) // returns when the server closes the connection
		c.Close()
		if el := time.Since(start); err != nil || el > 5*time.Second {
			t.Errorf("%s: connection held for %v (%v)", name, el, err)
		}
	}
}

func TestBusyNamespacesAreNotClosed(t *testing.T) {
	ts := newTestServer(t, &server.Options{MaxNamespaces: 2}) // the default namespace and one more
	entered, release := make(chan struct{}), make(chan struct{})
	if err := ts.srv.Handle("GET /v1/hold", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		eng, err := ts.srv.Engine(r)
		if err != nil {
			server.WriteError(w, r, http.StatusServiceUnavailable, server.CodeUnavailable, err.Error())
			return
		}
		close(entered)
		<-release
		st, err := eng.Stats(r.Context()) // the engine must still be open
		if err != nil {
			server.WriteError(w, r, http.StatusInternalServerError, server.CodeInternal, err.Error())
			return
		}
		server.WriteJSON(w, http.StatusOK, st)
	})); err != nil {
		t.Fatal(err)
	}
	held := make(chan response, 1)
	go func() { held <- ts.req("GET", "/v1/hold", nil, server.NamespaceHeader, "a") }()
	<-entered
	r := ts.req("GET", "/v1/stats", nil, server.NamespaceHeader, "b")
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Errorf("a third namespace while the second is busy: %d %s", r.status, r.body)
	}
	close(release)
	if r := <-held; r.status != http.StatusOK {
		t.Errorf("held request: %d %s", r.status, r.body)
	}
	ts.must(http.StatusOK, "GET", "/v1/stats", nil, server.NamespaceHeader, "b") // a is idle now and makes room
}

// The index's own normalisation decides "unchanged": a text page that
// starts with a byte-order mark (which the index drops) is unchanged the
// second time too.
func TestPageUnchangedAfterNormalisation(t *testing.T) {
	ts := newTestServer(t, nil)
	bom := map[string]any{"url": "https://example.com/bom", "text": "\uFEFFGrey herons wade in shallow water.", "format": "text"}
	ts.indexPage(bom)
	r := ts.must(http.StatusOK, "POST", "/v1/pages", bom)
	var acc rag.PageAccepted
	r.json(t, &acc)
	if acc.Status != "unchanged" || acc.Chunks != 1 {
		t.Errorf("re-post of a text with a byte-order mark: %+v", acc)
	}
}
