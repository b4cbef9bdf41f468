package memory

import (
	"fmt"
	"math/rand"
	"strings"
)

// A generated stream of facts about a made-up system, for consolidation and
// supersession: each fact is a component, an attribute and a value, said in
// one of several phrasings. Restatements of a fact use another phrasing
// (other word order, other verbs, other filler) with the same value;
// contradictions use a new value. Facts about the same component share its
// name; facts of the same attribute share the attribute's words.

var streamComponents = []string{
	"billing", "checkout", "invoice", "search", "upload", "gateway", "scheduler", "mailer", "reporting", "profile",
	"inventory", "shipping", "catalog", "payments", "ledger", "analytics", "notification", "session", "recommendation", "pricing",
	"audit", "export", "import", "thumbnail", "geocoding", "webhook", "archive", "onboarding", "subscription", "loyalty",
}

// streamAttr is an attribute with its phrasings; %[1]s is the component,
// %[2]s the value.
type streamAttr struct {
	name      string
	values    []string
	phrasings []string
}

var streamAttrs = []streamAttr{
	{"store", []string{"Postgres", "MySQL", "Redis", "SQLite", "DynamoDB", "Cassandra", "MongoDB"}, []string{
		"The %[1]s service stores its records in %[2]s.",
		"Records of the %[1]s service are stored in %[2]s.",
		"%[2]s holds the records that the %[1]s service stores.",
		"For storage, the %[1]s service keeps its records in %[2]s.",
	}},
	{"port", []string{"8080", "8081", "9090", "7000", "5001", "3000", "8443"}, []string{
		"The %[1]s service listens on port %[2]s.",
		"Port %[2]s is where the %[1]s service listens.",
		"The %[1]s service accepts connections and listens on port %[2]s.",
		"Connections to the %[1]s service go to its listening port %[2]s.",
	}},
	{"deploy", []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday"}, []string{
		"Deployments of the %[1]s service happen every %[2]s.",
		"The %[1]s service is deployed every %[2]s.",
		"Every %[2]s the %[1]s service gets its deployment.",
		"We deploy the %[1]s service on %[2]s, every week.",
	}},
	{"owner", []string{"Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran"}, []string{
		"The %[1]s service is owned by %[2]s.",
		"%[2]s owns the %[1]s service.",
		"Ownership of the %[1]s service lies with %[2]s.",
		"Questions about the %[1]s service go to its owner, %[2]s.",
	}},
	{"timeout", []string{"5", "10", "15", "30", "45", "60", "90"}, []string{
		"Requests to the %[1]s service time out after %[2]s seconds.",
		"The %[1]s service has a request timeout of %[2]s seconds.",
		"After %[2]s seconds a request to the %[1]s service times out.",
		"The request timeout for the %[1]s service is %[2]s seconds.",
	}},
}

// streamFact is one fact of the stream.
type streamFact struct {
	component string
	attr      int
	value     string
}

func (f streamFact) key() string { return f.component + "/" + streamAttrs[f.attr].name }

func (f streamFact) say(phrasing int) string {
	a := streamAttrs[f.attr]
	return fmt.Sprintf(a.phrasings[phrasing%len(a.phrasings)], f.component, f.value)
}

// streamWrite is one memory of the stream.
type streamWrite struct {
	fact streamFact
	text string
	// first is true for the first statement of a fact (a new memory),
	// false for a restatement or a contradiction.
	first bool
	// contradicts is true when the value changed from the fact's previous
	// statement.
	contradicts bool
}

// title is a memory title: the statement itself, which differs between
// phrasings (so consolidation, not the slug, must find the duplicate).
func (w streamWrite) title() string { return strings.TrimSuffix(w.text, ".") }

// genStream draws nFacts distinct facts and states each once, then restates
// it up to maxRepeats times in other phrasings; with contradictions > 0,
// that many facts later get a new value (stated once). The order is
// shuffled, except that each fact's first statement comes before its
// restatements and a contradiction after all of them.
func genStream(r *rand.Rand, nFacts, maxRepeats, contradictions int) []streamWrite {
	seen := map[string]bool{}
	var facts []streamFact
	for len(facts) < nFacts {
		f := streamFact{component: streamComponents[r.Intn(len(streamComponents))], attr: r.Intn(len(streamAttrs))}
		if seen[f.key()] {
			continue
		}
		seen[f.key()] = true
		vs := streamAttrs[f.attr].values
		f.value = vs[r.Intn(len(vs))]
		facts = append(facts, f)
	}
	// Each fact's statements in order; then interleave the facts randomly.
	queues := make([][]streamWrite, len(facts))
	for i, f := range facts {
		p := r.Intn(4)
		queues[i] = append(queues[i], streamWrite{fact: f, text: f.say(p), first: true})
		for k, n := 0, r.Intn(maxRepeats+1); k < n; k++ {
			queues[i] = append(queues[i], streamWrite{fact: f, text: f.say(p + 1 + k)})
		}
		if i < contradictions {
			g := f
			vs := streamAttrs[f.attr].values
			for g.value == f.value {
				g.value = vs[r.Intn(len(vs))]
			}
			queues[i] = append(queues[i], streamWrite{fact: g, text: g.say(r.Intn(4)), contradicts: true})
		}
	}
	var out []streamWrite
	for {
		var open []int
		for i, q := range queues {
			if len(q) > 0 {
				open = append(open, i)
			}
		}
		if len(open) == 0 {
			return out
		}
		i := open[r.Intn(len(open))]
		out = append(out, queues[i][0])
		queues[i] = queues[i][1:]
	}
}
