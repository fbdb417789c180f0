package a2a

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// JSON-RPC 2.0 error codes: the standard ones and A2A's.
const (
	codeParse            = -32700
	codeInvalidRequest   = -32600
	codeMethodNotFound   = -32601
	codeInvalidParams    = -32602
	codeInternal         = -32603
	codeTaskNotFound     = -32001
	codeNotCancelable    = -32002
	codePushUnsupported  = -32003
	codeUnsupported      = -32004
	codeContentType      = -32005
	codeExtendedCardNone = -32007
)

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    []any  `json:"data,omitempty"`
}

func (e *rpcError) Error() string {
	return fmt.Sprintf("a2a: %s (JSON-RPC error %d)", e.Message, e.Code)
}

// rpcErr returns an error with code and a message naming what was wrong.
func rpcErr(code int, format string, args ...any) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// reasons name A2A's errors in their ErrorInfo detail.
var reasons = map[int]string{
	codeTaskNotFound:     "TASK_NOT_FOUND",
	codeNotCancelable:    "TASK_NOT_CANCELABLE",
	codePushUnsupported:  "PUSH_NOTIFICATION_NOT_SUPPORTED",
	codeUnsupported:      "UNSUPPORTED_OPERATION",
	codeContentType:      "CONTENT_TYPE_NOT_SUPPORTED",
	codeExtendedCardNone: "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
}

// detailed adds the ErrorInfo detail A2A 1.0 asks for to an A2A-specific
// error (0.3 clients ignore it).
func detailed(e *rpcError) *rpcError {
	if r, ok := reasons[e.Code]; ok && e.Data == nil {
		c := *e
		c.Data = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": r, "domain": "a2a-protocol.org"}}
		return &c
	}
	return e
}

// rpcRequest is a JSON-RPC request.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// rpcResponse is a JSON-RPC response: a result or an error.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// parseRequest reads one JSON-RPC request. A body that is not JSON is a
// parse error; JSON that is not a request (a batch, no method, a wrong
// version, an id that is neither a string, a number nor null) is an
// invalid request. The id is returned when it could be read, so the error
// answers it.
func parseRequest(body []byte) (*rpcRequest, *rpcError) {
	body = bytes.TrimSpace(body)
	if !json.Valid(body) {
		return nil, rpcErr(codeParse, "the body is not JSON")
	}
	if len(body) > 0 && body[0] == '[' {
		return nil, rpcErr(codeInvalidRequest, "batches are not served: send one request per call")
	}
	var req rpcRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, rpcErr(codeInvalidRequest, "the body is not a JSON-RPC request: %v", err)
	}
	switch id := bytes.TrimSpace(req.ID); {
	case len(id) == 0, id[0] == '"', id[0] == '-', id[0] >= '0' && id[0] <= '9', bytes.Equal(id, []byte("null")):
	default:
		r := req
		r.ID = nil
		return &r, rpcErr(codeInvalidRequest, "id must be a string, a number or null")
	}
	if req.JSONRPC != "2.0" {
		return &req, rpcErr(codeInvalidRequest, "jsonrpc is %q; want \"2.0\"", req.JSONRPC)
	}
	if req.Method == "" {
		return &req, rpcErr(codeInvalidRequest, "method is missing")
	}
	return &req, nil
}

// params decodes a request's params into v, an invalid-params error when
// they do not fit.
func params(req *rpcRequest, v any) *rpcError {
	if len(req.Params) == 0 || bytes.Equal(bytes.TrimSpace(req.Params), []byte("null")) {
		return rpcErr(codeInvalidParams, "%s: params are missing", req.Method)
	}
	if err := json.Unmarshal(req.Params, v); err != nil {
		return rpcErr(codeInvalidParams, "%s: params: %v", req.Method, err)
	}
	return nil
}
