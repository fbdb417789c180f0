package search_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func writeFile(name, content string) error { return os.WriteFile(name, []byte(content), 0o600) }
