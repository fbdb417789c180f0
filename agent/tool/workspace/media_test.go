package workspace_test

import (
	"encoding/base64"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool/workspace"
)

func text(s string) llm.Part { return llm.TextPart(s) }

func image(mime, content string) llm.Part {
	return llm.ImagePart("data:" + mime + ";base64," + base64.StdEncoding.EncodeToString([]byte(content)))
}

func show(parts []llm.Part) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "image_url" {
			fmt.Fprintf(&b, "[image %.40s] ", p.ImageURL)
		} else {
			fmt.Fprintf(&b, "[text %q] ", p.Text)
		}
	}
	return b.String()
}

func TestExpandMediaRefs(t *testing.T) {
	w := newWS(t, nil)
	w.file("a.png", "PNG-A")
	w.file("b.png", "PNG-B")
	w.file("my shot.png", "PNG-SHOT")
	w.file("photo.JPG", "JPEG")
	w.file("x.jpeg", "JPEG2")
	w.file("anim.gif", "GIF")
	w.file("pic.webp", "WEBP")
	w.file("old.bmp", "BMP")
	w.file("report.pdf", "%PDF")
	w.file("docs/spec.docx", "DOCX")
	w.file("docs/sheet.xlsx", "XLSX")
	w.file("docs/notes.txt", "notes")
	w.file("mixed/z.png", "PNG-Z")
	w.file("mixed/a.pdf", "%PDF")
	w.file("nested/deep/n.png", "PNG-N")
	w.link("a.png", "alias.png")
	w.link(filepath.Join(w.outside, "secret.png"), "stolen.png")

	noImage := func(p string) llm.Part { return text("!!" + p + "[Error: no image found in the workspace]") }
	for _, c := range []struct {
		prompt string
		want   []llm.Part
	}{
		{"no references here", []llm.Part{text("no references here")}},
		{"", []llm.Part{text("")}},
		{"!! alone and !!", []llm.Part{text("!! alone and !!")}},
		{"look at !!a.png please", []llm.Part{text("look at "), image("image/png", "PNG-A"), text(" please")}},
		{"!!a.png", []llm.Part{image("image/png", "PNG-A")}},
		{"see !!\"my shot.png\"", []llm.Part{text("see "), image("image/png", "PNG-SHOT")}},
		{"!!\"my shot.png\" and !!b.png.", []llm.Part{image("image/png", "PNG-SHOT"), text(" and "), noImage("b.png.")}},
		{"all: !!*.png", []llm.Part{text("all: "), image("image/png", "PNG-A"), image("image/png", "PNG-A"), image("image/png", "PNG-B"), image("image/png", "PNG-SHOT")}},
		{"!!**/*.png", []llm.Part{image("image/png", "PNG-A"), image("image/png", "PNG-A"), image("image/png", "PNG-B"),
			image("image/png", "PNG-Z"), image("image/png", "PNG-SHOT"), image("image/png", "PNG-N")}},
		{"!!photo.JPG !!x.jpeg !!anim.gif !!pic.webp !!old.bmp", []llm.Part{
			image("image/jpeg", "JPEG"), text(" "), image("image/jpeg", "JPEG2"), text(" "), image("image/gif", "GIF"),
			text(" "), image("image/webp", "WEBP"), text(" "), image("image/bmp", "BMP")}},
		{"read !!report.pdf", []llm.Part{text("read "), text("!!report.pdf[=> Use workspace_read tool]")}},
		{"!!docs/*", []llm.Part{text("!!sheet.xlsx[=> Use workspace_read tool]"), text("!!spec.docx[=> Use workspace_read tool]")}},
		{"!!docs/notes.txt", []llm.Part{noImage("docs/notes.txt")}},
		{"!!mixed/*", []llm.Part{image("image/png", "PNG-Z")}},
		{"!!nonexistent.png", []llm.Part{noImage("nonexistent.png")}},
		{"!!\"no such file.png\" end", []llm.Part{noImage("no such file.png"), text(" end")}},
		{"a !!a.png b !!report.pdf c !!b.png d", []llm.Part{text("a "), image("image/png", "PNG-A"), text(" b "),
			text("!!report.pdf[=> Use workspace_read tool]"), text(" c "), image("image/png", "PNG-B"), text(" d")}},
		{"x\n!!a.png\ny", []llm.Part{text("x\n"), image("image/png", "PNG-A"), text("\ny")}},
		{"!!alias.png", []llm.Part{image("image/png", "PNG-A")}},
		{"!!stolen.png", []llm.Part{noImage("stolen.png")}},
		{"!!../outside/secret.png", []llm.Part{noImage("../outside/secret.png")}},
		{"!!" + filepath.Join(w.outside, "secret.png"), []llm.Part{noImage(filepath.Join(w.outside, "secret.png"))}},
		{"!![", []llm.Part{noImage("[")}},
	} {
		got := w.expand(c.prompt)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("expand %q\n got %s\nwant %s", c.prompt, show(got), show(c.want))
		}
	}
}

func TestExpandMediaRefsUnreadable(t *testing.T) {
	w := newWS(t, &workspace.Card{MaxFileBytes: 4})
	w.file("big.png", "12345")
	w.file("s1.png", "1234")
	w.file("s2.png", "1234")
	w.file("s3.png", "1234")
	w.file("s4.png", "1234")
	w.file("s5.png", "1234")
	got := w.expand("!!big.png and !!s*.png")
	// The budget of one expansion is four times the file limit.
	want := []llm.Part{text("!!big.png[Error: file unreadable]"), text(" and "),
		image("image/png", "1234"), image("image/png", "1234"), image("image/png", "1234"), image("image/png", "1234"),
		text("!!s5.png[Error: file unreadable]")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %s\nwant %s", show(got), show(want))
	}
}

func TestExpandMediaRefsDispatch(t *testing.T) {
	w := newWS(t, nil)
	w.file("a.png", "A")
	got, err := w.reg.Dispatch(actortest.Context(t), `/_expand_media_refs "see !!a.png"`)
	if err != nil || !strings.Contains(got, `"image_url":"data:image/png;base64,QQ=="`) {
		t.Fatalf("dispatch: %q, %v", got, err)
	}
}

// The card gives its owner the same expansion, typed
// (tool.Capabilities.ExpandMedia), with which the agent expands its
// prompts; a disabled media capability gives neither.
func TestExpandMediaCapability(t *testing.T) {
	w := newWS(t, nil)
	w.file("a.png", "A")
	if w.caps.ExpandMedia == nil {
		t.Fatal("no typed media expansion")
	}
	for _, prompt := range []string{"see !!a.png and !!b.png", "no reference"} {
		got, err := w.caps.ExpandMedia(actortest.Context(t), prompt)
		if want := w.expand(prompt); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ExpandMedia(%q) = %s, %v; the command gives %s", prompt, show(got), err, show(want))
		}
	}
	off := workspace.New()
	off.Media.Disabled = true
	if w := newWS(t, off); w.caps.ExpandMedia != nil {
		t.Error("media disabled, still a typed expansion")
	}
}
