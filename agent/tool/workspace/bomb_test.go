package workspace_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent/tool/workspace"
)

// allocCeiling is the most a refused document bomb may allocate.
const allocCeiling = 64 << 20

// allocated returns the bytes f allocated (the whole process's, so a
// margin is needed for what runs beside it).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// cmap wraps the body of a ToUnicode CMap in its usual preamble and end.
func cmap(body string) string {
	return "/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n" +
		"1 begincodespacerange <0000> <FFFF> endcodespacerange\n" + body +
		"\nendcmap CMapName currentdict /CMap defineresource pop end end\n"
}

func TestReadPDFToUnicodeBombRefused(t *testing.T) {
	for name, c := range map[string]struct{ toUnicode, want string }{
		"bfchar count": {cmap("10000000 beginbfchar endbfchar"),
			"its font F1 has a ToUnicode table with more than 100000 entries"},
		"bfrange count": {cmap("10000000 beginbfrange endbfrange"),
			"its font F1 has a ToUnicode table with more than 100000 entries"},
		"entries": {cmap("200000 beginbfchar\n" + strings.Repeat("<0041> <0042>\n", 200_000) + "endbfchar"),
			"its font F1 has a ToUnicode table with more than 100000 entries"},
		"bytes": {cmap(strings.Repeat(" ", 64<<20)),
			"its font F1 has a ToUnicode table larger than 4194304 bytes"},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWS(t, nil)
			w.file("bomb.pdf", string(workspace.BuildPDFFont(c.toUnicode, "BT /F1 12 Tf <00410042> Tj ET")))
			n := allocated(func() {
				w.retry(workspace.ReadTool, `{"path":"bomb.pdf"}`, "Cannot extract the text of bomb.pdf: "+c.want)
			})
			if n > allocCeiling {
				t.Errorf("reading the bomb allocated %d MiB, more than %d MiB", n>>20, allocCeiling>>20)
			}
		})
	}
}

func TestReadPDFDifferencesBombRefused(t *testing.T) {
	w := newWS(t, nil)
	diffs := "0" + strings.Repeat(" /A", 200_000)
	w.file("bomb.pdf", string(workspace.BuildPDFDict("<< /Type /Font /Subtype /Type1 /BaseFont /X /Encoding << /Differences ["+diffs+"] >> >>",
		"BT /F1 12 Tf ("+strings.Repeat("A", 100_000)+") Tj ET")))
	w.retry(workspace.ReadTool, `{"path":"bomb.pdf"}`, "Cannot extract the text of bomb.pdf: its font F1 has an encoding with 200001 Differences entries, more than 1024")
}

func TestReadPDFToUnicode(t *testing.T) {
	w := newWS(t, nil)
	toUnicode := cmap("2 beginbfchar <0001> <0048> <0002> <00690021> endbfchar\n" +
		"2 beginbfrange <0010> <0012> <0061> <0020> <0021> [<0058> <0059>] endbfrange")
	w.file("font.pdf", string(workspace.BuildPDFFont(toUnicode, "BT /F1 12 Tf <00010002> Tj ( ) Tj <001000110012> Tj <00200021> Tj <0099> Tj ET")))
	if got, want := w.ok(workspace.ReadTool, `{"path":"font.pdf"}`), "1     --- page 1 ---\n2     Hi!\ufffdabcXY\ufffd"; got != want {
		t.Errorf("read = %q, want %q", got, want)
	}
}

func TestReadDOCXDepthBombRefused(t *testing.T) {
	w := newWS(t, nil)
	depth := 1_000_000
	w.file("deep.docx", string(workspace.BuildDOCX(strings.Repeat("<w:r>", depth)+strings.Repeat("</w:r>", depth))))
	var err error
	n := allocated(func() {
		err = w.retry(workspace.ReadTool, `{"path":"deep.docx"}`, "Cannot extract the text of deep.docx: its word/document.xml nests elements deeper than 256 levels")
	})
	if err == nil {
		t.Fatal("no error")
	}
	if n > allocCeiling {
		t.Errorf("reading the bomb allocated %d MiB, more than %d MiB", n>>20, allocCeiling>>20)
	}
}
