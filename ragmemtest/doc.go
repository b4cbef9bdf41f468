// Package ragmemtest helps write property-based tests of ragmem, in the
// spirit of net/http/httptest and testing/fstest: the properties ragmem
// promises (docs/spec.md) as gopter generators and invariant checkers, and
// an engine that opens in memory for a test.
//
// Generators (GenDocument, GenCorpus, GenQuery, GenPreference,
// GenStatement, GenRemembered, GenAsked, GenLeadIns, GenLongStatement,
// GenOrdinary, GenBudgetParams, GenCandidates, GenBlock, GenRankedLists,
// GenText) are built from gopter's combinators, so that a
// failing case shrinks to a small one; PlainStatements and PlainRemembered
// list every statement and fact those generators phrase, for a property to
// check them all in every run. Checkers (CheckBlock, CheckMessage,
// CheckResults, CheckBudgets, CheckSelection, CheckRelativeTime,
// CheckChunks) return nil when a property holds and an error saying what
// broke otherwise; they are written from the specification, not from the
// code they check, and TokenOracle counts tokens with tiktoken-go itself
// rather than with ragmem's tokenizer. Parameters and Run give every
// property at least MinRuns cases, a logged seed to replay
// (RAGMEM_PROPERTY_SEED) and long runs on demand (RAGMEM_PROPERTY_RUNS).
//
// A project that embeds ragmem runs the same properties against its own
// configuration; TestMyKnowledgeContext in example_test.go (also in
// docs/testing.md) is a complete test to copy:
//
//	eng := ragmemtest.NewEngine(t, &ragmemtest.EngineOptions{Config: myConfig})
//	docs := ragmemtest.Sample[[]index.Document](ragmemtest.GenCorpus(30, 30), 1)
//	... eng.IndexDocuments(ctx, docs) ...
//	ragmemtest.Run(t, "context messages are isolated", prop.ForAll(func(q string) string {
//		c, err := eng.ContextFor(ctx, q, rag.ContextOptions{Model: "gpt-4o"})
//		...
//		return ragmemtest.ErrString(ragmemtest.CheckMessage(c.Block, c.Message))
//	}, ragmemtest.GenQuery()))
//
// Everything in the package is safe for concurrent use; generated values
// are plain values.
package ragmemtest
