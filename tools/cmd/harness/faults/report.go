package faults

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"seckill/tools/cmd/harness/testbed"
)

// faultLine is the one printed line of a case.
func faultLine(r CaseResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-16s req %4d  200 %4d  409 %4d  503 %4d  500 %3d  other %3d  orders %3d  oversold %-3s  lost %3d  consistent %-3s  %-6s",
		r.Name, r.Requests, r.Status["200"], r.Status["409"], r.Status["503"], r.Status["500"], r.Status["other"],
		r.Orders, testbed.YesNo(r.Oversold), r.Lost, testbed.YesNo(r.Consistent), r.Verdict)
	if m := measuresText(r); m != "" {
		b.WriteString("  " + m)
	}
	return b.String()
}

// measuresText is the case's figures in one string.
func measuresText(r CaseResult) string {
	parts := make([]string, 0, len(r.Measures))
	for _, m := range r.Measures {
		parts = append(parts, m.Name+" "+m.Value)
	}
	return strings.Join(parts, "; ")
}

// Report is results.json.
type Report struct {
	testbed.RunInfo
	Status int          `json:"status"`
	Cases  []CaseResult `json:"cases"`
}

// exitStatus is 1 when a case failed its expectation, else 2 when one
// could not run, else 0.
func exitStatus(cases []CaseResult) int {
	status := 0
	for _, c := range cases {
		switch c.Verdict {
		case "FAIL":
			return 1
		case "ERROR":
			status = 2
		}
	}
	return status
}

// renderFaultsMarkdown is RESULTS.md.
func renderFaultsMarkdown(rep Report) string {
	var b strings.Builder
	b.WriteString("# Fault suite results\n\n")
	fmt.Fprintf(&b, "Written by `harness faults` (`tools/cmd/harness/faults`); what each case does and\n"+
		"its settings: [README.md](README.md).\n\n")
	settings := strings.Join(rep.Settings, " ")
	if settings == "" {
		settings = "the defaults (tools/faults/README.md)"
	}
	fmt.Fprintf(&b, "- date: %s\n- command: `%s`\n- machine: %s\n- settings: %s\n- elapsed: %.0f s, exit status %d\n\n",
		rep.Date, rep.Command, rep.Machine, settings, rep.ElapsedS, rep.Status)
	b.WriteString("| case | requests | 200 | 409 | 503 | 500 | other | orders | oversold | lost | consistent | verdict | measured |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---|---|\n")
	for _, c := range rep.Cases {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %d | %s | %d | %s | %s | %s |\n",
			c.Name, c.Requests, c.Status["200"], c.Status["409"], c.Status["503"], c.Status["500"], c.Status["other"],
			c.Orders, testbed.YesNo(c.Oversold), c.Lost, testbed.YesNo(c.Consistent), c.Verdict, strings.ReplaceAll(measuresText(c), "|", "/"))
	}
	b.WriteString("\nPrinted lines:\n\n```\n")
	for _, c := range rep.Cases {
		b.WriteString(faultLine(c) + "\n")
	}
	b.WriteString("```\n\n## Cases\n\n")
	for _, c := range rep.Cases {
		fmt.Fprintf(&b, "### %s (%s, %s): %s\n\n", c.Name, c.LockMode, c.OrderMode, c.Verdict)
		fmt.Fprintf(&b, "- fault: %s\n- expectation: %s\n", c.Fault, c.Expectation)
		fmt.Fprintf(&b, "- voucher %d: initial stock %d, stock left %d, orders %d; 200s written %d, reported failed %d, lost %d; orders no 200 announced: %d told failure, %d after a transport error\n",
			c.VoucherID, c.InitialStock, c.StockLeft, c.Orders, c.Written, c.ReportedFailed, c.Lost, c.NoAnnounce, c.Ambiguous)
		fmt.Fprintf(&b, "- metrics (live instances): unique-key rejections %d, lock refused %d, stale fences %d, claimed %d\n",
			c.UniqueKey, c.LockRefused, c.StaleFence, c.Claimed)
		fmt.Fprintf(&b, "- codes: %s\n", codesText(c.Codes))
		if len(c.Marks) > 0 {
			var ms []string
			for _, m := range c.Marks {
				ms = append(ms, fmt.Sprintf("%s %.2f s", m.Name, m.AtS))
			}
			fmt.Fprintf(&b, "- moments (since the load's start): %s\n", strings.Join(ms, ", "))
		}
		for _, n := range c.Notes {
			fmt.Fprintf(&b, "- note: %s\n", n)
		}
		for _, v := range c.Violations {
			fmt.Fprintf(&b, "- violation: %s\n", v)
		}
		for _, f := range c.Failures {
			fmt.Fprintf(&b, "- FAIL: %s\n", f)
		}
		if c.Error != "" {
			fmt.Fprintf(&b, "- ERROR: %s\n", c.Error)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// codesText lists the codes and their counts, sorted.
func codesText(codes map[string]int) string {
	keys := make([]string, 0, len(codes))
	for k := range codes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, codes[k])
	}
	return strings.Join(parts, " ")
}

// readFaultsReport reads a results.json.
func readFaultsReport(path string) (Report, error) {
	var rep Report
	b, err := os.ReadFile(path)
	if err != nil {
		return rep, err
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return rep, fmt.Errorf("%s: %w", path, err)
	}
	return rep, nil
}

// idsText lists up to ten ids.
func idsText(ids []int64) string {
	parts := make([]string, 0, 11)
	for i, id := range ids {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("... (%d in all)", len(ids)))
			break
		}
		parts = append(parts, strconv.FormatInt(id, 10))
	}
	return strings.Join(parts, " ")
}
