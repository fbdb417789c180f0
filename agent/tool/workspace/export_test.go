package workspace

// Test-only access to unexported parts, for the package's external tests.

// The names of the model tools and of the media command.
const (
	ReadTool     = readTool
	WriteTool    = writeTool
	ListTool     = listTool
	GlobTool     = globTool
	MediaCommand = mediaCommand
)

// ErrUnsupported marks a file format workspace_read cannot show.
var ErrUnsupported = errUnsupported

// Resolve returns the absolute host path name designates in the workspace.
func (f *FS) Resolve(name string) (string, error) { return f.resolve(name) }

// Read returns what workspace_read shows of the file name.
func (f *FS) Read(name string, offset, limit int) (string, error) {
	return f.readText(name, offset, limit)
}

// List returns what workspace_list shows of the directory name.
func (f *FS) List(name string, depth int) (string, error) { return f.listText(name, depth) }

// Builders of test documents.
var (
	BuildPDF     = buildPDF
	BuildPDFDict = func(font string, pages ...string) []byte {
		return buildPDFWith(pdfSpec{flate: true, font: font}, pages...)
	}
	BuildPDFFont = func(toUnicode string, pages ...string) []byte {
		return buildPDFWith(pdfSpec{flate: true, toUnicode: toUnicode}, pages...)
	}
	BuildDOCX     = buildDOCX
	BuildZip      = buildZip
	BuildLyingZip = buildLyingZip
	WordDoc       = wordDoc
)
