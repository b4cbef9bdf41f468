package weaviate

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/weaviate/weaviate/entities/models"
)

// Property names of a record object.
const (
	pRecordID    = "recordId"
	pSourceURL   = "sourceUrl"
	pSourceKey   = "sourceKey" // hash of sourceUrl: what filters compare
	pTitle       = "title"
	pHeadingPath = "headingPath"
	pContent     = "content"
	pTerms       = "terms" // analysed title + headings + content: what BM25 searches
	pDocType     = "docType"
	pDocKey      = "docKey" // hash of docType
	pPosition    = "position"
	pStart       = "start"
	pEnd         = "end"
	pTokens      = "tokens"
	pCreatedAt   = "createdAt"
	pContentHash = "contentHash"
	pAttrs       = "attrs"    // JSON object of the attributes
	pAttrKeys    = "attrKeys" // one hash per key/value pair
)

// Property names of a meta object.
const (
	mNamespace = "namespace"
	mKind      = "kind" // kindMeta or kindIntent
	mKey       = "key"
	mValue     = "value"
	mCreated   = "created"
)

func prop(name, dataType, tokenization string, filterable, searchable bool) *models.Property {
	return &models.Property{
		Name:            name,
		DataType:        []string{dataType},
		Tokenization:    tokenization,
		IndexFilterable: &filterable,
		IndexSearchable: &searchable,
	}
}

func recordProps() []*models.Property {
	return []*models.Property{
		prop(pRecordID, "text", "field", false, false),
		prop(pSourceURL, "text", "field", true, false),
		prop(pSourceKey, "text", "field", true, false),
		prop(pTitle, "text", "field", false, false),
		prop(pHeadingPath, "text[]", "field", false, false),
		prop(pContent, "text", "field", false, false),
		prop(pTerms, "text", "whitespace", false, true),
		prop(pDocType, "text", "field", false, false),
		prop(pDocKey, "text", "field", true, false),
		prop(pPosition, "int", "", false, false),
		prop(pStart, "int", "", false, false),
		prop(pEnd, "int", "", false, false),
		prop(pTokens, "int", "", false, false),
		prop(pCreatedAt, "date", "", false, false),
		prop(pContentHash, "text", "field", false, false),
		prop(pAttrs, "text", "field", false, false),
		prop(pAttrKeys, "text[]", "field", true, false),
	}
}

func metaProps() []*models.Property {
	return []*models.Property{
		prop(mNamespace, "text", "field", true, false),
		prop(mKind, "text", "field", true, false),
		prop(mKey, "text", "field", false, false),
		prop(mValue, "text", "field", false, false),
		prop(mCreated, "date", "", false, false),
	}
}

func (b *Backend) recordClass(replicas, shards int) *models.Class {
	return &models.Class{
		Class:       b.class,
		Description: "ragmem chunk records of namespace " + b.ns,
		Vectorizer:  "none",
		VectorIndexConfig: map[string]any{
			"distance": "cosine",
		},
		InvertedIndexConfig: &models.InvertedIndexConfig{
			Bm25:      &models.BM25Config{K1: 1.2, B: 0.75},
			Stopwords: &models.StopwordConfig{Preset: "none"}, // terms are analysed by ragmem
		},
		ReplicationConfig: &models.ReplicationConfig{Factor: int64(replicas)},
		ShardingConfig:    map[string]any{"desiredCount": shards},
		Properties:        recordProps(),
	}
}

func metaClass(replicas int) *models.Class {
	return &models.Class{
		Class:             MetaClass,
		Description:       "ragmem store settings and write intents, for every namespace",
		Vectorizer:        "none",
		VectorIndexConfig: map[string]any{"skip": true},
		ReplicationConfig: &models.ReplicationConfig{Factor: int64(replicas)},
		ShardingConfig:    map[string]any{"desiredCount": 1},
		Properties:        metaProps(),
	}
}

// ensureSchema creates the record and meta collections, or checks that the
// existing ones have the properties ragmem needs.
func (b *Backend) ensureSchema(ctx context.Context, replicas, shards int) error {
	f, err := b.ensureClass(ctx, metaClass(replicas))
	if err != nil {
		return err
	}
	b.metaReplicated = f > 1
	f, err = b.ensureClass(ctx, b.recordClass(replicas, shards))
	b.replicated = f > 1
	return err
}

