package eval

import (
	"strings"
	"unicode"
)

// NormalizeAnswer is SQuAD's normalize_answer, used by HippoRAG's QA evaluation:
// lower-case, remove ASCII punctuation (Python's string.punctuation), replace the
// words a, an and the by a space, and collapse whitespace. Word boundaries follow
// Python's Unicode-aware \b, so "the" next to a non-ASCII dash is still an article.
func NormalizeAnswer(s string) string {
	return strings.Join(strings.Fields(removeArticles(lowerNoPunct(s))), " ")
}

// lowerNoPunct lower-cases s and removes ASCII punctuation (SQuAD's first two steps).
func lowerNoPunct(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && strings.ContainsRune(asciiPunct, r) {
			return -1
		}
		return r
	}, strings.ToLower(s))
}

// normalizeKeepArticles is NormalizeAnswer without removing articles: the form a gold
// answer that is an article ("a") is compared in.
func normalizeKeepArticles(s string) string {
	return strings.Join(strings.Fields(lowerNoPunct(s)), " ")
}

const asciiPunct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// isWordRune is Python's Unicode \w: str.isalnum() (letters and numbers) or underscore.
func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }

// removeArticles replaces every maximal word (\w+ run) equal to a, an or the by a space,
// as re.sub(r'\b(a|an|the)\b', ' ', s).
func removeArticles(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	rs := []rune(s)
	for i := 0; i < len(rs); {
		if !isWordRune(rs[i]) {
			b.WriteRune(rs[i])
			i++
			continue
		}
		j := i
		for j < len(rs) && isWordRune(rs[j]) {
			j++
		}
		switch w := string(rs[i:j]); w {
		case "a", "an", "the":
			b.WriteByte(' ')
		default:
			b.WriteString(w)
		}
		i = j
	}
	return b.String()
}

// AnswerScores are the SQuAD scores of one prediction against its gold answers.
type AnswerScores struct {
	EM        float64 `json:"em"`
	F1        float64 `json:"f1"`
	Precision float64 `json:"precision"` // token precision of the gold answer with the best F1
	Recall    float64 `json:"recall"`    // token recall of the gold answer with the best F1
}

// ExactMatch is 1 if the normalised prediction equals a normalised gold answer, else 0.
//
// A gold answer that normalises to nothing (an article: MoreHopQA has the answer "a")
// is compared lower-cased instead, so that an empty or "The" answer does not match it.
func ExactMatch(pred string, golds []string) float64 {
	for _, g := range golds {
		p, gn, _ := scoringForms(pred, g)
		if gn == p {
			return 1
		}
	}
	return 0
}

// scoringForms returns pred and gold as they are compared: normalised, or both
// normalised but for the articles when gold normalises to nothing (articleGold).
func scoringForms(pred, gold string) (p, g string, articleGold bool) {
	if g = NormalizeAnswer(gold); g != "" {
		return NormalizeAnswer(pred), g, false
	}
	return normalizeKeepArticles(pred), normalizeKeepArticles(gold), true
}

// TokenScores returns SQuAD's token precision, recall and F1 of pred against one gold
// answer, over normalised whitespace tokens with multiplicity. No common token (which
// includes an empty prediction or gold) scores 0, as in HippoRAG's QAF1Score.
func TokenScores(pred, gold string) (precision, recall, f1 float64) {
	p, g, articleGold := scoringForms(pred, gold)
	if articleGold { // no tokens to share: the answer is the article or it is not
		if p == g && g != "" {
			return 1, 1, 1
		}
		return 0, 0, 0
	}
	pt, gt := strings.Fields(p), strings.Fields(g)
	counts := map[string]int{}
	for _, t := range gt {
		counts[t]++
	}
	same := 0
	for _, t := range pt {
		if counts[t] > 0 {
			counts[t]--
			same++
		}
	}
	if same == 0 {
		return 0, 0, 0
	}
	precision = float64(same) / float64(len(pt))
	recall = float64(same) / float64(len(gt))
	return precision, recall, 2 * precision * recall / (precision + recall)
}

// ScoreAnswer returns EM and F1 of pred, each the maximum over golds (HippoRAG's
// aggregation), with the precision and recall of the gold answer giving the best F1.
func ScoreAnswer(pred string, golds []string) AnswerScores {
	s := AnswerScores{EM: ExactMatch(pred, golds)}
	for i, g := range golds {
		p, r, f := TokenScores(pred, g)
		if i == 0 || f > s.F1 {
			s.F1, s.Precision, s.Recall = f, p, r
		}
	}
	return s
}

// ScoreListed scores the answers a retriever lists (retrieve.Result.Answers:
// G-Retriever's "a|b", its training labels joining a question's gold answers so)
// each on its own against the golds, keeping the best EM and the best F1 — the
// reference's Hit: one listed answer among the golds. Scored as one string, SQuAD's
// normalisation would drop the "|" and run the answers together into one word.
func ScoreListed(preds []string, golds []string) AnswerScores {
	var s AnswerScores
	for j, pred := range preds {
		sc := ScoreAnswer(pred, golds)
		if j == 0 || sc.F1 > s.F1 {
			s.F1, s.Precision, s.Recall = sc.F1, sc.Precision, sc.Recall
		}
		s.EM = max(s.EM, sc.EM)
	}
	return s
}

// ContainsAnswer reports whether text holds one of the answers as a whole normalised
// token sequence — DPR's "has answer" test behind top-k retrieval accuracy.
func ContainsAnswer(text string, answers []string) bool {
	t := " " + NormalizeAnswer(text) + " "
	for _, a := range answers {
		if n := NormalizeAnswer(a); n != "" && strings.Contains(t, " "+n+" ") {
			return true
		}
	}
	return false
}
