package lockrun

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// renderLockCheck is tools/lock-check/RESULTS.md.
func renderLockCheck(rep Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Lock histories checked for linearizability\n\n")
	fmt.Fprintf(&b, "`%s`, %s, on %s, %.0f s.\n\n", rep.Command, rep.Date, rep.Machine, rep.ElapsedS)
	b.WriteString("Every acquire, release and guarded read-modify-write was recorded with its\n" +
		"invocation and completion time and checked by porcupine against two models\n" +
		"(tools/internal/lockcheck): the lock as a mutex, and the register its holders update.\n" +
		"A violation is a user (a key) whose history no legal order explains; its link\n" +
		"is the shortest violating window of that history, drawn by the checker\n" +
		"(docs/locks.md explains the models and the window).\n\n")
	b.WriteString("Verdicts: **holds** (no violation); **fenced** (the lock had two holders,\n" +
		"the fencing token kept the register linearizable); **lock fails** (two\n" +
		"holders, no lost update seen this time); **fails** (the register lost an\n" +
		"update or took a stale write). Fenced rows exist only for the modes that mint\n" +
		"a token (lua, reentrant, multi, zookeeper); redlock-restart only for redsync\n" +
		"and multi; failover only for simple, owner, lua and reentrant.\n\n")
	b.WriteString("Settings:\n\n")
	for _, s := range rep.Settings {
		fmt.Fprintf(&b, "- %s\n", s)
	}
	b.WriteString("\n| mode | fault | fencing | operations | mutex violations | register violations | verdict | history |\n")
	b.WriteString("|---|---|---|--:|--:|--:|---|---|\n")
	for _, r := range rep.Rows {
		fencing := "off"
		if r.Fencing {
			fencing = "on"
		}
		var links []string
		if r.History != "" {
			links = append(links, fmt.Sprintf("[%s](%s)", pageLabel(r.History), r.History))
		}
		if r.MutexHistory != "" {
			links = append(links, fmt.Sprintf("[%s](%s)", pageLabel(r.MutexHistory), r.MutexHistory))
		}
		verdict := r.Verdict
		if r.Error != "" {
			verdict += ": " + strings.ReplaceAll(r.Error, "|", "/")
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %d | %s | %s |\n", r.Mode, r.Fault, fencing, r.Operations,
			r.MutexViolations, r.RegisterViolations, verdict, strings.Join(links, ", "))
	}
	return b.String()
}

// pageLabel is "mutex" or "register", from a page's file name.
func pageLabel(path string) string {
	if strings.HasSuffix(path, "-register.html") {
		return "register"
	}
	return "mutex"
}

// readLockCheck reads a results.json.
func readLockCheck(path string) (Report, error) {
	var rep Report
	b, err := os.ReadFile(path)
	if err != nil {
		return rep, err
	}
	return rep, json.Unmarshal(b, &rep)
}

// mergeLockCheck puts the rows of a narrowed run into an earlier report:
// a row of the same mode, fault and fencing is replaced, a new one is
// added, and the rows keep the order of the full plan.
func mergeLockCheck(old, run Report) Report {
	key := func(r Row) string { return fmt.Sprintf("%s|%s|%v", r.Mode, r.Fault, r.Fencing) }
	byKey := map[string]Row{}
	for _, r := range old.Rows {
		byKey[key(r)] = r
	}
	for _, r := range run.Rows {
		byKey[key(r)] = r
	}
	var rows []Row
	for _, r := range lcPlan("", "", false) {
		if got, ok := byKey[key(r)]; ok {
			rows = append(rows, got)
			delete(byKey, key(r))
		}
	}
	for _, r := range append(old.Rows, run.Rows...) { // rows outside the plan, in their order
		if got, ok := byKey[key(r)]; ok {
			rows = append(rows, got)
			delete(byKey, key(r))
		}
	}
	out := run
	out.Rows = rows
	out.Command = old.Command + "; then " + run.Command
	out.ElapsedS = old.ElapsedS + run.ElapsedS
	return out
}
