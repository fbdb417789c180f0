package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
)

// kind is the card's registered kind.
const kind = "MCPTool"

// Defaults of Server.Timeout and Server.MaxResultBytes.
const (
	defaultTimeout     = 60 * time.Second
	defaultResultBytes = 64 << 10
)

func init() { tool.Register(kind, func() tool.Card { return &Card{} }) }

// Card is the MCPTool card: the tools of MCP servers as model tools (see
// the package documentation). It is registered (tool.Register) under the
// kind "MCPTool" and depends on no other card.
type Card struct {
	// Servers are the MCP servers whose tools the agent gets; at least one.
	Servers []Server `json:"servers"`
}

// Server is one MCP server of a [Card]: a command run as a child process
// speaking MCP on its stdin and stdout, or a streamable HTTP endpoint.
// Exactly one of Command and URL is set.
type Server struct {
	// Name names the server in tool names (its tools are offered as
	// "<name>_<tool>"), errors and warnings: 1 to 32 of A-Z, a-z, 0-9,
	// '_' and '-', unique within the card.
	Name string `json:"name"`
	// Command is the program and its arguments, e.g. ["npx", "-y",
	// "@modelcontextprotocol/server-filesystem", "/data"].
	Command []string `json:"command,omitempty"`
	// Env is added to the child's environment, which otherwise holds only
	// HOME, LOGNAME, PATH, SHELL, TERM, USER, LANG and TMPDIR from the
	// agent's process (API keys of the agent are not passed on unless
	// named here). A value's ${NAME} is replaced by the agent process's
	// variable NAME when connecting ("$$" is a "$"), so that the config,
	// which the team's log keeps, need not hold a secret:
	// {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}. Command servers only.
	Env map[string]string `json:"env,omitempty"`
	// URL is the streamable HTTP endpoint (http or https).
	URL string `json:"url,omitempty"`
	// Headers are sent with every HTTP request to URL's scheme, host and
	// port (not to another a redirect leads to), their values' ${NAME}
	// expanded as Env's: {"Authorization": "Bearer ${DOCS_TOKEN}"}. URL
	// servers only.
	Headers map[string]string `json:"headers,omitempty"`
	// Allow, when not empty, lists the server's tools (by their MCP names)
	// the agent gets; a name the server does not offer is a start error.
	Allow []string `json:"allow,omitempty"`
	// Deny lists tools (by their MCP names) the agent does not get.
	Deny []string `json:"deny,omitempty"`
	// Timeout bounds one tool call (and the listing of the tools at
	// start); 0 means 60 s. A call that outlasts it is a tool error for
	// the model, and the connection is dropped and made again on the next
	// call. Connecting (the process started, the MCP handshake) may take
	// 30 s, or Timeout if longer.
	Timeout time.Duration `json:"timeout,omitempty"`
	// MaxResultBytes caps the text of one result the model gets; 0 means
	// 64 KiB. A longer one is cut (at a character boundary) and ends with
	// a line "[truncated at N bytes]".
	MaxResultBytes int `json:"max_result_bytes,omitempty"`
	// NoInstructions leaves out of the agent's system prompt the
	// instructions the server gives when connecting (how to use its
	// tools), which are otherwise added to it: set it for a server whose
	// text the agent should not take as its own instructions.
	NoInstructions bool `json:"no_instructions,omitempty"`
}

var _ tool.Card = (*Card)(nil)

// Kind returns "MCPTool".
func (c *Card) Kind() string { return kind }

// serverName is what a Server.Name may be.
var serverName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// validate checks the card's configuration, naming what is wrong.
func (c *Card) validate() error {
	if len(c.Servers) == 0 {
		return errors.New("mcp: no servers configured (servers is empty)")
	}
	seen := map[string]bool{}
	for i, s := range c.Servers {
		if err := s.validate(); err != nil {
			return fmt.Errorf("mcp: servers[%d] (%q): %w", i, s.Name, err)
		}
		if seen[s.Name] {
			return fmt.Errorf("mcp: servers[%d]: name %q is used twice", i, s.Name)
		}
		seen[s.Name] = true
	}
	return nil
}

