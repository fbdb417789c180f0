package message_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/akgentic/akgentic-go/message"
)

// FuzzUnmarshal feeds arbitrary bytes to the codec. No input may panic, the
// hand-written decoder must agree with the encoding/json path (same value,
// or an error from both), and whatever decodes must re-encode (to the bytes the encoding/json path
// writes), decode again to an equal value, and re-encode to the same bytes (decoding normalizes once; after that the
// codec is a fixed point). Seeds: every golden file plus hand-written edge
// cases; crashers found are kept under testdata/fuzz/FuzzUnmarshal.
func FuzzUnmarshal(f *testing.F) {
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		var compact bytes.Buffer
		if json.Compact(&compact, data) == nil {
			f.Add(compact.Bytes()) // the form the event log holds
		}
	}
	for _, s := range []string{
		`{"__model__":"ErrorMessage","content_type":null,"exception_type":"ValueError","exception_value":"x","traceback":null}`,
		`{"__model__":"StartMessage","config":{"a":[1, 2, {"b":"<&>"}]},"parent":null}`,
		`{"__model__":"StartMessage","config":{"__model__":"CancelMessage","reason":"r"}}`,
		`{"__model__":"StateChangedMessage","state":"just a string"}`,
		`{"__model__":"EventMessage","event":{"__model__":"EventMessage","event":{"__model__":"TeamStoppingEvent"}}}`,
		`{"__model__":"SentMessage","message":{"__model__":"SentMessage","message":null}}`,
		`{"__model__":"UserMessage","timestamp":"2024-02-29T23:59:59.999999999+05:30","display_type":"robot"}`,
		`{"__model__":"UserMessage","sender":{"__actor_address__":true,"agent_id":"00000000-0000-0000-0000-000000000000"}}`,
		`{"__model__":"ClosedNotification","message_id":"AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA"}`,
		`{"__model__":"UserMessage","content":"a\n\"\\\/\u00e9\ud83d\ude00\ud800 \u2028<&>","display_type":"human"}`,
		`{"__model__":"SentMessage","recipient":null,"message":{"__model__":"UserMessage","content":"x"},"recipient":null}`,
		`{"__model__":"EventMessage","event":{"__model__":"TeamStoppingEvent"},"Event":null}`,
		`{"__model__":"SentMessage","message":{"__model__":"UserMessage","content":"x",}}`,
		`{"__model__":"SentMessage","message":{"__model__":"UserMessage","content":"x"} }`,
		`{"__model__":"SentMessage","message":{"__model__":"UserMessage","sender":{"__actor_address__":true,"name":"@A",}}}`,
		`{"__model__":"SentMessage","message":{"__model__":"WarningMessage","current_message":{"__model__":"UserMessage","content":01}}}`,
		`{"__model__":"NoSuchType"}`,
		`{"__model__":5}`,
		`[]`,
		`null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v1, err := message.Unmarshal(data)
		ref, referr := message.SlowUnmarshal(data)
		if (err == nil) != (referr == nil) || !reflect.DeepEqual(v1, ref) {
			t.Fatalf("decoder and encoding/json disagree\ninput %q\ngot  %#v (%v)\nwant %#v (%v)", data, v1, err, ref, referr)
		}
		if err != nil {
			if v1 != nil {
				t.Fatalf("Unmarshal returned a value with an error: %#v, %v", v1, err)
			}
			return
		}
		enc1, err := message.Marshal(v1)
		if err != nil {
			t.Fatalf("decoded %T does not re-encode: %v\ninput %q", v1, err, data)
		}
		if ref, err := message.ReferenceMarshal(v1); err != nil || !bytes.Equal(enc1, ref) {
			t.Fatalf("encoder and encoding/json disagree (%v)\n%s\n%s", err, enc1, ref)
		}
		v2, err := message.Unmarshal(enc1)
		if err != nil {
			t.Fatalf("re-encoded value does not decode: %v\ninput %q\nencoded %s", err, data, enc1)
		}
		if !reflect.DeepEqual(v1, v2) {
			t.Fatalf("decode(encode(v)) != v\ninput %q\nv1 %#v\nv2 %#v", data, v1, v2)
		}
		enc2, err := message.Marshal(v2)
		if err != nil || !bytes.Equal(enc1, enc2) {
			t.Fatalf("encoding is not stable (%v)\n%s\n%s", err, enc1, enc2)
		}
	})
}

// A nested value with bad syntax: the fast decoder's error is the one
// encoding/json gives, not a re-encoding failure.
func TestNestedSyntaxErrorText(t *testing.T) {
	for _, in := range []string{
		`{"__model__":"StateChangedMessage","state":01}`,
		`{"__model__":"StartMessage","config":{"a":tru}}`,
		`{"__model__":"EventMessage","event":[1,]}`,
	} {
		_, err := message.Unmarshal([]byte(in))
		_, referr := message.SlowUnmarshal([]byte(in))
		if err == nil || referr == nil || err.Error() != referr.Error() {
			t.Errorf("%s:\nfast %v\nslow %v", in, err, referr)
		}
	}
}
