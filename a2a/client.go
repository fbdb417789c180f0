package a2a

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/akgentic/akgentic-go/internal/scrub"
	"github.com/google/uuid"
)

// The client side of the JSON-RPC binding: what a remote agent member
// (remote.go) needs to read a remote agent's card and drive its tasks,
// in A2A 1.0 or, when the remote agent offers only that, 0.3.

// maxCard and maxEvent bound what a remote agent can make the client
// read: its card, and one event of a stream.
const (
	maxCard  = 1 << 20
	maxEvent = 4 << 20
)

// remoteCard is what the client keeps of a remote agent's card.
type remoteCard struct {
	name      string
	endpoint  string // the JSON-RPC URL
	v03       bool   // the endpoint speaks 0.3
	streaming bool
}

// fetchedCard is an agent card as either version writes it.
type fetchedCard struct {
	Name                string           `json:"name"`
	SupportedInterfaces []agentInterface `json:"supportedInterfaces"`
	URL                 string           `json:"url"`                // 0.3
	ProtocolVersion     string           `json:"protocolVersion"`    // 0.3
	PreferredTransport  string           `json:"preferredTransport"` // 0.3
	Capabilities        struct {
		Streaming *bool `json:"streaming"`
	} `json:"capabilities"`
	Skills []json.RawMessage `json:"skills"`
}

// cardURL is where the card of the agent at base is: base itself when it
// names a .json file, else its /.well-known/agent-card.json.
func cardURL(base string) string {
	if strings.HasSuffix(base, ".json") {
		return base
	}
	return strings.TrimSuffix(base, "/") + "/.well-known/agent-card.json"
}

// fetchCard reads and checks the card of the agent at base: it must name
// the agent and offer a JSON-RPC interface of A2A 1.0 (preferred) or 0.3.
func (rc *rpcClient) fetchCard(ctx context.Context, base string) (*remoteCard, error) {
	where := cardURL(base)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, where, nil)
	if err != nil {
		return nil, fmt.Errorf("the agent's URL %q: %w", base, err)
	}
	rc.headers(req)
	resp, err := rc.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching the agent card at %s: %w", where, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("fetching the agent card at %s: %s: %s", where, resp.Status, scrub.String(string(bytes.TrimSpace(b))))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxCard+1))
	if err != nil {
		return nil, fmt.Errorf("reading the agent card at %s: %w", where, err)
	}
	if len(body) > maxCard {
		return nil, fmt.Errorf("the agent card at %s is larger than %d bytes", where, maxCard)
	}
	var fc fetchedCard
	if err := json.Unmarshal(body, &fc); err != nil {
		return nil, fmt.Errorf("the agent card at %s is not an agent card: %w", where, err)
	}
	return fc.check(where)
}

// check validates a fetched card and picks the interface to speak.
func (fc *fetchedCard) check(where string) (*remoteCard, error) {
	if strings.TrimSpace(fc.Name) == "" {
		return nil, fmt.Errorf("the agent card at %s has no name", where)
	}
	if fc.Skills == nil {
		return nil, fmt.Errorf("the agent card at %s lists no skills (an agent card has a skills list)", where)
	}
	rc := &remoteCard{name: fc.Name, streaming: fc.Capabilities.Streaming != nil && *fc.Capabilities.Streaming}
	var offered []string
	for _, v := range []string{"1.0", "0.3"} {
		for _, i := range fc.SupportedInterfaces {
			if !strings.EqualFold(i.ProtocolBinding, "JSONRPC") || !strings.HasPrefix(i.ProtocolVersion, v) || rc.endpoint != "" {
				continue
			}
			rc.endpoint, rc.v03 = i.URL, v == "0.3"
		}
	}
	for _, i := range fc.SupportedInterfaces {
		offered = append(offered, i.ProtocolBinding+" "+i.ProtocolVersion)
	}
	if rc.endpoint == "" && len(fc.SupportedInterfaces) == 0 && fc.URL != "" &&
		(fc.ProtocolVersion == "" || strings.HasPrefix(fc.ProtocolVersion, "0.")) &&
		(fc.PreferredTransport == "" || strings.EqualFold(fc.PreferredTransport, "JSONRPC")) {
		rc.endpoint, rc.v03 = fc.URL, true // a 0.3 card
		offered = append(offered, "JSONRPC "+fc.ProtocolVersion)
	}
	if rc.endpoint == "" {
		return nil, fmt.Errorf("the agent card at %s offers no JSON-RPC interface of A2A 1.0 or 0.3 (it offers: %s)", where, strings.Join(offered, ", "))
	}
	if u, err := url.Parse(rc.endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the agent card at %s gives the endpoint %q, not an http(s) URL", where, rc.endpoint)
	}
	return rc, nil
}

// rpcClient speaks JSON-RPC to one remote agent.
type rpcClient struct {
	http  *http.Client
	token string
	card  *remoteCard
}

// headers sets the version and the token on a request.
func (rc *rpcClient) headers(req *http.Request) {
	v := "1.0"
	if rc.card != nil && rc.card.v03 {
		v = "0.3"
	}
	req.Header.Set("A2A-Version", v)
	if rc.token != "" {
		req.Header.Set("Authorization", "Bearer "+rc.token)
	}
}

