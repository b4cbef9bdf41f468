package weaviate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/filters"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/graphql"
	"github.com/weaviate/weaviate/entities/models"

	"github.com/ragmem/ragmem/index/driver"
)

// intent is a batch in flight (see the package comment).
type intent struct {
	State string   `json:"state"` // statePending or stateCommitted
	Owner string   `json:"owner"` // the writing Backend's token
	Add   []string `json:"add"`   // objects the batch creates (did not exist before)
	Del   []string `json:"del"`   // objects the batch deletes
}

const (
	statePending   = "pending"
	stateCommitted = "committed"
)

// ownerToken identifies this process's backends in intents.
var ownerToken = uuid.NewString()

// validate checks a batch before anything is written.
func (b *Backend) validate(ctx context.Context, bt *driver.Batch) error {
	if len(bt.Put) == 0 {
		return nil
	}
	dim, err := b.dimension(ctx)
	if err != nil {
		return err
	}
	if dim == 0 {
		dim = len(bt.Put[0].Vector)
	}
	seen := make(map[string]struct{}, len(bt.Put))
	for i := range bt.Put {
		r := &bt.Put[i]
		if r.ID == "" {
			return fmt.Errorf("%w: record %d has no id", driver.ErrInvalid, i)
		}
		if _, dup := seen[r.ID]; dup {
			return fmt.Errorf("%w: id %q appears twice in one batch", driver.ErrInvalid, r.ID)
		}
		seen[r.ID] = struct{}{}
		if r.SourceURL == "" {
			return fmt.Errorf("%w: record %q has no source URL", driver.ErrInvalid, r.ID)
		}
		if err := checkVector(r.Vector, dim); err != nil {
			return fmt.Errorf("%w: record %q has %s", driver.ErrInvalid, r.ID, err)
		}
		// Weaviate stores text as UTF-8 and would silently replace invalid
		// bytes; refuse rather than change the record. Attributes are
		// stored escaped and may hold any bytes.
		for name, s := range map[string]string{"id": r.ID, "source URL": r.SourceURL, "title": r.Title,
			"content": r.Content, "doc type": r.DocType, "content hash": r.ContentHash} {
			if !utf8.ValidString(s) {
				return fmt.Errorf("%w: record %q has a %s that is not valid UTF-8", driver.ErrInvalid, r.ID, name)
			}
		}
		for _, h := range r.HeadingPath {
			if !utf8.ValidString(h) {
				return fmt.Errorf("%w: record %q has a heading that is not valid UTF-8", driver.ErrInvalid, r.ID)
			}
		}
	}
	return nil
}

