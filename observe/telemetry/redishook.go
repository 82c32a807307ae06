package telemetry

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
)

// redisHook makes the span of each command, pipeline and dial of one Redis
// node. Its db.statement is Statement's: no value, no key's variable part.
// Under a span that records nothing (a request the sampler left out), it
// does no work at all: no span, no attribute, no statement.
type redisHook struct {
	tracer trace.Tracer
	// attrs are the node's: db.system (as redisotel named it),
	// server.address and server.port.
	attrs []attribute.KeyValue
}

var _ redis.Hook = (*redisHook)(nil)

// dbStatement holds the command and its key patterns (Statement).
const dbStatement = attribute.Key("db.statement")

// dbSystem names the database, "redis".
const dbSystem = attribute.Key("db.system")

// numCmd is the number of commands of a pipeline's span.
const numCmd = attribute.Key("db.redis.num_cmd")

func newRedisHook(tracer trace.Tracer, addr string) *redisHook {
	attrs := []attribute.KeyValue{dbSystem.String("redis")}
	if host, port, err := net.SplitHostPort(addr); err == nil {
		attrs = append(attrs, semconv.ServerAddress(host))
		if p, err := strconv.Atoi(port); err == nil {
			attrs = append(attrs, semconv.ServerPort(p))
		}
	}
	return &redisHook{tracer: tracer, attrs: attrs}
}

// recording tells whether work under ctx is traced: its span records.
func recording(ctx context.Context) bool { return trace.SpanFromContext(ctx).IsRecording() }

func (h *redisHook) start(ctx context.Context, name string, more ...attribute.KeyValue) (context.Context, trace.Span) {
	return h.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(h.attrs...), trace.WithAttributes(more...))
}

// endRedis records err on span (redis.Nil is an answer) and ends it.
func endRedis(span trace.Span, err error) {
	if err != nil && !errors.Is(err, redis.Nil) {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

func (h *redisHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if !recording(ctx) {
			return next(ctx, network, addr)
		}
		ctx, span := h.start(ctx, "redis.dial")
		conn, err := next(ctx, network, addr)
		endRedis(span, err)
		return conn, err
	}
}

func (h *redisHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !recording(ctx) {
			return next(ctx, cmd)
		}
		ctx, span := h.start(ctx, cmd.FullName(), dbStatement.String(Statement(cmd)))
		err := next(ctx, cmd)
		endRedis(span, err)
		return err
	}
}

func (h *redisHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !recording(ctx) {
			return next(ctx, cmds)
		}
		lines := make([]string, len(cmds))
		var names []string
		for i, cmd := range cmds {
			lines[i] = Statement(cmd)
			if n := cmd.FullName(); len(names) < 10 && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
		ctx, span := h.start(ctx, "redis.pipeline "+strings.Join(names, " "),
			numCmd.Int(len(cmds)), dbStatement.String(strings.Join(lines, "\n")))
		err := next(ctx, cmds)
		endRedis(span, err)
		return err
	}
}

// addRedisHook adds a redisHook to client, or to each of its nodes.
func addRedisHook(client redis.UniversalClient, tracer trace.Tracer) error {
	switch c := client.(type) {
	case *redis.Client:
		c.AddHook(newRedisHook(tracer, c.Options().Addr))
	case *redis.ClusterClient:
		c.OnNewNode(func(n *redis.Client) { n.AddHook(newRedisHook(tracer, n.Options().Addr)) })
	case *redis.Ring:
		c.OnNewNode(func(n *redis.Client) { n.AddHook(newRedisHook(tracer, n.Options().Addr)) })
	default:
		return errors.New("tracing: a Redis client of an unknown kind")
	}
	return nil
}
