// Package workspace is the WorkspaceTool card: files under a per-team
// directory that agents read, write, list and glob through model tools, and
// the media references ("!!shot.png") that an agent expands into image
// parts before it calls its model.
//
// # Workspace directory
//
// A card attached to an agent opens (creating it when missing) the directory
// <root>/<workspace id>, where root is [Card.Root], else the environment
// variable AKGENTIC_WORKSPACES_ROOT, else ./workspaces, and the workspace id
// is [Card.WorkspaceID], else the agent's team id. Every agent of a team thus
// shares one workspace.
//
// # Capabilities
//
//   - Read: the model tool workspace_read(path, offset=1, limit=2000). Text
//     comes back with each line prefixed by its number, left-aligned in a
//     6-wide column, and, when lines remain past the window, a last line
//     "[... truncated: <total> lines total, showing <a>-<b> ...]". An empty
//     file reads as "(empty file)". PDF and DOCX documents are read as
//     their text (see Documents below). Other documents (xlsx, xls, pptx,
//     msg, epub), images and other binary files (a NUL byte in the first
//     8 KiB) are refused with a retry error saying the format is unsupported.
//   - Write: workspace_write(path, content) creates the parent directories,
//     keeps the line-ending style (CRLF or LF) of the text file it
//     overwrites, and answers "Written: <path>".
//   - List: workspace_list(path="", depth=1). Depth 1 lists the directory:
//     directories first ("name/"), then files ("name (N bytes)"), each
//     group sorted by name; an empty directory is "Empty directory.". Depth
//     0 (unlimited) or above 1 draws an ASCII tree. At most 1000 entries are
//     shown.
//   - Glob: workspace_glob(pattern) lists the files matching pattern,
//     relative to the workspace root with "/" separators, sorted, at most
//     1000 of them.
//   - Media: the command _expand_media_refs(prompt), never a model tool,
//     and the same expansion for the owning agent's prompts
//     ([tool.Capabilities.ExpandMedia]); see [FS.ExpandMediaRefs].
//
// Read, write, list and glob are model tools by default and may also be
// exposed as commands ([tool.Capability.Expose]); media is a command only.
// None of them touches the owning agent's actor context, so an agent may
// run them concurrently.
//
// # Documents
//
// workspace_read extracts the text of a .pdf or .docx file and shows it
// numbered and windowed like a text file; a document without text reads
// as "(no text in document)".
//
// A PDF (read with github.com/ledongthuc/pdf, pure Go) shows each page
// after a line "--- page N ---", pages separated by a blank line. A text
// object or a move to a new line starts a new line, and a wide gap in a
// TJ array becomes a space; the layout of columns and tables is not
// reconstructed. A page whose content cannot be read, or decompresses to
// more than 8 MiB, becomes a line "[page N: no text extracted: <reason>]"
// and the other pages are read. A file that is not a readable PDF or is
// encrypted with a password (a PDF encrypted with an empty user password
// is read) is a retry error "Cannot extract the text of <path>: <reason>".
//
// A DOCX shows the body of word/document.xml (headers, footers, notes
// and comments are left out; so is deleted text): one line per
// paragraph, tabs (w:tab) and line breaks (w:br, w:cr) kept. A table row
// is one line whose cells are separated by " | ", the paragraphs of a
// cell joined by spaces. word/document.xml may be at most four times
// [FS.MaxFileBytes] uncompressed: a larger declared size is refused
// before it is read, and reading stops at the limit whatever the zip
// header said (a zip bomb is a retry error, not an allocation).
//
// The extracted text of a document is cut at [FS.MaxFileBytes] bytes,
// with a last line "[... text cut at N bytes ...]", and a PDF's
// decompressed content may total at most four times that. The errors of
// an extraction match the same unsupported-format kind as a refused
// format.
//
// A document crafted to cost more than its size (a bomb) is refused as a
// whole, in milliseconds, with a retry error naming the limit it passed:
// a font's ToUnicode table (read by this package's own parser, not the
// library's) of more than 4 MiB decompressed or more than 100,000 entries
// (read or declared), a font encoding of more than 1,024 Differences
// entries, font tables and page content of more than four
// times [FS.MaxFileBytes] in all, a word/document.xml nesting elements
// deeper than 256 levels, and an extraction taking longer than 10 s.
//
// # Glob patterns
//
// A pattern is a relative, "/"-separated path whose segments use
// [path.Match] syntax: "*" (any run of characters except "/", dot files
// included), "?", "[a-z]" classes and "\" escapes. A segment that is
// exactly "**" matches any number of directories, none included
// ("**/*.png" finds every png, "docs/**/x.md" finds docs/x.md and
// docs/a/b/x.md); as the last segment it matches every file below. Only
// files match (symbolic links count when they lead to a file inside the
// workspace); "**" does not descend into symbolically linked directories,
// so links cannot make a walk loop.
//
// # Containment
//
// Every path is resolved inside the workspace: an absolute path, ".." that
// leaves it, or a symbolic link (anywhere in the path, the last element
// included) that leads outside it is refused with a retry error
// "path escapes workspace root: <path>" that also matches [ErrEscape]. A
// path that does not exist yet is checked through its deepest existing
// ancestor. The workspace resolves every path by hand, so its errors name
// the path; the file operations then run through an [os.Root] on the
// resolved, link-free path, so a link swapped in between the check and the
// use still cannot lead outside (the kernel-level check of os.Root). Hard
// links and bind mounts are not detected.
//
// # Limits
//
// No file larger than [FS.MaxFileBytes] (16 MiB, unless the card's
// MaxFileBytes says otherwise) is read or written: a larger read or write is
// a retry error matching [ErrTooLarge], and a larger image in a media
// reference is reported as unreadable. One media expansion reads at most
// four times that limit of images in total; images past that budget are
// reported as unreadable too.
//
// # Reading the files from code
//
// The agents' files are plain files in [Card.Dir]; [Open] gives the same
// contained access the tools have ([FS.ReadFile], [FS.WriteFile],
// [FS.Glob]).
package workspace