// Apply implements driver.Backend with the intent protocol described in the
// package comment.
func (b *Backend) Apply(ctx context.Context, bt *driver.Batch) error {
	if err := b.usable(); err != nil {
		return err
	}
	if bt.Empty() {
		return nil
	}
	if err := b.validate(ctx, bt); err != nil {
		return err
	}
	b.applyMu.Lock()
	defer b.applyMu.Unlock()
	if err := b.usable(); err != nil {
		return err
	}
	if err := b.recoverIntents(ctx, false); err != nil {
		return err
	}

	putIDs := make([]string, len(bt.Put))
	putSet := make(map[string]struct{}, len(bt.Put))
	for i := range bt.Put {
		putIDs[i] = b.objectID(bt.Put[i].ID)
		putSet[putIDs[i]] = struct{}{}
	}
	doomedSet := map[string]struct{}{}
	for lo := 0; lo < len(bt.DeleteSources); lo += 200 {
		srcs := bt.DeleteSources[lo:min(lo+200, len(bt.DeleteSources))]
		keys := make([]string, len(srcs))
		for i, src := range srcs {
			keys[i] = key(src)
		}
		ids, err := b.objectIDs(ctx, filters.Where().WithPath([]string{pSourceKey}).WithOperator(filters.ContainsAny).WithValueText(keys...))
		if err != nil {
			return err
		}
		for _, id := range ids {
			doomedSet[id] = struct{}{}
		}
	}
	for _, id := range bt.DeleteIDs {
		doomedSet[b.objectID(id)] = struct{}{}
	}
	var doomed []string
	for id := range doomedSet {
		if _, put := putSet[id]; !put {
			doomed = append(doomed, id)
		}
	}

	objs := make([]*models.Object, len(bt.Put))
	for i := range bt.Put {
		objs[i] = b.object(&bt.Put[i])
	}

	// One object written, nothing deleted: a single atomic write.
	if len(objs) <= 1 && len(doomed) == 0 {
		if err := b.putObjects(ctx, "write records", objs); err != nil {
			return err
		}
		b.written(bt)
		return nil
	}
	// Only deletions of one object: atomic too.
	if len(objs) == 0 && len(doomed) <= 1 {
		if err := b.deleteIDs(ctx, b.class, doomed); err != nil {
			return err
		}
		b.written(bt)
		return nil
	}

	in := intent{State: statePending, Owner: ownerToken, Del: doomed}
	if len(objs) > 0 {
		ex := make(map[string]struct{})
		for lo := 0; lo < len(putIDs); lo += 500 {
			existing, err := b.objectIDs(ctx, whereIDs(putIDs[lo:min(lo+500, len(putIDs))]))
			if err != nil {
				return err
			}
			for _, id := range existing {
				ex[id] = struct{}{}
			}
		}
		for _, id := range putIDs {
			if _, ok := ex[id]; !ok {
				in.Add = append(in.Add, id)
			}
		}
	} else {
		in.State = stateCommitted // nothing to undo: deletions only roll forward
	}
	intentID := uuid.NewString()
	if err := b.writeIntent(ctx, intentID, &in); err != nil {
		return err
	}
	if len(objs) > 0 {
		if err := b.putObjects(ctx, "write records", objs); err != nil {
			if rerr := b.rollback(ctx, intentID, &in); rerr != nil {
				b.log.Warn("weaviate: could not undo a failed batch; it will be undone by the next recovery", "namespace", b.ns, "err", rerr)
			}
			return err
		}
		// Commit point. Recovery by another process may have undone a
		// batch that took longer than IntentTimeout: check first.
		if ok, err := b.intentExists(ctx, intentID); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("%w: the batch was undone by another writer's recovery after %v; raise IntentTimeout", ErrServer, b.intentTO)
		}
		in.State = stateCommitted
		if err := b.writeIntent(ctx, intentID, &in); err != nil {
			// Unknown whether the commit landed; recovery decides.
			return err
		}
	}
	b.written(bt)
	// After the commit point the batch is applied; finishing is cleanup that
	// recovery repeats if it fails here.
	if err := b.finish(ctx, intentID, &in); err != nil {
		b.log.Warn("weaviate: batch applied but old records not yet removed; the next write or open finishes it", "namespace", b.ns, "err", err)
	}
	return nil
}

// written records a successful mutation.
func (b *Backend) written(bt *driver.Batch) {
	if len(bt.Put) > 0 && b.dim.Load() == 0 {
		b.dim.Store(int64(len(bt.Put[0].Vector)))
	}
	b.lastSync.Store(b.now().UnixNano())
}

// finish deletes what a committed intent deletes, then the intent.
func (b *Backend) finish(ctx context.Context, id string, in *intent) error {
	if err := b.deleteIDs(ctx, b.class, in.Del); err != nil {
		return err
	}
	return b.deleteIDs(ctx, MetaClass, []string{id})
}

// rollback deletes what a pending intent created, then the intent.
func (b *Backend) rollback(ctx context.Context, id string, in *intent) error {
	if err := b.deleteIDs(ctx, b.class, in.Add); err != nil {
		return err
	}
	return b.deleteIDs(ctx, MetaClass, []string{id})
}

func (b *Backend) writeIntent(ctx context.Context, id string, in *intent) error {
	js, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("%w: encode intent: %w", ErrServer, err)
	}
	return b.putMeta(ctx, id, kindIntent, "intent", string(js))
}

func (b *Backend) intentExists(ctx context.Context, id string) (bool, error) {
	objs, err := b.metaObjects(ctx, "read intent", whereIDs([]string{id}))
	return len(objs) > 0, err
}

// recoverIntents finishes committed batches and undoes pending ones that are
// ours (we hold applyMu, so none of ours is running) or older than
// IntentTimeout. The caller holds applyMu.
func (b *Backend) recoverIntents(ctx context.Context, atOpen bool) error {
	objs, err := b.metaObjects(ctx, "read intents", and(whereEq(mNamespace, b.ns), whereEq(mKind, kindIntent)))
	if err != nil {
		return err
	}
	for _, o := range objs {
		var in intent
		if err := json.Unmarshal([]byte(o.Value), &in); err != nil {
			return fmt.Errorf("%w: intent %s of namespace %s: %w", driver.ErrCorrupt, o.Additional.ID, b.ns, err)
		}
		switch {
		case in.State == stateCommitted:
			if err := b.finish(ctx, o.Additional.ID, &in); err != nil {
				return err
			}
			b.log.Info("weaviate: finished a committed batch", "namespace", b.ns, "deleted", len(in.Del))
		case in.Owner == ownerToken || b.stale(o.Created):
			if err := b.rollback(ctx, o.Additional.ID, &in); err != nil {
				return err
			}
			b.log.Warn("weaviate: undid an unfinished batch", "namespace", b.ns, "created", len(in.Add), "atOpen", atOpen)
		}
	}
	return nil
}

