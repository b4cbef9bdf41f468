package weaviate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	pb "github.com/weaviate/weaviate/grpc/generated/protocol/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// search runs one gRPC Search.
func (b *Backend) search(ctx context.Context, op string, req *pb.SearchRequest) ([]*pb.SearchResult, error) {
	cctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	req.Uses_127Api = true
	reply, err := b.rpc.Search(cctx, req)
	if err != nil {
		return nil, b.rpcErr(ctx, op, err)
	}
	return reply.GetResults(), nil
}

// aggregate runs one gRPC Aggregate.
func (b *Backend) aggregate(ctx context.Context, op string, req *pb.AggregateRequest) (*pb.AggregateReply, error) {
	cctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	reply, err := b.rpc.Aggregate(cctx, req)
	if err != nil {
		return nil, b.rpcErr(ctx, op, err)
	}
	return reply, nil
}

// batchObjects writes objects with one gRPC BatchObjects and fails if any
// object failed.
func (b *Backend) batchObjects(ctx context.Context, op string, objs []*pb.BatchObject) error {
	cctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	req := &pb.BatchObjectsRequest{Objects: objs}
	if b.replicated || b.metaReplicated {
		req.ConsistencyLevel = &b.cl
	}
	reply, err := b.rpc.BatchObjects(cctx, req)
	if err != nil {
		return b.rpcErr(ctx, op, err)
	}
	if len(reply.GetErrors()) > 0 {
		msgs := make([]string, 0, len(reply.Errors))
		for _, e := range reply.Errors {
			msgs = append(msgs, e.GetError())
		}
		return batchErr(op, msgs)
	}
	return nil
}

// batchDelete deletes the objects of class matching f with one gRPC
// BatchDelete and fails if any was not deleted.
func (b *Backend) batchDelete(ctx context.Context, class string, f *pb.Filters) error {
	const op = "delete objects"
	cctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	req := &pb.BatchDeleteRequest{Collection: class, Filters: f, Verbose: true}
	if b.replicated || b.metaReplicated {
		req.ConsistencyLevel = &b.cl
	}
	reply, err := b.rpc.BatchDelete(cctx, req)
	if err != nil {
		return b.rpcErr(ctx, op, err)
	}
	if reply.GetFailed() > 0 {
		var msgs []string
		for _, o := range reply.Objects {
			if e := o.GetError(); e != "" {
				msgs = append(msgs, e)
			}
		}
		if len(msgs) == 0 {
			msgs = []string{fmt.Sprintf("%d objects not deleted", reply.Failed)}
		}
		return batchErr(op, msgs)
	}
	return nil
}

// rpcErr translates a gRPC error into this package's errors: the caller's
// cancellation stays a context error, an unreachable or overloaded server
// is ErrUnavailable, anything the server refused is ErrServer with its
// message. gRPC's own wording (status codes, transport details) stays out.
func (b *Backend) rpcErr(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("weaviate: %s: %w", op, ctx.Err())
	}
	st, ok := status.FromError(err)
	if !ok {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("weaviate: %s: %w", op, err)
		}
		return fmt.Errorf("%w: %s: %s", ErrServer, op, err.Error())
	}
	msg := strings.TrimSpace(st.Message())
	switch st.Code() {
	case codes.Unavailable:
		return fmt.Errorf("%w: %s: cannot reach Weaviate's gRPC API at %s (%s)", ErrUnavailable, op, b.grpcAddr, grpcReason(err))
	case codes.DeadlineExceeded:
		return fmt.Errorf("%w: %s: no answer from %s within %v", ErrUnavailable, op, b.grpcAddr, b.timeout)
	case codes.Canceled:
		return fmt.Errorf("%w: %s: the request was cancelled: %s", ErrUnavailable, op, msg)
	case codes.ResourceExhausted, codes.Aborted:
		return fmt.Errorf("%w: %s: %s", ErrUnavailable, op, msg)
	case codes.Unauthenticated:
		return fmt.Errorf("%w: %s: the server refused the credentials (API key): %s", ErrServer, op, msg)
	case codes.PermissionDenied:
		return fmt.Errorf("%w: %s: permission denied: %s", ErrServer, op, msg)
	case codes.Unimplemented:
		return fmt.Errorf("%w: %s: the server does not offer this call (Weaviate %d.%d or later is needed): %s",
			ErrServer, op, minVersion[0], minVersion[1], msg)
	}
	if unavailableMsg(msg) {
		return fmt.Errorf("%w: %s: %s", ErrUnavailable, op, msg)
	}
	// Weaviate answers a refused key on Search with code Unknown.
	if low := strings.ToLower(msg); strings.Contains(low, "unauthorized") || strings.Contains(low, "unauthenticated") {
		return fmt.Errorf("%w: %s: the server refused the credentials (API key): %s", ErrServer, op, msg)
	}
	return fmt.Errorf("%w: %s: %s", ErrServer, op, msg)
}

// grpcReason is the short cause of a failed connection, without gRPC's
// framing ("rpc error: code = ... desc = connection error: desc = ...").
func grpcReason(err error) string {
	msg := status.Convert(err).Message()
	for _, cut := range []string{"desc = ", "transport: "} {
		if i := strings.LastIndex(msg, cut); i >= 0 {
			msg = msg[i+len(cut):]
		}
	}
	msg = strings.Trim(strings.TrimSpace(msg), `"`)
	if msg == "" {
		msg = "no connection"
	}
	return msg
}

// unavailableMsg reports whether a server message says that replicas or
// nodes could not be reached, rather than that the request was wrong.
func unavailableMsg(msg string) bool {
	low := strings.ToLower(msg)
	return strings.Contains(low, "replica") || strings.Contains(low, "consistency") || strings.Contains(low, "connect")
}

func batchErr(op string, msgs []string) error {
	msg := fmt.Sprintf("%s: %s", op, msgs[0])
	if len(msgs) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(msgs)-1)
	}
	if unavailableMsg(msgs[0]) {
		return fmt.Errorf("%w: %s", ErrUnavailable, msg)
	}
	return fmt.Errorf("%w: %s", ErrServer, msg)
}