// ensureClass returns the replication factor of the collection.
func (b *Backend) ensureClass(ctx context.Context, want *models.Class) (int64, error) {
	for attempt := 0; ; attempt++ {
		var got models.Class
		code, err := b.restJSON(ctx, "read schema of "+want.Class, http.MethodGet, "/v1/schema/"+url.PathEscape(want.Class), nil, &got)
		if err == nil {
			var f int64 = 1
			if got.ReplicationConfig != nil {
				f = got.ReplicationConfig.Factor
			}
			return f, checkClass(want, &got)
		}
		if code != http.StatusNotFound {
			return 0, err
		}
		code, err = b.createClass(ctx, want)
		if err == nil {
			return want.ReplicationConfig.Factor, nil
		}
		// Another process may have created it meanwhile: read it again once.
		if attempt > 0 || code != http.StatusUnprocessableEntity {
			return 0, err
		}
	}
}

// createClass creates a collection.
func (b *Backend) createClass(ctx context.Context, c *models.Class) (int, error) {
	return b.restJSON(ctx, "create collection "+c.Class, http.MethodPost, "/v1/schema", c, nil)
}

// deleteClass deletes a collection; one that does not exist is no error.
func (b *Backend) deleteClass(ctx context.Context, class string) error {
	_, err := b.restJSON(ctx, "delete collection "+class, http.MethodDelete, "/v1/schema/"+url.PathEscape(class), nil, nil, http.StatusNotFound)
	return err
}

// checkClass reports how an existing collection differs from what ragmem
// needs; extra properties are allowed.
func checkClass(want, got *models.Class) error {
	var probs []string
	if got.Vectorizer != "" && got.Vectorizer != "none" {
		probs = append(probs, fmt.Sprintf("vectorizer is %q, want \"none\"", got.Vectorizer))
	}
	if d := vectorDistance(got); want.Class != MetaClass && d != "" && d != "cosine" {
		probs = append(probs, fmt.Sprintf("vector distance is %q, want \"cosine\"", d))
	}
	have := map[string]*models.Property{}
	for _, p := range got.Properties {
		have[strings.ToLower(p.Name)] = p
	}
	for _, w := range want.Properties {
		g, ok := have[strings.ToLower(w.Name)]
		switch {
		case !ok:
			probs = append(probs, fmt.Sprintf("property %s is missing", w.Name))
		case strings.Join(g.DataType, ",") != strings.Join(w.DataType, ","):
			probs = append(probs, fmt.Sprintf("property %s has type %v, want %v", w.Name, g.DataType, w.DataType))
		case w.Tokenization != "" && g.Tokenization != w.Tokenization:
			probs = append(probs, fmt.Sprintf("property %s has tokenization %q, want %q", w.Name, g.Tokenization, w.Tokenization))
		case isTrue(w.IndexFilterable) && !isTrue(g.IndexFilterable):
			probs = append(probs, fmt.Sprintf("property %s is not filterable", w.Name))
		case isTrue(w.IndexSearchable) && !isTrue(g.IndexSearchable):
			probs = append(probs, fmt.Sprintf("property %s is not searchable", w.Name))
		}
	}
	if len(probs) > 0 {
		return fmt.Errorf("%w: collection %s was not created by this version of ragmem: %s; "+
			"use another namespace, or migrate into a new one and delete this collection",
			ErrSchema, want.Class, strings.Join(probs, "; "))
	}
	return nil
}

func isTrue(p *bool) bool { return p != nil && *p }

func vectorDistance(c *models.Class) string {
	if m, ok := c.VectorIndexConfig.(map[string]any); ok {
		if d, ok := m["distance"].(string); ok {
			return d
		}
	}
	return ""
}

// Drop deletes the namespace's collection and its settings from the
// server: every record is lost. The backend is closed.
func (b *Backend) Drop(ctx context.Context) error {
	if err := b.usable(); err != nil {
		return err
	}
	b.applyMu.Lock()
	defer b.applyMu.Unlock()
	if err := b.deleteClass(ctx, b.class); err != nil {
		return err
	}
	if err := b.batchDelete(ctx, MetaClass, fEq(mNamespace, b.ns)); err != nil {
		return err
	}
	b.closed.Store(true)
	b.release()
	return nil
}