func (s *Server) validate() error {
	if !serverName.MatchString(s.Name) {
		return fmt.Errorf("name %q must be 1 to 32 of A-Z, a-z, 0-9, '_' and '-'", s.Name)
	}
	switch {
	case len(s.Command) > 0 && s.URL != "":
		return errors.New("command and url are both set; a server is one or the other")
	case len(s.Command) > 0:
		if strings.TrimSpace(s.Command[0]) == "" {
			return errors.New("command: the program (its first element) is empty")
		}
		if len(s.Headers) > 0 {
			return errors.New("headers are for url servers, not command servers")
		}
	case s.URL != "":
		u, err := url.Parse(s.URL)
		if err != nil {
			return fmt.Errorf("url: %w", err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("url %q: want an http or https URL with a host", s.URL)
		}
		if len(s.Env) > 0 {
			return errors.New("env is for command servers, not url servers")
		}
	default:
		return errors.New("neither command nor url is set")
	}
	if s.Timeout < 0 {
		return fmt.Errorf("timeout %s is negative", s.Timeout)
	}
	if s.MaxResultBytes < 0 {
		return fmt.Errorf("max_result_bytes %d is negative", s.MaxResultBytes)
	}
	for _, name := range s.Allow {
		if slices.Contains(s.Deny, name) {
			return fmt.Errorf("tool %q is both allowed and denied", name)
		}
	}
	return nil
}

// Attach validates the card, connects to every server (all at once),
// lists its tools and returns them as model tools, and the servers'
// instructions as system prompt sections; Close ends the connections
// (and the child processes). A server that cannot be reached or listed,
// or an Allow name it does not offer, is an error naming it. The tools
// may run concurrently.
func (c *Card) Attach(ctx context.Context, o *tool.Owner) (tool.Capabilities, error) {
	if err := c.validate(); err != nil {
		return tool.Capabilities{}, err
	}
	var report func(error)
	if o != nil && o.Agent != nil {
		report = o.Agent.Report
	}
	type listed struct {
		tools    []*llm.Tool
		mcpNames []string
		err      error
	}
	conns := make([]*conn, len(c.Servers))
	lists := make([]listed, len(c.Servers))
	var wg sync.WaitGroup
	for i, s := range c.Servers {
		conns[i] = newConn(s, report)
		wg.Go(func() {
			l := &lists[i]
			l.tools, l.mcpNames, l.err = conns[i].tools(ctx)
		})
	}
	wg.Wait()
	closeAll := func() error {
		errs := make([]error, len(conns))
		var wg sync.WaitGroup
		for i, cn := range conns {
			wg.Go(func() { errs[i] = cn.close() })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	var out tool.Capabilities
	names := map[string]string{} // model tool name -> "server/tool"
	for i, s := range c.Servers {
		l := lists[i]
		if l.err != nil {
			_ = closeAll()
			return tool.Capabilities{}, l.err
		}
		for j, t := range l.tools {
			if prev, dup := names[t.Name]; dup {
				_ = closeAll()
				return tool.Capabilities{}, fmt.Errorf("mcp: tools %s and %s/%s are both offered as %s (deny one, or rename a server)",
					prev, s.Name, l.mcpNames[j], t.Name)
			}
			names[t.Name] = s.Name + "/" + l.mcpNames[j]
		}
		out.Tools = append(out.Tools, l.tools...)
		if p := conns[i].instructions(); p != "" && !s.NoInstructions {
			out.SystemPrompts = append(out.SystemPrompts, func(context.Context) string { return p })
		}
	}
	out.Close = closeAll
	return out, nil
}

// modelTool turns one MCP tool of server cn into a model tool.
func (cn *conn) modelTool(mt *sdk.Tool) (*llm.Tool, error) {
	name := mt.Name
	sch, err := toolSchema(mt.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("mcp: server %s: tool %s: %w", cn.cfg.Name, name, err)
	}
	t := &llm.Tool{
		Name:          modelName(cn.cfg.Name, name),
		Description:   cmp.Or(mt.Description, mt.Title),
		RawParameters: sch.wire,
		Strict:        sch.strict,
	}
	// The spec's defaults: a tool is not read-only, and one that is not
	// read-only may be destructive unless it says it is not.
	if a := mt.Annotations; a != nil && a.ReadOnlyHint {
		t.ReadOnly = true
	} else {
		t.Destructive = a == nil || a.DestructiveHint == nil || *a.DestructiveHint
	}
	t.Call = func(ctx context.Context, args json.RawMessage) (any, error) {
		args, err := sch.arguments(args)
		if err != nil {
			return nil, llm.Retry("invalid arguments for %s: %v", t.Name, err)
		}
		return cn.call(ctx, name, args)
	}
	return t, nil
}

// modelName is the model tool name of an MCP tool: the server's name, '_'
// and the tool's name with every character outside A-Z, a-z, 0-9, '_'
// and '-' replaced by '_', cut to 64 bytes (OpenAI's limit).
func modelName(server, name string) string {
	b := []byte(server + "_" + name)
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
}
