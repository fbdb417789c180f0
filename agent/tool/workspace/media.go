package workspace

import (
	"encoding/base64"
	"path"
	"regexp"

	"github.com/akgentic/akgentic-go/agent/llm"
)

// mediaRef matches a media reference: !!"<pattern with spaces>" or
// !!<non-space run>.
var mediaRef = regexp.MustCompile(`!!"([^"]+)"|!!(\S+)`)

// Markers of media expansion, after "!!<name>".
const (
	markUnreadable = "[Error: file unreadable]"
	markDocument   = "[=> Use workspace_read tool]"
	markNoImage    = "[Error: no image found in the workspace]"
)

// ExpandMediaRefs expands the media references of prompt into ordered
// parts. A reference is !!"<pattern with spaces>" or !!<pattern> (up to the
// next white space); its pattern is globbed in the workspace (files only,
// sorted by path). Then:
//
//   - when images (png, jpg, jpeg, gif, webp, bmp) match, each becomes an
//     image part holding a data URL (data:<mime>;base64,...), other matches
//     are ignored, and an image that cannot be read (or exceeds the size
//     limit or the expansion's budget) becomes the text
//     "!!<basename>[Error: file unreadable]";
//   - else each matching document (pdf, docx, xlsx, xls, pptx, msg, epub)
//     becomes the text "!!<basename>[=> Use workspace_read tool]";
//   - else the reference becomes "!!<pattern>[Error: no image found in the
//     workspace]" (so does a pattern that leads outside the workspace).
//
// The text around references is kept verbatim as text parts (empty runs
// are left out). A prompt with no reference comes back as exactly one text
// part equal to it, which is how a caller tells that nothing changed.
func (f *FS) ExpandMediaRefs(prompt string) []llm.Part {
	refs := mediaRef.FindAllStringSubmatchIndex(prompt, -1)
	if len(refs) == 0 {
		return []llm.Part{llm.TextPart(prompt)}
	}
	budget := 4 * f.limit()
	var parts []llm.Part
	last := 0
	for _, m := range refs {
		if m[0] > last {
			parts = append(parts, llm.TextPart(prompt[last:m[0]]))
		}
		var pattern string
		if m[2] >= 0 {
			pattern = prompt[m[2]:m[3]]
		} else {
			pattern = prompt[m[4]:m[5]]
		}
		parts = append(parts, f.expand(pattern, &budget)...)
		last = m[1]
	}
	if last < len(prompt) {
		parts = append(parts, llm.TextPart(prompt[last:]))
	}
	return parts
}

// expand returns the parts of one reference; budget is what images may
// still take.
func (f *FS) expand(pattern string, budget *int64) []llm.Part {
	ms, _ := f.glob(pattern) // an invalid or escaping pattern finds nothing
	var images, docs []match
	for _, m := range ms {
		e := ext(m.shown)
		switch {
		case imageTypes[e] != "":
			images = append(images, m)
		case documentTypes[e]:
			docs = append(docs, m)
		}
	}
	var parts []llm.Part
	switch {
	case len(images) > 0:
		for _, m := range images {
			data, err := f.ReadFile(m.rel)
			if err != nil || int64(len(data)) > *budget {
				parts = append(parts, llm.TextPart("!!"+path.Base(m.shown)+markUnreadable))
				continue
			}
			*budget -= int64(len(data))
			url := "data:" + imageTypes[ext(m.shown)] + ";base64," + base64.StdEncoding.EncodeToString(data)
			parts = append(parts, llm.ImagePart(url))
		}
	case len(docs) > 0:
		for _, m := range docs {
			parts = append(parts, llm.TextPart("!!"+path.Base(m.shown)+markDocument))
		}
	default:
		parts = append(parts, llm.TextPart("!!"+pattern+markNoImage))
	}
	return parts
}