func (b *Backend) stale(created string) bool {
	t, err := time.Parse(time.RFC3339Nano, created)
	return err != nil || b.now().Sub(t) > b.intentTO
}

// objectIDs lists the ids of the record objects matching w.
func (b *Backend) objectIDs(ctx context.Context, w *filters.WhereBuilder) ([]string, error) {
	var out []string
	for off := 0; ; off += page {
		gs, err := b.getRecords(ctx, "list record ids", b.get().WithWhere(w).WithLimit(page).WithOffset(off).
			WithFields(graphql.Field{Name: "_additional", Fields: []graphql.Field{{Name: "id"}}}))
		if err != nil {
			return nil, err
		}
		for _, g := range gs {
			out = append(out, g.Additional.ID)
		}
		if len(gs) < page {
			return out, nil
		}
	}
}

// putObjects writes objects (insert or replace), BatchSize per request, and
// fails if any object failed.
func (b *Backend) putObjects(ctx context.Context, op string, objs []*models.Object) error {
	for lo := 0; lo < len(objs); lo += b.batch {
		chunk := objs[lo:min(lo+b.batch, len(objs))]
		bb := b.c.Batch().ObjectsBatcher().WithObjects(chunk...)
		if b.replicated || b.metaReplicated {
			bb = bb.WithConsistencyLevel(b.cl)
		}
		resp, err := bb.Do(ctx)
		if err != nil {
			return b.wrap(op, err)
		}
		var msgs []string
		for _, r := range resp {
			if r.Result != nil && r.Result.Errors != nil {
				for _, e := range r.Result.Errors.Error {
					if e != nil {
						msgs = append(msgs, e.Message)
					}
				}
			}
		}
		if len(msgs) > 0 {
			return batchErr(op, msgs)
		}
		if len(resp) != len(chunk) {
			return fmt.Errorf("%w: %s: the server answered for %d of %d objects", ErrServer, op, len(resp), len(chunk))
		}
	}
	return nil
}

func batchErr(op string, msgs []string) error {
	first := msgs[0]
	var n int
	if len(msgs) > 1 {
		n = len(msgs) - 1
	}
	msg := fmt.Sprintf("%s: %s", op, first)
	if n > 0 {
		msg += fmt.Sprintf(" (and %d more)", n)
	}
	low := strings.ToLower(first)
	if strings.Contains(low, "replica") || strings.Contains(low, "consistency") || strings.Contains(low, "connect") {
		return fmt.Errorf("%w: %s", ErrUnavailable, msg)
	}
	return fmt.Errorf("%w: %s", ErrServer, msg)
}

// deleteIDs deletes objects of class by id, 500 per request.
func (b *Backend) deleteIDs(ctx context.Context, class string, ids []string) error {
	for lo := 0; lo < len(ids); lo += 500 {
		chunk := ids[lo:min(lo+500, len(ids))]
		if err := b.deleteWhere(ctx, class, whereIDs(chunk)); err != nil {
			return err
		}
	}
	return nil
}

func (b *Backend) deleteWhere(ctx context.Context, class string, w *filters.WhereBuilder) error {
	bd := b.c.Batch().ObjectsBatchDeleter().WithClassName(class).WithWhere(w).WithOutput("verbose")
	if b.replicated || b.metaReplicated {
		bd = bd.WithConsistencyLevel(b.cl)
	}
	resp, err := bd.Do(ctx)
	if err != nil {
		return b.wrap("delete objects", err)
	}
	if resp.Results != nil && resp.Results.Failed > 0 {
		var msgs []string
		for _, o := range resp.Results.Objects {
			if o != nil && o.Errors != nil {
				for _, e := range o.Errors.Error {
					if e != nil {
						msgs = append(msgs, e.Message)
					}
				}
			}
		}
		if len(msgs) == 0 {
			msgs = []string{fmt.Sprintf("%d objects not deleted", resp.Results.Failed)}
		}
		return batchErr("delete objects", msgs)
	}
	return nil
}
