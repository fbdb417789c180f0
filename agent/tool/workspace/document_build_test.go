package workspace

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/zlib"
	"fmt"
	"hash/crc32"
)

// buildPDF returns a minimal PDF with one page per content stream in pages
// (PDF content syntax; the font is Helvetica, resource name /F1). With
// flate the streams are compressed; with encrypt the trailer names an
// encryption dictionary whose user password is not empty.
func buildPDF(flate, encrypt bool, pages ...string) []byte {
	return buildPDFWith(pdfSpec{flate: flate, encrypt: encrypt}, pages...)
}

// pdfSpec says how buildPDFWith builds a PDF: compressed streams, an
// encryption dictionary, and the ToUnicode CMap of its font (/F1 is then
// a Type0 font encoded Identity-H; without one, Helvetica).
type pdfSpec struct {
	flate, encrypt bool
	toUnicode      string
	font           string // the font's dictionary, when set
}

// buildPDFWith returns a minimal PDF with one page per content stream in
// pages, built as spec says.
func buildPDFWith(spec pdfSpec, pages ...string) []byte {
	flate, encrypt := spec.flate, spec.encrypt
	stream := func(content string) string {
		data, filter := content, ""
		if flate {
			var b bytes.Buffer
			zw := zlib.NewWriter(&b)
			zw.Write([]byte(content))
			zw.Close()
			data, filter = b.String(), " /Filter /FlateDecode"
		}
		return fmt.Sprintf("<< /Length %d%s >>\nstream\n%s\nendstream", len(data), filter, data)
	}
	var objs []string
	kids := ""
	first := 4 // 1 catalog, 2 pages, 3 font, then page and content pairs
	for i, content := range pages {
		page, obj := first+2*i, first+2*i+1
		kids += fmt.Sprintf("%d 0 R ", page)
		objs = append(objs, fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", obj))
		objs = append(objs, stream(content))
	}
	font := "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
	if spec.font != "" {
		font = spec.font
	}
	if spec.toUnicode != "" {
		font = fmt.Sprintf("<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding /Identity-H /ToUnicode %d 0 R >>", first+2*len(pages))
		objs = append(objs, stream(spec.toUnicode))
	}
	objs = append([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", kids, len(pages)),
		font,
	}, objs...)
	if encrypt {
		objs = append(objs, fmt.Sprintf("<< /Filter /Standard /V 1 /R 2 /O <%064x> /U <%064x> /P -4 >>", 1, 0))
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	trailer := fmt.Sprintf("/Size %d /Root 1 0 R", len(objs)+1)
	if encrypt {
		trailer += fmt.Sprintf(" /Encrypt %d 0 R /ID [<0123456789abcdef> <0123456789abcdef>]", len(objs))
	}
	fmt.Fprintf(&b, "trailer\n<< %s >>\nstartxref\n%d\n%%%%EOF\n", trailer, xref)
	return b.Bytes()
}

// wordDoc wraps body (WordprocessingML) in a word/document.xml.
func wordDoc(body string) string {
	return `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` +
		`<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` +
		body + `</w:body></w:document>`
}

// buildZip returns a zip archive of the named files, deflated.
func buildZip(files ...string) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for i := 0; i+1 < len(files); i += 2 {
		w, err := zw.Create(files[i])
		if err != nil {
			panic(err)
		}
		w.Write([]byte(files[i+1]))
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// buildLyingZip returns a zip archive of one deflated file whose header
// says it is 10 bytes long uncompressed.
func buildLyingZip(name, content string) []byte {
	var data bytes.Buffer
	fw, _ := flate.NewWriter(&data, flate.BestCompression)
	fw.Write([]byte(content))
	fw.Close()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: name, Method: zip.Deflate,
		CRC32: crc32.ChecksumIEEE([]byte(content)), CompressedSize64: uint64(data.Len()), UncompressedSize64: 10})
	if err != nil {
		panic(err)
	}
	w.Write(data.Bytes())
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// buildDOCX returns a DOCX holding body as its document.
func buildDOCX(body string) []byte {
	return buildZip("[Content_Types].xml", `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`,
		"word/document.xml", wordDoc(body))
}
