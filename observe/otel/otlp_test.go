package akotel_test

import (
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
	colmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	akotel "github.com/akgentic/akgentic-go/observe/otel"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// receiver is an OTLP/HTTP endpoint in the test's process: it decodes
// the protobuf bodies the SDK's exporters post, as a collector does.
type receiver struct {
	t   *testing.T
	srv *httptest.Server

	mu      sync.Mutex
	spans   []*tracepb.ResourceSpans
	metrics []*metricpb.ResourceMetrics
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
		r.t.Errorf("OTLP %s: content type %q, read error %v", req.URL.Path, req.Header.Get("Content-Type"), err)
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var reply proto.Message
	switch req.URL.Path {
	case "/v1/traces":
		var in coltrace.ExportTraceServiceRequest
		if err = proto.Unmarshal(body, &in); err == nil {
			r.mu.Lock()
			r.spans = append(r.spans, in.ResourceSpans...)
			r.mu.Unlock()
		}
		reply = &coltrace.ExportTraceServiceResponse{}
	case "/v1/metrics":
		var in colmetric.ExportMetricsServiceRequest
		if err = proto.Unmarshal(body, &in); err == nil {
			r.mu.Lock()
			r.metrics = append(r.metrics, in.ResourceMetrics...)
			r.mu.Unlock()
		}
		reply = &colmetric.ExportMetricsServiceResponse{}
	default:
		http.NotFound(w, req)
		return
	}
	if err != nil {
		r.t.Errorf("OTLP %s: the body is not the protocol's protobuf: %v", req.URL.Path, err)
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	out, _ := proto.Marshal(reply)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// wireSpan is a received span with the scope that made it.
type wireSpan struct {
	*tracepb.Span
	scope     *commonpb.InstrumentationScope
	schemaURL string
}

// received returns the received spans by name.
func (r *receiver) received() map[string][]wireSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]wireSpan{}
	for _, rs := range r.spans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				out[s.Name] = append(out[s.Name], wireSpan{s, ss.Scope, ss.SchemaUrl})
			}
		}
	}
	return out
}

// wireAttr returns the attribute key of kvs as an attribute value, so that
// it compares with the conventions' constants.
func wireAttr(kvs []*commonpb.KeyValue, key attribute.Key) attribute.Value {
	for _, kv := range kvs {
		if kv.Key != string(key) {
			continue
		}
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			return attribute.StringValue(v.StringValue)
		case *commonpb.AnyValue_IntValue:
			return attribute.Int64Value(v.IntValue)
		case *commonpb.AnyValue_DoubleValue:
			return attribute.Float64Value(v.DoubleValue)
		case *commonpb.AnyValue_BoolValue:
			return attribute.BoolValue(v.BoolValue)
		case *commonpb.AnyValue_ArrayValue:
			var ss []string
			for _, e := range v.ArrayValue.Values {
				ss = append(ss, e.GetStringValue())
			}
			return attribute.StringSliceValue(ss)
		}
	}
	return attribute.Value{}
}

