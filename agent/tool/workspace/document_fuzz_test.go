package workspace

import "testing"

func FuzzPDFText(f *testing.F) {
	f.Add(buildPDF(false, false, "BT /F1 12 Tf 72 712 Td (Hello) Tj ET"))
	f.Add(buildPDF(true, false, "BT /F1 12 Tf [(a) -500 (b)] TJ T* (c) ' ET", "BT (two) Tj ET"))
	f.Add(buildPDF(false, true, "BT (secret) Tj ET"))
	f.Fuzz(func(t *testing.T, data []byte) {
		text, err := pdfText(data, 1<<16)
		if err == nil && len(text) > 1<<16+100 {
			t.Errorf("text of %d bytes past the cap", len(text))
		}
	})
}

func FuzzDOCXText(f *testing.F) {
	f.Add(buildDOCX(`<w:p><w:r><w:t>Hello</w:t><w:tab/><w:t>world</w:t></w:r></w:p>`))
	f.Add(buildDOCX(`<w:tbl><w:tr><w:tc><w:p><w:r><w:t>a</w:t></w:r></w:p></w:tc><w:tc><w:p/></w:tc></w:tr></w:tbl>`))
	f.Add([]byte(wordDoc(`<w:p><w:r><w:t>x</w:t></w:r></w:p>`)))
	f.Fuzz(func(t *testing.T, data []byte) {
		text, err := docxText(data, 1<<16)
		if err == nil && len(text) > 1<<16+100 {
			t.Errorf("text of %d bytes past the cap", len(text))
		}
	})
}

func FuzzParseCMap(f *testing.F) {
	f.Add([]byte("1 begincodespacerange <0000> <FFFF> endcodespacerange 2 beginbfchar <0001> <0048> <0002> (i) endbfchar"), []byte("\x00\x01\x00\x02"))
	f.Add([]byte("1 beginbfrange <10> <20> [<0041> <0042>] endbfrange 1 beginbfrange <0010> <00ff> <D83DDE00> endbfrange % note\n"), []byte("\x10\x11\x00\x20"))
	f.Add([]byte("(a\\(b\\051) <0 1 f> [ /n 3 dict begin 10000000 beginbfchar"), []byte{0xff})
	f.Fuzz(func(t *testing.T, table, raw []byte) {
		m, err := parseCMap("F1", table)
		if err != nil {
			return
		}
		b := capped{max: 1 << 12}
		m.decode(&b, string(raw))
		if b.Len() > 1<<12 {
			t.Errorf("decoded %d bytes past the cap", b.Len())
		}
	})
}
