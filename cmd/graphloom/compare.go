package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/graphloom/graphloom/eval"
	"github.com/graphloom/graphloom/retrieve"
)

// Win is a question with several gold passages that one retriever finds completely
// in its top k and another does not.
type Win struct {
	ID       string   `json:"id"`
	Question string   `json:"question"`
	Gold     []string `json:"gold_titles"`
	Found    int      `json:"found"`       // gold passages in the winner's top k (all of them)
	Other    int      `json:"other_found"` // gold passages in the other retriever's top k
	Top      []string `json:"top_titles"`  // the winner's top k titles
}

// goldFound counts the gold passages among passages: matched on title and text, or on
// the title alone when the gold passage has no text.
func goldFound(gold []eval.GoldPassage, passages []retrieve.Passage) int {
	n := 0
	for _, g := range gold {
		for _, p := range passages {
			if p.Title == g.Title && (g.Text == "" || strings.TrimSpace(p.Text) == strings.TrimSpace(g.Text)) {
				n++
				break
			}
		}
	}
	return n
}

// crossChunkWins runs two retrievers over the dataset's questions that need two or more
// gold passages and returns those whose gold passages all appear in winner's top k but
// not all in other's.
func crossChunkWins(ctx context.Context, winner, other retrieve.Retriever, ds *eval.Dataset, k int) ([]Win, error) {
	var qs []retrieve.Question
	gold := map[string][]eval.GoldPassage{}
	for _, ex := range ds.Examples {
		if len(ex.Gold) < 2 {
			continue
		}
		qs = append(qs, retrieve.Question{ID: ex.ID, Question: ex.Question})
		gold[ex.ID] = ex.Gold
	}
	rc := retrieve.RunConfig{TopK: k}
	a, err := retrieve.Run(ctx, winner, nil, qs, rc, nil)
	if err != nil {
		return nil, err
	}
	b, err := retrieve.Run(ctx, other, nil, qs, rc, nil)
	if err != nil {
		return nil, err
	}
	var wins []Win
	for i, q := range qs {
		g := gold[q.ID]
		fa, fb := goldFound(g, a[i].Passages), goldFound(g, b[i].Passages)
		if fa < len(g) || fb == len(g) {
			continue
		}
		w := Win{ID: q.ID, Question: q.Question, Found: fa, Other: fb}
		for _, p := range g {
			w.Gold = append(w.Gold, p.Title)
		}
		for _, p := range a[i].Passages {
			w.Top = append(w.Top, p.Title)
		}
		wins = append(wins, w)
	}
	return wins, nil
}

func printWins(w io.Writer, wins []Win, winner, other string, k, questions int) {
	fmt.Fprintf(w, "%d of %d multi-passage questions: all gold passages in %s's top %d, not in %s's\n", len(wins), questions, winner, k, other)
	for _, x := range wins {
		fmt.Fprintf(w, "  %s: %s\n    gold: %s (%s: %d of %d, %s: %d of %d)\n    %s top %d: %s\n",
			x.ID, x.Question, strings.Join(x.Gold, " + "), winner, x.Found, len(x.Gold), other, x.Other, len(x.Gold),
			winner, k, strings.Join(x.Top, " | "))
	}
}
