package llmtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
)

// exchange is one recorded request and its answer: one line of a JSON Lines
// transcript.
type exchange struct {
	// Agent is the routing key the request was matched to when recorded.
	Agent string `json:"agent,omitempty"`
	// Request is the request body.
	Request json.RawMessage `json:"request"`
	// Status is the HTTP status of the answer.
	Status int `json:"status"`
	// RetryAfter is the Retry-After header of the answer, if any.
	RetryAfter string `json:"retry_after,omitempty"`
	// Response is the answer body.
	Response json.RawMessage `json:"response"`
}

// readTranscript reads a JSON Lines transcript. Blank lines are skipped; a
// line that is not an exchange is an error naming its line number.
func readTranscript(r io.Reader) ([]exchange, error) {
	var out []exchange
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var ex exchange
		if err := json.Unmarshal(line, &ex); err != nil {
			return nil, fmt.Errorf("llmtest: transcript line %d: %w", n, err)
		}
		if len(ex.Request) == 0 || ex.Status == 0 {
			return nil, fmt.Errorf("llmtest: transcript line %d: request and status are required", n)
		}
		out = append(out, ex)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("llmtest: reading transcript: %w", err)
	}
	return out, nil
}

// Replay reads a transcript from r, the JSON Lines that [WithRecorder]
// writes (blank lines are skipped), and switches the server to replay mode: from now on each request must match the next
// exchange (same model, messages, tools and response_format once the date
// line of a system prompt is masked) and gets the recorded answer. A
// request that does not match, or comes after the transcript is used up,
// is answered 400 and recorded in [Server.Failures]. Scripted models are
// not consulted while replaying. A transcript that does not parse is an
// error naming the line, and the server is left as it was.
func (s *Server) Replay(r io.Reader) error {
	exchanges, err := readTranscript(r)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.replay = exchanges
	s.replaying = true
	s.mu.Unlock()
	return nil
}

func (s *Server) serveReplay(w http.ResponseWriter, req *Request) {
	s.mu.Lock()
	var next *exchange
	if len(s.replay) > 0 {
		next = &s.replay[0]
	}
	s.mu.Unlock()
	if next == nil {
		msg := s.fail("llmtest: replay: unexpected request for agent %q after the transcript ended: %s", req.Agent, lastMessageText(req))
		writeError(w, http.StatusBadRequest, nil, "invalid_request_error", "", "", msg)
		return
	}
	got, errGot := matchKey(req.Body)
	want, errWant := matchKey(next.Request)
	if errGot != nil || errWant != nil || !bytes.Equal(got, want) {
		msg := s.fail("llmtest: replay: request for agent %q does not match the transcript:\n got: %s\nwant: %s", req.Agent, got, want)
		writeError(w, http.StatusBadRequest, nil, "invalid_request_error", "", "", msg)
		return
	}
	s.mu.Lock()
	s.replay = s.replay[1:]
	s.mu.Unlock()
	var header http.Header
	if next.RetryAfter != "" {
		header = http.Header{"Retry-After": []string{next.RetryAfter}}
	}
	if req.Stream && next.Status == http.StatusOK {
		s.writeStream(w, req, next.Response, -1) // a recorded completion, streamed
		return
	}
	if next.Status == http.StatusOK {
		checkContract(schemaResponse, next.Response)
	} else {
		checkContract(schemaError, next.Response)
	}
	s.writeRecorded(w, req, next.Status, header, next.Response)
}

func lastMessageText(r *Request) string {
	if len(r.Messages) == 0 {
		return ""
	}
	return r.Messages[len(r.Messages)-1].Text()
}

// datePattern matches the date section of a system prompt.
var datePattern = regexp.MustCompile(`The current date is \d{4}-\d{2}-\d{2}\.`)

// normalize masks what legitimately changes between a recording and a
// replay: the date line of a system prompt.
func normalize(s string) string {
	return datePattern.ReplaceAllString(s, "The current date is YYYY-MM-DD.")
}

// matchKey is the canonical form of the fields a replayed request must
// match: model, messages, tools and response_format, with sorted keys and
// masked dates.
func matchKey(body []byte) ([]byte, error) {
	var doc struct {
		Model          string          `json:"model"`
		Messages       json.RawMessage `json:"messages"`
		Tools          json.RawMessage `json:"tools"`
		ResponseFormat json.RawMessage `json:"response_format"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	var canon struct {
		Model          string `json:"model"`
		Messages       any    `json:"messages"`
		Tools          any    `json:"tools,omitempty"`
		ResponseFormat any    `json:"response_format,omitempty"`
	}
	canon.Model = doc.Model
	for _, f := range []struct {
		raw json.RawMessage
		dst *any
	}{{doc.Messages, &canon.Messages}, {doc.Tools, &canon.Tools}, {doc.ResponseFormat, &canon.ResponseFormat}} {
		if len(f.raw) == 0 {
			continue
		}
		if err := json.Unmarshal(f.raw, f.dst); err != nil {
			return nil, err
		}
	}
	b, err := json.Marshal(canon) // map keys come out sorted
	if err != nil {
		return nil, err
	}
	return []byte(normalize(string(b))), nil
}
