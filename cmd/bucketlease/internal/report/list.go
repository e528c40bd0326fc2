package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/term"
)

// List is list's report; --json writes it as it is.
type List struct {
	URL string `json:"url"`
	// Keys is how many keys were looked at; Truncated, that the listing
	// stopped at --max-keys.
	Keys      int      `json:"keys"`
	Truncated bool     `json:"truncated"`
	Leases    []Listed `json:"leases"`
	Failed    int      `json:"failed"`
	Now       string   `json:"now"`
}

// Listed is one lease: its prefix under the listed URL, and show
// --json's fields for it (url is the lease's own, for show and break), or
// the error reading it.
type Listed struct {
	Prefix string `json:"prefix"`
	ShowJSON
	Error string `json:"error,omitempty"`
}

// PrintList prints list's report on url for people: one lease a line.
func PrintList(w io.Writer, url string, res List) {
	if len(res.Leases) == 0 {
		fmt.Fprintf(w, "No lease under %s (%d keys looked at).\n", url, res.Keys)
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "URL\tSTATE\tHOLDER\tRENEWED\tVERSION")
		for _, l := range res.Leases {
			if l.Error != "" {
				fmt.Fprintf(tw, "%s\terror\t-\t-\t%s\n", term.ShellQuote(l.URL), term.OneLine(l.Error))
				continue
			}
			holder, renewed := l.Holder, ""
			if holder == "" {
				holder = "-"
			}
			switch {
			case l.RenewedAt != "" && l.RenewedAgoS < 0:
				renewed = fmt.Sprintf("in %.0fs (stamped in the future)", -l.RenewedAgoS)
			case l.RenewedAt != "":
				renewed = fmt.Sprintf("%.0fs ago", l.RenewedAgoS)
			default:
				renewed = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", term.ShellQuote(l.URL), l.State, HolderName(holder), renewed, l.Version)
		}
		tw.Flush()
	}
	if res.Truncated {
		fmt.Fprintf(w, "Stopped after %d keys (--max-keys): there may be more leases further on; list a longer prefix, or raise --max-keys.\n", res.Keys)
	}
}
