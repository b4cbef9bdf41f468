package weaviate

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	pb "github.com/weaviate/weaviate/grpc/generated/protocol/v1"

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
	for i := range bt.Put {
		putIDs[i] = b.objectID(bt.Put[i].ID)
	}
	doomed, err := b.doomed(ctx, bt, putIDs)
	if err != nil {
		return err
	}
	objs := make([]*pb.BatchObject, len(bt.Put))
	for i := range bt.Put {
		objs[i] = b.object(&bt.Put[i])
	}

	switch {
	case len(objs) <= 1 && len(doomed) == 0:
		// One object written, nothing deleted: a single atomic write.
		err = b.putObjects(ctx, "write records", objs)
	case len(objs) == 0 && len(doomed) <= 1:
		// Only deletions of one object: atomic too.
		err = b.deleteIDs(ctx, b.class, doomed)
	default:
		return b.applyWithIntent(ctx, bt, objs, putIDs, doomed)
	}
	if err != nil {
		return err
	}
	b.written(bt)
	return nil
}

// doomed returns the objects a batch deletes (by source, in queries of 200
// sources, and by ID) that it does not write again.
func (b *Backend) doomed(ctx context.Context, bt *driver.Batch, putIDs []string) ([]string, error) {
	doomedSet := map[string]struct{}{}
	for lo := 0; lo < len(bt.DeleteSources); lo += 200 {
		srcs := bt.DeleteSources[lo:min(lo+200, len(bt.DeleteSources))]
		keys := make([]string, len(srcs))
		for i, src := range srcs {
			keys[i] = key(src)
		}
		ids, err := b.objectIDs(ctx, fTexts(pSourceKey, pb.Filters_OPERATOR_CONTAINS_ANY, keys))
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			doomedSet[id] = struct{}{}
		}
	}
	for _, id := range bt.DeleteIDs {
		doomedSet[b.objectID(id)] = struct{}{}
	}
	for _, id := range putIDs {
		delete(doomedSet, id)
	}
	var doomed []string
	for id := range doomedSet {
		doomed = append(doomed, id)
	}
	return doomed, nil
}

// newIDs returns those of ids that name no object yet (asked 500 at a
// time): what undoing the batch deletes.
func (b *Backend) newIDs(ctx context.Context, ids []string) ([]string, error) {
	ex := make(map[string]struct{})
	for lo := 0; lo < len(ids); lo += 500 {
		existing, err := b.objectIDs(ctx, fIDs(ids[lo:min(lo+500, len(ids))]))
		if err != nil {
			return nil, err
		}
		for _, id := range existing {
			ex[id] = struct{}{}
		}
	}
	var added []string
	for _, id := range ids {
		if _, ok := ex[id]; !ok {
			added = append(added, id)
		}
	}
	return added, nil
}

// applyWithIntent applies a batch that no single write makes atomic: an
// intent names what it adds and deletes, the objects are written, the
// intent is committed (the commit point), and the old objects are deleted.
func (b *Backend) applyWithIntent(ctx context.Context, bt *driver.Batch, objs []*pb.BatchObject, putIDs, doomed []string) error {
	in := intent{State: statePending, Owner: ownerToken, Del: doomed}
	if len(objs) > 0 {
		added, err := b.newIDs(ctx, putIDs)
		if err != nil {
			return err
		}
		in.Add = added
	} else {
		in.State = stateCommitted // nothing to undo: deletions only roll forward
	}
	intentID := uuid.NewString()
	if err := b.writeIntent(ctx, intentID, &in); err != nil {
		return err
	}
	if len(objs) > 0 {
		if err := b.writeAndCommit(ctx, intentID, &in, objs); err != nil {
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

// writeAndCommit writes a pending intent's objects, undoing them when the
// write fails, and commits the intent if it still stands.
func (b *Backend) writeAndCommit(ctx context.Context, intentID string, in *intent, objs []*pb.BatchObject) error {
	if err := b.putObjects(ctx, "write records", objs); err != nil {
		if rerr := b.rollback(ctx, intentID, in); rerr != nil {
			b.log.Warn("weaviate: could not undo a failed batch; it will be undone by the next recovery", "namespace", b.ns, "err", rerr)
		}
		return err
	}
	// Commit point. Recovery by another process may have undone a batch
	// that took longer than IntentTimeout: check first.
	if ok, err := b.intentExists(ctx, intentID); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("%w: the batch was undone by another writer's recovery after %v; raise IntentTimeout", ErrServer, b.intentTO)
	}
	in.State = stateCommitted
	// On failure it is unknown whether the commit landed; recovery decides.
	return b.writeIntent(ctx, intentID, in)
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
	_, ok, err := b.metaByID(ctx, "read intent", id)
	return ok, err
}

// recoverIntents finishes committed batches and undoes pending ones that are
// ours (we hold applyMu, so none of ours is running) or older than
// IntentTimeout. The caller holds applyMu.
func (b *Backend) recoverIntents(ctx context.Context, atOpen bool) error {
	objs, err := b.metaObjects(ctx, "read intents", fAnd(fEq(mNamespace, b.ns), fEq(mKind, kindIntent)))
	if err != nil {
		return err
	}
	for _, o := range objs {
		var in intent
		if err := json.Unmarshal([]byte(o.Value), &in); err != nil {
			return fmt.Errorf("%w: intent %s of namespace %s: %w", driver.ErrCorrupt, o.ID, b.ns, err)
		}
		switch {
		case in.State == stateCommitted:
			if err := b.finish(ctx, o.ID, &in); err != nil {
				return err
			}
			b.log.Info("weaviate: finished a committed batch", "namespace", b.ns, "deleted", len(in.Del))
		case in.Owner == ownerToken || b.stale(o.Created):
			if err := b.rollback(ctx, o.ID, &in); err != nil {
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

// objectIDs lists the ids of the record objects matching f.
func (b *Backend) objectIDs(ctx context.Context, f *pb.Filters) ([]string, error) {
	var out []string
	for off := 0; ; off += page {
		req := b.recordSearch(page, &pb.MetadataRequest{Uuid: true}, &pb.PropertiesRequest{})
		req.Offset, req.Filters = uint32(off), f
		rs, err := b.search(ctx, "list record ids", req)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			out = append(out, r.GetMetadata().GetId())
		}
		if len(rs) < page {
			return out, nil
		}
	}
}

// putObjects writes objects (insert or replace), BatchSize per request, and
// fails if any object failed.
func (b *Backend) putObjects(ctx context.Context, op string, objs []*pb.BatchObject) error {
	for lo := 0; lo < len(objs); lo += b.batch {
		if err := b.batchObjects(ctx, op, objs[lo:min(lo+b.batch, len(objs))]); err != nil {
			return err
		}
	}
	return nil
}

// deleteIDs deletes objects of class by id, 500 per request.
func (b *Backend) deleteIDs(ctx context.Context, class string, ids []string) error {
	for lo := 0; lo < len(ids); lo += 500 {
		if err := b.batchDelete(ctx, class, fIDs(ids[lo:min(lo+500, len(ids))])); err != nil {
			return err
		}
	}
	return nil
}
