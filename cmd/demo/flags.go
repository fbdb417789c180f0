package main

import (
	"errors"
	"fmt"
)

// check refuses settings that cannot work together, before anything
// runs or is printed: one line naming the flags and why.
func (o *options) check() error {
	conflicts := []struct {
		on   bool
		flag string
		why  string
	}{
		{o.restoreFile != "", "-restore", "-cluster creates a new team on its own embedded NATS server and cannot resume a log file (run -restore without -cluster)"},
		{o.interactive, "-i", "-cluster plays the recorded task on its own, answering the reviewer itself (run -i without -cluster to talk to the team)"},
		{o.logFile != "", "-log", "-cluster keeps the team's records in its JetStream store, removed at the end (run -log without -cluster)"},
	}
	if o.view {
		switch {
		case o.web.addr == "":
			return errors.New("-view needs -web ADDR: the log is shown in the browser")
		case o.interactive || o.logFile != "" || o.cluster:
			return errors.New("-view cannot be combined with -i, -log or -cluster: it shows a log read-only, and nothing runs")
		}
	}
	if o.cluster {
		for _, c := range conflicts {
			if c.on {
				return fmt.Errorf("%s and -cluster cannot be combined: %s", c.flag, c.why)
			}
		}
	}
	if o.logFile != "" && o.restoreFile != "" {
		return errors.New("-log and -restore cannot be combined: a restored team goes on writing the log it was restored from")
	}
	if o.timeout < 0 {
		return fmt.Errorf("-timeout %s: want a duration of 0 (none) or more", o.timeout)
	}
	if o.web.addr != "" {
		if _, _, _, err := webAddr(o.web.addr); err != nil {
			return err
		}
	}
	return nil
}
