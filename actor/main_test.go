package actor_test

import (
	"log/slog"
	"testing"

	"go.uber.org/goleak"
)

var discard = slog.New(slog.DiscardHandler)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
