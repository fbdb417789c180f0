package browsertest

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// $CHROMIUM names the browser, whatever is on the PATH.
func TestChromiumHonoursTheEnvironment(t *testing.T) {
	t.Setenv("CHROMIUM", "/opt/my-chromium")
	if got := Chromium(); got != "/opt/my-chromium" {
		t.Fatalf("Chromium() = %q with CHROMIUM set", got)
	}
}

// A string becomes a JavaScript literal, quotes and newlines escaped.
func TestJSQuotesAString(t *testing.T) {
	if got, want := JS("a \"b\"\n</script>"), `"a \"b\"\n\u003c/script\u003e"`; got != want {
		t.Fatalf("JS = %s, want %s", got, want)
	}
}