// The spans and metrics of a team, exported over OTLP/HTTP and decoded
// from the protocol's protobuf, carry the GenAI conventions' names and
// attributes: an invoke_agent span per agent turn, chat spans named by
// the requested model with the response's model, id and finish reason,
// the server, cached and reasoning tokens under the conventions' names,
// execute_tool spans with the tool type and the error type of a failed
// call, the scope's name, version and schema; metrics by the conventions'
// names, labelled by role and model, never by a member's name.
func TestOTLPExportFollowsTheGenAIConventions(t *testing.T) {
	rcv := newReceiver(t)
	ctx := context.Background()
	te, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(rcv.srv.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	me, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(rcv.srv.URL+"/v1/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(te))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	sub, err := akotel.New(akotel.Options{TracerProvider: tp, MeterProvider: mp, CaptureContent: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	tm := newTeam(t, orchestrator.WithSubscribers(sub))
	answer := final(agent.Response, "@Human", "Done.").WithUsage(300, 40, 120).WithModel("gpt-4.1-2025-04-14")
	answer.ReasoningTokens = 16
	tm.srv.Model("@Manager").Enqueue(llmtest.ToolCalls(llmtest.Call("call_1", "no_such_tool", `{}`)).WithUsage(100, 10, 0), answer)
	tm.ask("Plan the sprint.")
	tm.stop()
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	rm := collect(t, reader)
	if err := me.Export(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	if err := mp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := me.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	got := rcv.received()
	turns, chats, tools := got["invoke_agent @Manager"], got["chat gpt-4.1"], got["execute_tool no_such_tool"]
	if len(turns) != 1 || len(chats) != 2 || len(tools) != 1 || len(got["turn @Human"]) != 1 {
		t.Fatalf("received spans %v", keys(got))
	}
	turn, last := turns[0], chats[1]
	for _, s := range append(append([]wireSpan{turn}, chats...), tools...) {
		if s.scope.GetName() != "github.com/akgentic/akgentic-go/observe/otel" || s.scope.GetVersion() == "" || s.schemaURL != semconv.SchemaURL {
			t.Errorf("span %s: scope %v, schema %q", s.Name, s.scope, s.schemaURL)
		}
		if wireAttr(s.Attributes, "gen_ai.system").Type() != attribute.INVALID {
			t.Errorf("span %s carries the deprecated gen_ai.system", s.Name)
		}
		if s.Name != turn.Name && hex.EncodeToString(s.ParentSpanId) != hex.EncodeToString(turn.SpanId) {
			t.Errorf("span %s is not a child of the agent's turn", s.Name)
		}
	}
	if turn.Kind != tracepb.Span_SPAN_KIND_INTERNAL || chats[0].Kind != tracepb.Span_SPAN_KIND_CLIENT || tools[0].Kind != tracepb.Span_SPAN_KIND_INTERNAL {
		t.Errorf("span kinds: turn %v, chat %v, tool %v", turn.Kind, chats[0].Kind, tools[0].Kind)
	}
	host, port := serverOf(t, tm.srv.URL())
	checks := []struct {
		span wireSpan
		want []attribute.KeyValue
	}{
		{turn, []attribute.KeyValue{semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName("@Manager"),
			semconv.GenAIProviderNameKey.String("openai-compatible"), semconv.GenAIConversationID(tm.team.ID().String())}},
		{last, []attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String("openai-compatible"),
			semconv.GenAIRequestModel("gpt-4.1"), semconv.GenAIResponseModel("gpt-4.1-2025-04-14"),
			semconv.GenAIResponseFinishReasons("stop"), semconv.ServerAddress(host), semconv.ServerPort(port),
			semconv.GenAIUsageInputTokens(300), semconv.GenAIUsageOutputTokens(40),
			semconv.GenAIUsageCacheReadInputTokens(120), semconv.GenAIUsageReasoningOutputTokens(16)}},
		{tools[0], []attribute.KeyValue{semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName("no_such_tool"),
			semconv.GenAIToolCallID("call_1"), semconv.GenAIToolType("function"), semconv.ErrorTypeKey.String("tool_retry")}},
	}
	for _, c := range checks {
		for _, want := range c.want {
			if v := wireAttr(c.span.Attributes, want.Key); v != want.Value {
				t.Errorf("span %s: %s = %v, want %v", c.span.Name, want.Key, v.Emit(), want.Value.Emit())
			}
		}
	}
	if id := wireAttr(last.Attributes, semconv.GenAIResponseIDKey).AsString(); !strings.HasPrefix(id, "chatcmpl-") {
		t.Errorf("response id %q", id)
	}
	if tools[0].Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("failed tool call status %v", tools[0].Status)
	}
	// The captured messages follow the conventions' JSON schemas.
	inputs, outputs := genaiSchema(t, "gen-ai-input-messages.json"), genaiSchema(t, "gen-ai-output-messages.json")
	for i, c := range chats {
		for key, schema := range map[attribute.Key]*jsonschema.Schema{semconv.GenAIInputMessagesKey: inputs, semconv.GenAIOutputMessagesKey: outputs} {
			text := wireAttr(c.Attributes, key).AsString()
			doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
			if err != nil {
				t.Fatalf("chat %d: %s %q: %v", i, key, text, err)
			}
			if err := schema.Validate(doc); err != nil {
				t.Errorf("chat %d: %s does not follow the conventions' schema: %v\n%s", i, key, err, text)
			}
		}
	}

	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	found := map[string]bool{}
	for _, r := range rcv.metrics {
		for _, sm := range r.ScopeMetrics {
			if sm.Scope.GetVersion() == "" || sm.SchemaUrl != semconv.SchemaURL {
				t.Errorf("metrics scope %v, schema %q", sm.Scope, sm.SchemaUrl)
			}
			for _, m := range sm.Metrics {
				found[m.Name] = true
				h := m.GetHistogram()
				if m.Name != (genaiconv.ClientTokenUsage{}).Name() || h == nil {
					continue
				}
				for _, p := range h.DataPoints {
					for _, want := range []attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIRequestModel("gpt-4.1"),
						attribute.String("akgentic.actor.role", "Manager")} {
						if v := wireAttr(p.Attributes, want.Key); v != want.Value {
							t.Errorf("token usage point: %s = %v, want %v", want.Key, v.Emit(), want.Value.Emit())
						}
					}
					if wireAttr(p.Attributes, semconv.GenAITokenTypeKey).Type() == attribute.INVALID {
						t.Errorf("token usage point without %s", semconv.GenAITokenTypeKey)
					}
				}
			}
		}
	}
	for _, name := range []string{genaiconv.ClientTokenUsage{}.Name(), genaiconv.ClientOperationDuration{}.Name()} {
		if !found[name] {
			t.Errorf("metric %s was not exported (got %v)", name, found)
		}
	}
}

func keys(m map[string][]wireSpan) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// collect reads the metrics of reader.
func collect(t *testing.T, reader *sdkmetric.ManualReader) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

// genaiSchema compiles one of the conventions' message schemas in
// testdata/genai.
func genaiSchema(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "genai", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
