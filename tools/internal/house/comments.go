package house

import (
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// CommentStats sums the sentences of the comments of some files.
type CommentStats struct {
	Sentences int     `json:"sentences"`
	Words     int     `json:"words"`
	Mean      float64 `json:"mean_words"`
	Median    float64 `json:"median_words"`
	Over40    int     `json:"over_40_words"`
}

// PkgComment is the comment measure of one package (folder).
type PkgComment struct {
	Package string `json:"package"`
	CommentStats
}

// Sentences longer than this count as too long.
const maxSentenceWords = 40

// measureComments measures every file's comments, per folder and in total.
func measureComments(gos []*goFile) (CommentStats, []PkgComment) {
	var total []int
	per := map[string][]int{}
	for _, g := range gos {
		for _, s := range fileSentences(g) {
			n := wordCount(s)
			total = append(total, n)
			per[g.dir] = append(per[g.dir], n)
		}
	}
	pkgs := []PkgComment{}
	for dir, counts := range per {
		pkgs = append(pkgs, PkgComment{dir, stats(counts)})
	}
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].Package < pkgs[j].Package })
	return stats(total), pkgs
}

// stats summarises sentence lengths in words.
func stats(counts []int) CommentStats {
	s := CommentStats{Sentences: len(counts)}
	if len(counts) == 0 {
		return s
	}
	sorted := append([]int(nil), counts...)
	sort.Ints(sorted)
	for _, n := range sorted {
		s.Words += n
		if n > maxSentenceWords {
			s.Over40++
		}
	}
	s.Mean = float64(s.Words) / float64(len(sorted))
	mid := len(sorted) / 2
	if len(sorted)%2 == 1 {
		s.Median = float64(sorted[mid])
	} else {
		s.Median = float64(sorted[mid-1]+sorted[mid]) / 2
	}
	return s
}

var (
	// directive matches comment lines meant for tools, not readers.
	directive = regexp.MustCompile(`^//(go:|line |export |extern |nolint|lint:|[a-z0-9]+:[a-z0-9])|^// \+build`)
	// listItem matches a line that opens an item of a list.
	listItem = regexp.MustCompile(`^([-*•+]|\d+[.)])\s`)
	// exampleOutput matches the line that opens an example's output.
	exampleOutput = regexp.MustCompile(`^(Unordered )?[Oo]utput:`)
)

// fileSentences returns the sentences of a file's comments.
func fileSentences(g *goFile) []string {
	var out []string
	for _, cg := range g.ast.Comments {
		var para []string
		flush := func() {
			out = append(out, splitSentences(strings.Join(para, " "))...)
			para = nil
		}
		prevLine := -1
		for _, c := range cg.List {
			pos := g.fset.Position(c.Pos())
			if pos.Line != prevLine+1 || trailing(g.src, pos.Offset) {
				flush()
			}
			prevLine = g.fset.Position(c.End()).Line
			lines, stop := commentLines(c.Text)
			for _, l := range lines {
				switch {
				case l == "":
					flush()
				case listItem.MatchString(l):
					flush()
					para = append(para, l)
				default:
					para = append(para, l)
				}
			}
			if stop {
				break
			}
			if trailing(g.src, pos.Offset) {
				flush()
			}
		}
		flush()
	}
	return out
}

// trailing reports whether code precedes the comment at offset on its line.
func trailing(src []byte, offset int) bool {
	for i := offset - 1; i >= 0 && src[i] != '\n'; i-- {
		if src[i] != ' ' && src[i] != '\t' {
			return true
		}
	}
	return false
}

// commentLines returns the prose lines of one comment, "" for each break.
// It reports too whether example output starts: the rest is not prose.
func commentLines(text string) (lines []string, stop bool) {
	var raw []string
	if body, ok := strings.CutPrefix(text, "//"); ok {
		if directive.MatchString(text) {
			return []string{""}, false
		}
		raw = []string{body}
	} else {
		body := strings.TrimSuffix(strings.TrimPrefix(text, "/*"), "*/")
		raw = strings.Split(body, "\n")
	}
	for _, l := range raw {
		if strings.HasPrefix(l, "\t") { // code
			lines = append(lines, "")
			continue
		}
		l = strings.TrimSpace(l)
		if exampleOutput.MatchString(l) {
			return append(lines, ""), true
		}
		lines = append(lines, l)
	}
	return lines, false
}

// abbreviations end in a dot that does not end a sentence.
var abbreviations = map[string]bool{"e.g.": true, "i.e.": true, "etc.": true, "vs.": true, "cf.": true}

// splitSentences cuts a paragraph into sentences.
func splitSentences(text string) []string {
	var out []string
	rs := []rune(text)
	start := 0
	for i := 0; i < len(rs); i++ {
		if rs[i] != '.' && rs[i] != '?' && rs[i] != '!' {
			continue
		}
		j := i + 1
		for j < len(rs) && strings.ContainsRune(`)"'”’]`, rs[j]) {
			j++
		}
		if j < len(rs) && !unicode.IsSpace(rs[j]) {
			continue
		}
		word := string(rs[lastSpace(rs, i)+1 : i+1])
		word = strings.ToLower(strings.TrimLeft(word, `("'“‘[`))
		if abbreviations[word] {
			continue
		}
		out = appendSentence(out, string(rs[start:j]))
		start = j
		i = j - 1
	}
	return appendSentence(out, string(rs[start:]))
}

func lastSpace(rs []rune, i int) int {
	for ; i >= 0; i-- {
		if unicode.IsSpace(rs[i]) {
			return i
		}
	}
	return -1
}

// appendSentence appends s when it holds a word.
func appendSentence(out []string, s string) []string {
	if s = strings.TrimSpace(s); wordCount(s) > 0 {
		out = append(out, s)
	}
	return out
}

// wordCount counts the space-separated tokens with a letter or a digit.
func wordCount(s string) int {
	n := 0
	for _, w := range strings.Fields(s) {
		if strings.IndexFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0 {
			n++
		}
	}
	return n
}
