package workspace_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent/tool/workspace"
)

func TestReadPDF(t *testing.T) {
	w := newWS(t, nil)
	w.file("plain.pdf", string(workspace.BuildPDF(false, false, "BT /F1 12 Tf 72 712 Td (Hello) Tj ET")))
	w.file("two.PDF", string(workspace.BuildPDF(true, false,
		"BT /F1 12 Tf 72 712 Td [(Hel) -20 (lo) -500 (world)] TJ 0 -14 Td (second line) Tj T* (third) Tj ET",
		"BT /F1 12 Tf (page two) Tj ET")))
	for _, c := range []struct{ args, want string }{
		{`{"path":"plain.pdf"}`, "1     --- page 1 ---\n2     Hello"},
		{`{"path":"two.PDF"}`, "1     --- page 1 ---\n2     Hello world\n3     second line\n4     third\n5     \n6     --- page 2 ---\n7     page two"},
		{`{"path":"two.PDF","offset":6,"limit":1}`, "6     --- page 2 ---\n[... truncated: 7 lines total, showing 6-6 ...]"},
	} {
		if got := w.ok(workspace.ReadTool, c.args); got != c.want {
			t.Errorf("read %s = %q\nwant %q", c.args, got, c.want)
		}
	}
}

func TestReadPDFRefused(t *testing.T) {
	w := newWS(t, nil)
	good := workspace.BuildPDF(false, false, "BT (Hello) Tj ET")
	w.file("locked.pdf", string(workspace.BuildPDF(false, true, "BT (secret) Tj ET")))
	w.file("cut.pdf", string(good[:len(good)/2]))
	w.file("notpdf.pdf", "just text\n")
	w.file("empty.pdf", "")
	for name, want := range map[string]string{
		"locked.pdf": "Cannot extract the text of locked.pdf: it is encrypted with a password",
		"cut.pdf":    "Cannot extract the text of cut.pdf: it is not a readable PDF",
		"notpdf.pdf": "Cannot extract the text of notpdf.pdf: it is not a readable PDF",
		"empty.pdf":  "Cannot extract the text of empty.pdf: it is not a readable PDF",
	} {
		if err := w.retry(workspace.ReadTool, jsonArgs("path", name), want); !errors.Is(err, workspace.ErrUnsupported) {
			t.Errorf("%s: %v does not match ErrUnsupported", name, err)
		}
	}
	// A page whose content stream is broken is reported; the others are read.
	broken := strings.Replace(string(workspace.BuildPDF(true, false, "BT (lost) Tj ET", "BT (kept) Tj ET")), "FlateDecode", "NoSuchDecode", 1)
	w.file("broken.pdf", broken)
	got := w.ok(workspace.ReadTool, `{"path":"broken.pdf"}`)
	if !strings.Contains(got, "[page 1: no text extracted: unknown filter NoSuchDecode]") || !strings.Contains(got, "kept") {
		t.Errorf("broken page: %q", got)
	}
}

func TestReadPDFCapped(t *testing.T) {
	w := newWS(t, &workspace.Card{MaxFileBytes: 4 << 10})
	w.file("long.pdf", string(workspace.BuildPDF(true, false, "BT ("+strings.Repeat("x", 8<<10)+") Tj ET")))
	got := w.ok(workspace.ReadTool, `{"path":"long.pdf"}`)
	if !strings.HasSuffix(got, "\n3     [... text cut at 4096 bytes ...]") || len(got) > 4200 {
		t.Errorf("capped: %d bytes ending %q", len(got), got[max(0, len(got)-80):])
	}
}

func TestReadDOCX(t *testing.T) {
	w := newWS(t, nil)
	w.file("a.docx", string(workspace.BuildDOCX(
		`<w:p><w:pPr><w:tabs><w:tab w:val="left" w:pos="100"/></w:tabs></w:pPr>`+
			`<w:r><w:t>Hello</w:t><w:tab/><w:t xml:space="preserve">world </w:t><w:br/><w:t>next</w:t></w:r></w:p>`+
			`<w:p/>`+
			`<w:tbl><w:tr><w:tc><w:p><w:r><w:t>a</w:t></w:r></w:p><w:p><w:r><w:t>a2</w:t></w:r></w:p></w:tc>`+
			`<w:tc><w:p/></w:tc><w:tc><w:p><w:r><w:t>c</w:t></w:r></w:p></w:tc></w:tr>`+
			`<w:tr><w:tc><w:p><w:r><w:t>d</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>e</w:t></w:r></w:p></w:tc></w:tr></w:tbl>`+
			`<w:p><w:r><w:t>after &amp; é</w:t><w:delText>deleted</w:delText><w:instrText>PAGE</w:instrText></w:r></w:p>`)))
	w.file("blank.docx", string(workspace.BuildDOCX(`<w:p/>`)))
	for _, c := range []struct{ args, want string }{
		{`{"path":"a.docx"}`, "1     Hello\tworld \n2     next\n3     \n4     a a2 |  | c\n5     d | e\n6     after & é"},
		{`{"path":"a.docx","offset":4,"limit":1}`, "4     a a2 |  | c\n[... truncated: 6 lines total, showing 4-4 ...]"},
		{`{"path":"blank.docx"}`, "(no text in document)"},
	} {
		if got := w.ok(workspace.ReadTool, c.args); got != c.want {
			t.Errorf("read %s = %q\nwant %q", c.args, got, c.want)
		}
	}
}

func TestReadDOCXRefused(t *testing.T) {
	w := newWS(t, &workspace.Card{MaxFileBytes: 2 << 10})
	// A zip bomb: 1 MiB of zeros deflates to about 1 KiB, far past 8 KiB.
	w.file("bomb.docx", string(workspace.BuildZip("word/document.xml", workspace.WordDoc(strings.Repeat("0", 1<<20)))))
	w.file("liar.docx", string(workspace.BuildLyingZip("word/document.xml", workspace.WordDoc(strings.Repeat("0", 1<<20)))))
	w.file("nodoc.docx", string(workspace.BuildZip("word/other.xml", "x")))
	w.file("bad.docx", string(workspace.BuildZip("word/document.xml", "<w:document><w:p>")))
	w.file("old.docx", "\xd0\xcf\x11\xe0 an OLE file")
	for name, want := range map[string]string{
		"bomb.docx":  "Cannot extract the text of bomb.docx: its word/document.xml is larger than 8192 bytes uncompressed",
		"liar.docx":  "Cannot extract the text of liar.docx: its word/document.xml is ",
		"nodoc.docx": "Cannot extract the text of nodoc.docx: it is not a DOCX file: it has no word/document.xml",
		"bad.docx":   "Cannot extract the text of bad.docx: its word/document.xml is malformed",
		"old.docx":   "Cannot extract the text of old.docx: it is not a DOCX (zip) file",
	} {
		if err := w.retry(workspace.ReadTool, jsonArgs("path", name), want); !errors.Is(err, workspace.ErrUnsupported) {
			t.Errorf("%s: %v does not match ErrUnsupported", name, err)
		}
	}
}
