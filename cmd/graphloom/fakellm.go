package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/llm/llmtest"
)

func newFakeLLMCmd() *cobra.Command {
	var addr, script string
	cmd := &cobra.Command{
		Use:   "fake-llm [--addr HOST:PORT] [--script FILE]",
		Short: "Serve a scripted OpenAI-compatible API, to try the LLM paths offline",
		Long: `Start the scripted OpenAI-compatible server graphloom's own tests use (llm/llmtest) and
serve until interrupted. It answers /v1/chat/completions from the rules of --script (the first
rule that matches a request answers it; otherwise the script's default, "{}" without one) and
/v1/embeddings with deterministic hashed bag-of-words vectors. Any model name is accepted.

A script is JSON:

  {"default": "{}",
   "rules": [
     {"system_contains": "extract named entities", "user_contains": "Port Keswyn",
      "reply": "{\"named_entities\": [\"Port Keswyn\", \"Tomas Brell\"]}"},
     {"user_matches": "(?i)gull rock", "status": 503, "times": 2},
     {"any": true, "delay": "2s"}]}

Matchers: any, system_contains, user_contains, user_matches (a regular expression). Actions:
reply, status (an HTTP error, with retry_after), delay (a duration), times (serve only the next
n matching requests).`,
		Example: `  graphloom fake-llm --addr 127.0.0.1:8089 --script examples/fake-llm.json &
  export GRAPHLOOM_LLM_BASE_URL=http://127.0.0.1:8089/v1 GRAPHLOOM_LLM_MODEL=fake
  graphloom augment --index harbour.gl --completer llm --plan`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var sc *llmtest.Script
			if script != "" {
				var err error
				if sc, err = llmtest.ReadScript(script); err != nil {
					return err
				}
			}
			srv, err := llmtest.Listen(addr)
			if err != nil {
				return err
			}
			defer srv.Close()
			if sc != nil {
				sc.Apply(srv)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "fake LLM serving %s (any model name); try:\n", srv.URL())
			fmt.Fprintf(w, "  export GRAPHLOOM_LLM_BASE_URL=%s GRAPHLOOM_LLM_MODEL=fake\n", srv.URL())
			<-cmd.Context().Done()
			fmt.Fprintf(w, "fake LLM: served %d requests\n", srv.Count())
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8089", "address to listen on (port 0 picks a free one)")
	cmd.Flags().StringVar(&script, "script", "", "JSON script of rules and a default answer")
	return cmd
}
