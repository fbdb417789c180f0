//go:build !unix

package fleet

import "time"

// processCPU is 0 where getrusage is missing: Report.CPU stays 0.
func processCPU() time.Duration { return 0 }