// method is the name of a method in the endpoint's version.
func (rc *rpcClient) method(m string) string {
	if !rc.card.v03 {
		return m
	}
	return map[string]string{
		"SendMessage": "message/send", "SendStreamingMessage": "message/stream", "GetTask": "tasks/get",
		"CancelTask": "tasks/cancel", "SubscribeToTask": "tasks/resubscribe",
	}[m]
}

// post sends one request and returns the response (a JSON-RPC answer, or
// an SSE stream of them).
func (rc *rpcClient) post(ctx context.Context, method string, params any) (*http.Response, error) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": uuid.NewString(), "method": rc.method(method), "params": params})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rc.card.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	rc.headers(req)
	resp, err := rc.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("%s: %s: %s", rc.method(method), resp.Status, scrub.String(string(bytes.TrimSpace(b))))
	}
	return resp, nil
}

// answer is one JSON-RPC response the remote agent sent.
type answer struct {
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// call sends a request and returns its result, or the remote agent's
// error.
func (rc *rpcClient) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	resp, err := rc.post(ctx, method, params)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var a answer
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxEvent)).Decode(&a); err != nil {
		return nil, fmt.Errorf("%s: the answer is not JSON-RPC: %w", rc.method(method), err)
	}
	if a.Error != nil {
		return nil, a.Error
	}
	return a.Result, nil
}

// errStreamEnded is the error of a stream that ended before its task
// ended or waited for input: the remote agent went away mid-task.
var errStreamEnded = errors.New("the stream ended before the task did")

// stream sends a streaming request and calls each with every event, in
// 1.0's shape, until each returns false or the stream ends.
func (rc *rpcClient) stream(ctx context.Context, method string, params any, each func(streamResponse) bool) error {
	resp, err := rc.post(ctx, method, params)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		var a answer // an error is answered as JSON
		if err := json.NewDecoder(io.LimitReader(resp.Body, maxEvent)).Decode(&a); err == nil && a.Error != nil {
			return a.Error
		}
		return fmt.Errorf("%s: the answer is %q, not an event stream", rc.method(method), ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), maxEvent)
	var data bytes.Buffer
	for sc.Scan() {
		line := bytes.TrimRight(sc.Bytes(), "\r")
		switch {
		case len(line) == 0 && data.Len() > 0:
			e, err := rc.event(data.Bytes())
			data.Reset()
			if err != nil {
				return fmt.Errorf("%s: %w", rc.method(method), err)
			}
			if !each(e) {
				return nil
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if data.Len()+len(line) > maxEvent {
				return fmt.Errorf("%s: an event is larger than %d bytes", rc.method(method), maxEvent)
			}
			data.Write(bytes.TrimSpace(line[len("data:"):]))
		}
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w: %v", rc.method(method), errStreamEnded, err)
	}
	return fmt.Errorf("%s: %w", rc.method(method), errStreamEnded)
}

// event reads one event of a stream: a JSON-RPC response whose result is
// a StreamResponse (1.0) or the object itself (0.3).
func (rc *rpcClient) event(data []byte) (streamResponse, error) {
	var a answer
	if err := json.Unmarshal(data, &a); err != nil {
		return streamResponse{}, fmt.Errorf("an event is not JSON-RPC: %w", err)
	}
	if a.Error != nil {
		return streamResponse{}, a.Error
	}
	return rc.result(a.Result)
}

// result reads a task or an event in the endpoint's version, into 1.0's
// shape.
func (rc *rpcClient) result(raw json.RawMessage) (streamResponse, error) {
	var e streamResponse
	if !rc.card.v03 {
		if err := json.Unmarshal(raw, &e); err != nil {
			return e, fmt.Errorf("the result is not a stream response: %w", err)
		}
		return e, nil
	}
	var kind struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(raw, &kind); err != nil {
		return e, fmt.Errorf("the result is not an object: %w", err)
	}
	var err error
	switch kind.Kind {
	case "task":
		e.Task = new(wireTask)
		err = json.Unmarshal(raw, e.Task)
	case "message":
		e.Message = new(wireMessage)
		err = json.Unmarshal(raw, e.Message)
	case "status-update":
		e.StatusUpdate = new(statusUpdate)
		err = json.Unmarshal(raw, e.StatusUpdate)
	case "artifact-update":
		e.ArtifactUpdate = new(artifactUpdate)
		err = json.Unmarshal(raw, e.ArtifactUpdate)
	default:
		err = fmt.Errorf("an event of kind %q", kind.Kind)
	}
	if err != nil {
		return e, fmt.Errorf("the result cannot be read: %w", err)
	}
	switch {
	case e.Task != nil:
		e.Task.Status.State = state10(e.Task.Status.State)
	case e.StatusUpdate != nil:
		e.StatusUpdate.Status.State = state10(e.StatusUpdate.Status.State)
	}
	return e, nil
}

// outgoing is a message to the remote agent in the endpoint's shape: its
// "message" is a *wireMessage.
func (rc *rpcClient) outgoing(text, taskID, contextID string) map[string]any {
	m := &wireMessage{MessageID: uuid.NewString(), Role: roleUser, Parts: []part{textPart(text)}, TaskID: taskID, ContextID: contextID}
	if rc.card.v03 {
		m = message03(m)
	}
	return map[string]any{"message": m}
}

// joined is the text of parts, joined as written.
func joined(ps []part) string {
	var b strings.Builder
	for _, p := range ps {
		if p.Text != nil {
			b.WriteString(*p.Text)
		}
	}
	return b.String()
}
