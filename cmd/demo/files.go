package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator/eventlog"
)

// logged is what a log's agents were configured with that lives outside
// the log: their workspace folder and the offline search results' file.
type logged struct {
	root, search string
}

// loggedPaths reads the workspace root and the search file from the
// recorded configs of the log's agents (the first of each).
func loggedPaths(log *eventlog.Log) logged {
	var out logged
	if log == nil {
		return out
	}
	for _, m := range log.Messages {
		s, ok := m.(*message.StartMessage)
		if !ok || s.Config == nil {
			continue
		}
		raw, err := json.Marshal(s.Config)
		if err != nil {
			continue
		}
		var cfg struct {
			Tools []struct {
				Kind   string `json:"kind"`
				Config struct {
					Root string `json:"root"`
					File string `json:"file"`
				} `json:"config"`
			} `json:"tools"`
		}
		if json.Unmarshal(raw, &cfg) != nil {
			continue
		}
		for _, t := range cfg.Tools {
			switch {
			case t.Kind == "WorkspaceTool" && out.root == "":
				out.root = t.Config.Root
			case t.Kind == "SearchTool" && out.search == "":
				out.search = t.Config.File
			}
		}
	}
	return out
}

// made is what the demo created outside its log, removed at the end.
type made struct{ dirs, files []string }

// remove removes what the run created, newest first.
func (m *made) remove() {
	for _, f := range m.files {
		_ = os.Remove(f)
	}
	for i := len(m.dirs) - 1; i >= 0; i-- {
		_ = os.RemoveAll(m.dirs[i])
	}
}

// tempDir makes a fresh temporary folder, removed at the end.
func (m *made) tempDir(pattern string) (string, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err == nil {
		m.dirs = append(m.dirs, dir)
	}
	return dir, err
}

// mkdirAll makes dir and any parent it lacks; created says whether dir did
// not exist. The topmost folder it created is removed at the end.
func (m *made) mkdirAll(dir string) (created bool, err error) {
	top := ""
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
		top = p
		if filepath.Dir(p) == p {
			break
		}
	}
	if top == "" {
		return false, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, err
	}
	m.dirs = append(m.dirs, top)
	return true, nil
}

// workspace chooses the agents' workspace root and says which and why:
// a restored team keeps the one its log names (recreated, empty, when it
// no longer exists, and then removed at the end); otherwise -workspace,
// else a temporary folder removed at the end.
func (d *demo) workspace(m *made, fromLog string) (root, why string, err error) {
	flagged := d.opt.workspace
	switch {
	case fromLog != "" && flagged != "" && filepath.Clean(flagged) != filepath.Clean(fromLog):
		return "", "", fmt.Errorf("-workspace %s: the log's agents work in %s, which a restored team keeps (drop -workspace, or give that folder)", flagged, fromLog)
	case fromLog != "":
		created, err := m.mkdirAll(fromLog)
		if err != nil {
			return "", "", fmt.Errorf("the workspace the log names, %s: %w", fromLog, err)
		}
		if created {
			return fromLog, "the one the log names; it no longer existed, so it starts empty and is removed at the end", nil
		}
		return fromLog, "the one the log names, kept", nil
	case flagged != "":
		return flagged, "-workspace, kept", nil
	}
	root, err = m.tempDir("akgentic-demo-")
	return root, "temporary, removed at the end; -workspace DIR keeps the files", err
}

// searchFixture writes the offline search results where the agents read
// them: in a fresh temporary folder, or, for a restored team, at the
// path its log names (the path is part of the agents' recorded config).
// What it creates is removed at the end.
func (m *made) searchFixture(fromLog string) (string, error) {
	path := fromLog
	if path == "" {
		dir, err := m.tempDir("akgentic-demo-search-")
		if err != nil {
			return "", err
		}
		path = filepath.Join(dir, "search.json")
	} else if _, err := os.Stat(path); err == nil {
		return path, nil // there: not the demo's to remove
	} else if created, err := m.mkdirAll(filepath.Dir(path)); err != nil {
		return "", err
	} else if !created {
		m.files = append(m.files, path) // into a folder that was there: the file alone goes
	}
	if err := os.WriteFile(path, searchResults, 0o600); err != nil {
		return "", err
	}
	return path, nil
}

// useModel makes the agents a log recreates use this run's model: the
// model their configs name is the run's that wrote the log (offline, a
// server of that process, gone now). Their other settings stay as
// recorded.
func useModel(msgs []message.Message, model llm.ModelConfig) error {
	mc, err := json.Marshal(model)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		s, ok := m.(*message.StartMessage)
		if !ok || s.Config == nil {
			continue
		}
		raw, err := json.Marshal(s.Config)
		if err != nil {
			return err
		}
		var cfg map[string]json.RawMessage
		if json.Unmarshal(raw, &cfg) != nil || cfg["model_cfg"] == nil {
			continue // not an agent's config
		}
		cfg["model_cfg"] = mc
		if raw, err = json.Marshal(cfg); err != nil {
			return err
		}
		s.Config = json.RawMessage(raw)
	}
	return nil
}
