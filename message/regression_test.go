package message_test

import (
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/message"
)

// Marshal of a nil message pointer is an error naming the type, for every
// type (some panicked before).
func TestMarshalNilPointers(t *testing.T) {
	for _, v := range []any{(*message.SentMessage)(nil), (*message.StartMessage)(nil), (*message.EventMessage)(nil),
		(*message.UserMessage)(nil), (*message.ErrorMessage)(nil), (*message.StateChangedMessage)(nil), (*message.ProcessedMessage)(nil)} {
		_, err := message.Marshal(v)
		if err == nil || !strings.Contains(err.Error(), "nil") {
			t.Errorf("Marshal(%T(nil)) = %v, want an error", v, err)
		}
	}
}
